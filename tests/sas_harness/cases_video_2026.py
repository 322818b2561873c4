"""The tiny test cases of Kandinsky 5 (video and image), CogVideoX (T2V, I2V, Inpaint) and MiniMax H3
(families ComfyUI added after 0.3.75; a host without a case's class skips it, naming the class): each
family's tiny random-weight model, and the routing of one step derived from its structure (see
families.py). Added to families.CASES. SeedVR2 has no case: it never opens (its attention cannot reach
the scope), which tests/test_families_video_2026.py checks."""
from __future__ import annotations

import dataclasses

import torch

from sage_attention_scope.patches import Reason
from .families import SAGE, TEXT, Case, RealWidths
from .models import text_conditioning

# -- Kandinsky 5 ----------------------------------------------------------------------------------
# Shaped like model_detection's Kandinsky 5 config, shrunk: Video Lite's head size 64 (axes 16 + 24 +
# 24; model_dim 128: 2 heads), Image Lite's 128 (axes 32 + 48 + 48, no RoPE scaling; model_dim 256: 2
# heads). visual_embed_dim is the patch's input width: the video's 16 latent + 16 image + 1 mask
# channels (concat_cond) x 1 x 2 x 2 = 132; the image model takes its 16 latent channels alone (64).
# Two text and two visual blocks; the text encoders' widths (3584 Qwen2.5-VL, 768 CLIP-L) shrunk to 32.
TINY_KANDINSKY5 = dict(image_model="kandinsky5", model_dim=128, axes_dims=(16, 24, 24), time_dim=32, ff_dim=256,
                       visual_embed_dim=132, num_text_blocks=2, num_visual_blocks=2, in_text_dim=32, in_text_dim2=32)
TINY_KANDINSKY5_IMAGE = dict(TINY_KANDINSKY5, model_dim=256, axes_dims=(32, 48, 48), rope_scale_factor=(1.0, 1.0, 1.0),
                             visual_embed_dim=64)
K5_LATENT, K5_IMAGE_LATENT = (2, 8, 8), (8, 8)
K5_TOKENS = 2 * 4 * 4      # frames x h x w after the 1 x 2 x 2 patch
K5_IMAGE_TOKENS = 4 * 4


def kandinsky5_conditioning(**extra):
    """The Qwen prompt (TEXT tokens) with the CLIP-L pooled output the model adds to its time embedding."""
    return text_conditioning(pooled_output=torch.zeros(1, 32), **extra)


def kandinsky5_table(config):
    """One step: each text block's self-attention sees the TEXT prompt tokens alone (short); each visual
    block's self-attention sees the image / video tokens (the threshold), and its cross-attention has
    those queries against the TEXT prompt keys (short)."""
    return {SAGE: config["num_visual_blocks"],
            Reason.TOO_SHORT: config["num_text_blocks"] + config["num_visual_blocks"]}


# -- CogVideoX ------------------------------------------------------------------------------------
# model_detection's CogVideoX config, shrunk: head size 64 always (2 heads), two blocks, the T5 width
# (4096) shrunk to 32; the text keeps its 226 tokens (CogVideoXT5Tokenizer pads every prompt to 226).
# T2V as the 5B (RoPE, a 2 x 2 conv patch); I2V as the 5B I2V, whose checkpoint carries learned
# positions (model_detection: learned, no RoPE), sin-cos initialised over 3 axes: a width divisible by
# 3, so 3 heads; Inpaint as Fun V1.5 (VOID): 1.5's linear patch of 2 frames x 2 x 2, 16 noise + 16 mask
# + 16 masked-video channels.
TINY_COGVIDEOX = dict(image_model="cogvideox", num_attention_heads=2, attention_head_dim=64, time_embed_dim=32,
                      num_layers=2, in_channels=16, patch_size=2, text_embed_dim=32,
                      use_learned_positional_embeddings=False, use_rotary_positional_embeddings=True)
TINY_COGVIDEOX_I2V = dict(TINY_COGVIDEOX, num_attention_heads=3, in_channels=32, use_learned_positional_embeddings=True,
                          use_rotary_positional_embeddings=False)
TINY_COGVIDEOX_INPAINT = dict(TINY_COGVIDEOX, in_channels=48, patch_size_t=2)
COG_TEXT = 226
COG_LATENT = (2, 8, 8)
COG_JOINT = COG_TEXT + 2 * 4 * 4         # the text, then 2 frames x 4 x 4 patches
COG_15_JOINT = COG_TEXT + 1 * 4 * 4      # patch_size_t 2: the 2 latent frames make one token row


def cogvideox_conditioning(**extra):
    return text_conditioning(tokens=COG_TEXT, dim=TINY_COGVIDEOX["text_embed_dim"], **extra)


def latent_image(channels, frames, seed=5):
    """A VAE-encoded conditioning latent (what the I2V / inpainting nodes hand as concat_latent_image)."""
    return torch.randn(1, channels, frames, *COG_LATENT[1:], generator=torch.Generator().manual_seed(seed))


# -- MiniMax H3 -----------------------------------------------------------------------------------
# model_detection's MiniMax H3 config, shrunk: head size 128 (2 heads, hidden 256), two blocks and the
# token refiner's two, the released latent widths (24 video, 32 audio channels) and RoPE's 16
# frequencies an axis (rot dim 96 of 128); Qwen3-VL's width (5120) shrunk to 32.
TINY_MINIMAX_H3 = dict(image_model="minimax_h3", num_layers=2, token_refiner_num_layers=2, hidden_size=256,
                       latents_dim=24, audio_latents_dim=32, attention_head_dim=128, num_attention_heads=2,
                       ffn_hidden_size=256, text_dim=32, timestep_input_dim=256, time_embed_hidden_size=64,
                       time_embed_dim=64, rope_inv_freq_len=16)
MINIMAX_LATENT, MINIMAX_AUDIO_FRAMES = (2, 8, 8), 10
MINIMAX_VIDEO_ROWS = 2 * 4 * 4               # frames x h x w after the 1 x 2 x 2 patch
MINIMAX_JOINT = TEXT + 2 * MINIMAX_AUDIO_FRAMES + MINIMAX_VIDEO_ROWS  # text | stereo audio rows | video


def minimax_latent(video_fhw=MINIMAX_LATENT, audio_frames=MINIMAX_AUDIO_FRAMES):
    """Video and stereo audio latents nested as EmptyMiniMaxH3LatentAV makes them."""
    import comfy.nested_tensor
    return comfy.nested_tensor.NestedTensor((torch.zeros(1, 24, *video_fhw), torch.zeros(1, 32, 2, audio_frames)))


def minimax_h3_rope(model_patcher):
    """Fills what a checkpoint carries beside the parameters: ``rope.inv_freq``, a buffer the model
    leaves uninitialised (torch.empty) until a checkpoint is loaded, here RoPE's usual 10000^(-2i/d)
    an axis (d: 2 x its frequencies)."""
    inv_freq = model_patcher.model.diffusion_model.rope.inv_freq
    n = inv_freq.shape[0]
    with torch.no_grad():
        inv_freq.copy_(10000.0 ** (-torch.arange(n, dtype=torch.float32) / n))


# One joint call per block over the 57 packed rows (5 text, 2 x 10 audio, 32 video: the threshold);
# the refiner's calls, made in extra_conds without transformer_options, never reach the scope.
MINIMAX_H3_CASE = Case("MiniMax H3", "MiniMaxH3", TINY_MINIMAX_H3, text_conditioning, MINIMAX_LATENT, 24, MINIMAX_JOINT,
                       {SAGE: TINY_MINIMAX_H3["num_layers"]}, latent=minimax_latent)

CASES: list[Case] = [
    Case("Kandinsky 5", "Kandinsky5", TINY_KANDINSKY5, kandinsky5_conditioning, K5_LATENT, 16, K5_TOKENS,
         kandinsky5_table(TINY_KANDINSKY5)),
    Case("Kandinsky 5 Image", "Kandinsky5Image", TINY_KANDINSKY5_IMAGE, kandinsky5_conditioning, K5_IMAGE_LATENT, 16,
         K5_IMAGE_TOKENS, kandinsky5_table(TINY_KANDINSKY5_IMAGE)),
    # one joint call per block over the 226 text tokens and the video's: at the threshold
    Case("CogVideoX", "CogVideoX_T2V", TINY_COGVIDEOX, cogvideox_conditioning, COG_LATENT, 16, COG_JOINT,
         {SAGE: TINY_COGVIDEOX["num_layers"]}),
    # the first frame's latent, zero-padded over the other frames by concat_cond: 16 more channels
    Case("CogVideoX", "CogVideoX_I2V", TINY_COGVIDEOX_I2V,
         lambda: cogvideox_conditioning(concat_latent_image=latent_image(16, 1)), COG_LATENT, 16, COG_JOINT,
         {SAGE: TINY_COGVIDEOX_I2V["num_layers"]}),
    # VOIDInpaintConditioning's 16 mask-latent + 16 masked-video channels for every frame
    Case("CogVideoX", "CogVideoX_Inpaint", TINY_COGVIDEOX_INPAINT,
         lambda: cogvideox_conditioning(concat_latent_image=latent_image(32, COG_LATENT[0])), COG_LATENT, 16,
         COG_15_JOINT, {SAGE: TINY_COGVIDEOX_INPAINT["num_layers"]}),
    # built without a checkpoint, its rope.inv_freq is whatever memory torch.empty returned: prepare fills it
    dataclasses.replace(MINIMAX_H3_CASE, prepare=minimax_h3_rope),
]


# Released widths (model_detection), one block of each kind, at resolutions users run. Kandinsky 5
# Video Lite at 768x512, 121 frames (Kandinsky5ImageToVideo's defaults; HunyuanVideo VAE 8x, 4x in
# time: 31 x 64 x 96, 47,616 tokens) and a 128-token prompt; Image Lite at 1024² (Flux VAE: 128 x 128,
# 4,096 tokens); CogVideoX 5B at 720x480, 49 frames (13 x 60 x 90: 17,550 video tokens + 226 text);
# MiniMax H3 at 1344x768, 124 frames (EmptyMiniMaxH3LatentAV's defaults: video 37 x 48 x 84, 37,296
# tokens; 207 audio frames, 414 rows) and a 256-token prompt.
K5_TEXT_WIDTHS = dict(in_text_dim=3584, in_text_dim2=768, num_text_blocks=1, num_visual_blocks=1)
WIDTHS: dict[str, RealWidths] = {
    "Kandinsky 5": RealWidths(
        dict(TINY_KANDINSKY5, model_dim=1792, ff_dim=7168, time_dim=512, **K5_TEXT_WIDTHS),
        lambda: text_conditioning(tokens=128, dim=3584, pooled_output=torch.zeros(1, 768)), (31, 64, 96), 16),
    "Kandinsky 5 Image": RealWidths(
        dict(TINY_KANDINSKY5_IMAGE, model_dim=2560, ff_dim=10240, time_dim=512, **K5_TEXT_WIDTHS),
        lambda: text_conditioning(tokens=128, dim=3584, pooled_output=torch.zeros(1, 768)), (128, 128), 16),
    "CogVideoX": RealWidths(
        dict(TINY_COGVIDEOX, num_attention_heads=48, time_embed_dim=512, text_embed_dim=4096, num_layers=1),
        lambda: text_conditioning(tokens=COG_TEXT, dim=4096), (13, 60, 90), 16),
    "MiniMax H3": RealWidths(
        dict(TINY_MINIMAX_H3, hidden_size=5376, num_attention_heads=56, ffn_hidden_size=14336, text_dim=5120,
             time_embed_hidden_size=5376, time_embed_dim=2688, num_layers=1),
        lambda: text_conditioning(tokens=256, dim=5120), (37, 48, 84), 24, lambda: minimax_latent((37, 48, 84), 207)),
}
# The released depths: Kandinsky 5 Video Lite 2 text + 32 visual blocks (Pro: 4 + 60), Image Lite
# 2 + 50; CogVideoX 5B and 1.5 5B 42 blocks (2B: 30); MiniMax H3 50 blocks.
FULL_DEPTH: dict[str, dict] = {
    "Kandinsky 5": dict(num_text_blocks=2, num_visual_blocks=32),
    "Kandinsky 5 Image": dict(num_text_blocks=2, num_visual_blocks=50),
    "CogVideoX": dict(num_layers=42),
    "MiniMax H3": dict(num_layers=50),
}
SIZES: dict[str, dict] = {"Kandinsky 5 Image": {1024: (128, 128), 2048: (256, 256)}}
