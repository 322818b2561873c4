"""The tiny test cases of HiDream-O1, PixelDiT, PiD, Z-Image pixel space, Boogu, Anima and Ideogram 4 (families
ComfyUI added after 0.3.75; a host without a case's class skips it, naming the class): each family's tiny
random-weight model, and the routing of one step derived from its structure (see families.py). Added to
families.CASES; import sas_harness.families first (it imports this module).

Tiny configs are shaped like ComfyUI 0.33's model_detection output, shrunk, at the released head sizes (HiDream-O1
128, PixelDiT 64 and 72, Z-Image 128, Boogu 120, Anima 128, Ideogram 4 256) and head grouping (HiDream-O1 and Boogu
hand their key/value heads over grouped, enable_gqa: the kernel gets them repeated, counted `copied`)."""
from __future__ import annotations

import torch

from sage_attention_scope.patches import Reason
from .families import SAGE, TEXT, Case, RealWidths, _patches
from .models import text_conditioning

# -- HiDream-O1 ---------------------------------------------------------------------------------
# model_detection gives {"image_model": "hidream_o1"} alone: the released widths are the model's own defaults (the
# Qwen3-VL-8B decoder: 36 layers of 32 query heads of 128 over 8 key/value heads). Shrunk through its overrides to 2
# layers of 4 query heads of 128 over 1 key/value head (the released 4:1 grouping), a one-block vision tower.
TINY_HIDREAM_O1 = dict(image_model="hidream_o1",
                       text_config_overrides=dict(hidden_size=128, intermediate_size=256, num_hidden_layers=2,
                                                  num_attention_heads=4, num_key_value_heads=1, head_dim=128),
                       vision_config_overrides=dict(hidden_size=32, num_heads=2, intermediate_size=64, depth=1,
                                                    num_position_embeddings=64))
HIDREAM_O1_PATCH = 32  # pixels a side of one image token
HIDREAM_O1_HW = (128, 128)  # pixels: 4 x 4 patches
HIDREAM_O1_WORDS = 5  # the prompt's own tokens
# The tokenizer wraps the prompt: <|im_start|>user\n (3), the prompt, <|im_end|>\n<|im_start|>assistant\n (5),
# <|boi|> and the timestep token <|tms|> (2).
HIDREAM_O1_TEXT = 3 + HIDREAM_O1_WORDS + 5 + 2
# The prompt but its timestep token attends causally on SDPA itself (never offered); one call per layer holds the
# generated tokens - the timestep token and the image's patches - as queries, every token as keys.
HIDREAM_O1_QUERY = 1 + _patches(*HIDREAM_O1_HW, HIDREAM_O1_PATCH)
HIDREAM_O1_KEYS = HIDREAM_O1_TEXT + _patches(*HIDREAM_O1_HW, HIDREAM_O1_PATCH)


def hidream_o1_conditioning(words: int = HIDREAM_O1_WORDS, **extra):
    """What HiDreamO1TE hands the sampler: the chat-templated token ids (``text_input_ids``, which the model embeds
    itself) and the same ids as a float stand-in context."""
    import comfy.text_encoders.hidream_o1 as te  # ComfyUI 0.3.75 lacks it: imported where a case runs
    ids = torch.tensor([[te.IM_START_ID, te.USER_ID, te.NEWLINE_ID, *range(1000, 1000 + words), te.IM_END_ID,
                         te.NEWLINE_ID, te.IM_START_ID, te.ASSISTANT_ID, te.NEWLINE_ID, te.BOI_TOKEN_ID,
                         te.TMS_TOKEN_ID]])
    return [[ids.unsqueeze(-1).float(), {"text_input_ids": ids, **extra}]]


# -- PixelDiT and PiD ---------------------------------------------------------------------------
# model_detection gives {"image_model": "pixeldit_t2i"}: the released widths are PixDiT_T2I's defaults (hidden 1536 in
# 24 heads of 64, 14 patch blocks, 2 pixel blocks attending at 1152 in 16 heads of 72, 16-pixel patches, Gemma-2 text
# of 2304 up to 300 tokens). Shrunk to 2 heads of 64, 2 patch blocks, 1 pixel block of 2 heads of 72.
TINY_PIXELDIT = dict(image_model="pixeldit_t2i", in_channels=3, num_groups=2, hidden_size=128, pixel_hidden_size=8,
                     pixel_attn_hidden_size=144, pixel_num_groups=2, patch_depth=2, pixel_depth=1, patch_size=16,
                     txt_embed_dim=32, txt_max_length=300)
# PiD v1.5 for a FLUX.1 latent as model_detection reads it (its test's state dict), the latent branch shrunk.
TINY_PID = dict(TINY_PIXELDIT, image_model="pid", lq_latent_channels=16, lq_hidden_dim=32, lq_num_res_blocks=1,
                lq_interval=2, latent_spatial_down_factor=8, lq_latent_unpatchify_factor=1,
                lq_conv_padding_mode="replicate", lq_gate_per_token=True, pit_lq_inject=True, rope_ref_h=2048,
                rope_ref_w=2048)
PIXEL_HW = (64, 64)  # pixels: 4 x 4 patches of 16
PIXEL_PATCHES = _patches(*PIXEL_HW, 16)
# The cases' threshold lies above the pixel blocks' 16 patches (head size 72), under the patch blocks' 5 + 16 (head
# size 64): the kernel sees one head size, so one first-call check (the fault matrix counts one failed check a
# generation). test_families_pixel_and_omni.py routes the pixel blocks too.
PIXEL_THRESHOLD = TEXT + PIXEL_PATCHES


def pid_conditioning(lq_hw=(2, 2), **extra):
    """PiDConditioning's output: the text, the latent-space model's latent (a FLUX.1 latent of an image a quarter
    of the output's size a side, 8x down) and the degradation sigma."""
    lq = torch.randn(1, 16, *lq_hw, generator=torch.Generator().manual_seed(3))
    return text_conditioning(lq_latent=lq, degrade_sigma=torch.tensor([0.0]), **extra)


# -- Z-Image pixel space ------------------------------------------------------------------------
# model_detection's Z-Image config (dim 3840 in 30 heads of 128) with the pixel decoder read from dec_net; the
# checkpoint's pad tokens make it pad text and image to a multiple of 32. Shrunk to 2 heads of 128, 2 layers, one of
# each refiner, a small decoder; 16-pixel patches (3 x 16 x 16 = 768 values each).
TINY_Z_IMAGE_PIXEL = dict(image_model="zimage_pixel", patch_size=16, in_channels=3, dim=256, n_layers=2,
                          n_refiner_layers=1, n_heads=2, n_kv_heads=2, multiple_of=16, ffn_dim_multiplier=8 / 3,
                          qk_norm=True, cap_feat_dim=32, axes_dims=[32, 48, 48], axes_lens=[1536, 512, 512],
                          rope_theta=256.0, z_image_modulation=True, time_scale=1000.0, pad_tokens_multiple=32,
                          decoder_in_channels=768, decoder_hidden_size=32, decoder_num_res_blocks=1,
                          decoder_max_freqs=8)
Z_IMAGE_PIXEL_HW = (128, 128)  # pixels: 8 x 8 = 64 patches, already a multiple of 32
Z_IMAGE_PIXEL_TEXT = 32  # the 5 text tokens padded with learned tokens to 32
Z_IMAGE_PIXEL_IMAGE = _patches(*Z_IMAGE_PIXEL_HW, 16)

# -- Boogu --------------------------------------------------------------------------------------
# model_detection reads hidden_size, the three depths and the text width; heads come from the model's defaults (28
# query heads of 120 over 7 key/value heads). Shrunk to 4 query heads of 120 over 1 (the released 4:1 grouping).
TINY_BOOGU = dict(image_model="boogu", hidden_size=480, num_layers=1, num_double_stream_layers=1,
                  num_refiner_layers=1, instruction_feat_dim=32, num_attention_heads=4, num_kv_heads=1,
                  multiple_of=16, in_channels=16, patch_size=2)
BOOGU_IMAGE = _patches(8, 8, 2)


def boogu_conditioning(**extra):
    """model_base.Boogu (OmniGen2's) takes num_tokens from the text's mask: without one the model raises. An
    all-ones mask masks nothing, and ComfyUI does not hand it on."""
    return text_conditioning(attention_mask=torch.ones(1, TEXT, dtype=torch.long), **extra)


# -- Anima --------------------------------------------------------------------------------------
# model_detection's Cosmos Predict2 config with image_model "anima" (the 2B: 2048 wide, 16 heads of 128); the LLM
# adapter is fixed (1024 wide, 6 blocks), so its output, the blocks' text, is 1024 wide. Shrunk to 2 heads of 128.
TINY_ANIMA = dict(image_model="anima", max_img_h=240, max_img_w=240, max_frames=128, in_channels=16, out_channels=16,
                  patch_spatial=2, patch_temporal=1, model_channels=256, concat_padding_mask=True,
                  crossattn_emb_channels=1024, pos_emb_cls="rope3d", pos_emb_learnable=True,
                  pos_emb_interpolation="crop", min_fps=1, max_fps=30, use_adaln_lora=True, adaln_lora_dim=32,
                  num_blocks=2, num_heads=2, extra_per_block_abs_pos_emb=False, rope_h_extrapolation_ratio=4.0,
                  rope_w_extrapolation_ratio=4.0, rope_t_extrapolation_ratio=1.0, extra_h_extrapolation_ratio=1.0,
                  extra_w_extrapolation_ratio=1.0, extra_t_extrapolation_ratio=1.0, rope_enable_fps_modulation=False)
ANIMA_TEXT_KEYS = 512  # Anima.preprocess_text_embeds pads the adapter's output to 512 tokens
# One frame of a 48 x 48 latent: 576 image tokens, so that self- and cross-attention both have 512 keys or more (one
# first-call check, "long keys", for the fault matrix's one failed check), as at real sizes (4096 at 1024²).
ANIMA_HW = (1, 48, 48)
ANIMA_IMAGE = _patches(48, 48, 2)


def anima_conditioning(tokens=TEXT, t5_ids=True, **extra):
    """AnimaTEModel's output: the Qwen3 0.6B text (1024 wide) and the prompt's T5 token ids and weights, which the
    model's LLM adapter maps the text onto."""
    if t5_ids:
        extra.update(t5xxl_ids=torch.arange(100, 100 + tokens, dtype=torch.int), t5xxl_weights=torch.ones(tokens))
    return text_conditioning(tokens=tokens, dim=1024, **extra)


# -- Ideogram 4 ---------------------------------------------------------------------------------
# supported_models.Ideogram4 fixes the released widths in its unet_extra_config (18 heads of 256, MLP 12288, adaLN
# 512, text features 53248 = 13 Qwen3-VL layers of 4096); model_detection reads in_channels (a FLUX.2 latent of 32
# channels in 2 x 2: 128) and the depth (34). Shrunk to 2 heads of 256, 2 layers, 32-wide text features (these need
# the harness's build to let a tiny config's keys win over the class's fixed ones).
TINY_IDEOGRAM4 = dict(image_model="ideogram4", in_channels=128, num_layers=2, num_attention_heads=2,
                      attention_head_dim=256, intermediate_size=256, adaln_dim=32, llm_features_dim=32)
IDEOGRAM4_IMAGE = 4 * 4  # one token per position of a 4 x 4 latent


CASES: list[Case] = [
    Case("HiDream-O1", "HiDreamO1", TINY_HIDREAM_O1, hidream_o1_conditioning, HIDREAM_O1_HW, 3, HIDREAM_O1_QUERY,
         # per layer one call: the 17 generated tokens to all 31 (the prompt's causal part never reaches the scope)
         {SAGE: TINY_HIDREAM_O1["text_config_overrides"]["num_hidden_layers"]}),
    Case("PixelDiT", "PixelDiTT2I", TINY_PIXELDIT, text_conditioning, PIXEL_HW, 3, PIXEL_THRESHOLD,
         # per patch block one joint call (5 text + 16 patches) qualifies; per pixel block one over the 16 patches
         # is under the threshold
         {SAGE: TINY_PIXELDIT["patch_depth"], Reason.TOO_SHORT: TINY_PIXELDIT["pixel_depth"]}),
    Case("PiD", "PiD", TINY_PID, pid_conditioning, PIXEL_HW, 3, PIXEL_THRESHOLD,
         # PixelDiT's calls; the latent branch attends to nothing
         {SAGE: TINY_PID["patch_depth"], Reason.TOO_SHORT: TINY_PID["pixel_depth"]}),
    Case("Z-Image pixel space", "ZImagePixelSpace", TINY_Z_IMAGE_PIXEL, text_conditioning, Z_IMAGE_PIXEL_HW, 3,
         Z_IMAGE_PIXEL_IMAGE,
         # noise refiner over the 64 patches and main layers over 32 + 64 qualify; the context refiner sees the
         # 32 padded text tokens alone
         {SAGE: TINY_Z_IMAGE_PIXEL["n_refiner_layers"] + TINY_Z_IMAGE_PIXEL["n_layers"],
          Reason.TOO_SHORT: TINY_Z_IMAGE_PIXEL["n_refiner_layers"]}),
    Case("Boogu", "Boogu", TINY_BOOGU, boogu_conditioning, (8, 8), 16, BOOGU_IMAGE,
         # noise refiner (16 image tokens), per dual-stream layer the joint call (5 + 16) and the image
         # self-attention (16), per single-stream layer one joint call (21) qualify; the context refiner's 5 text
         # tokens are short (no reference images: no reference refiner call)
         {SAGE: TINY_BOOGU["num_refiner_layers"] + 2 * TINY_BOOGU["num_double_stream_layers"]
          + TINY_BOOGU["num_layers"], Reason.TOO_SHORT: TINY_BOOGU["num_refiner_layers"]}),
    Case("Anima", "Anima", TINY_ANIMA, anima_conditioning, ANIMA_HW, 16, ANIMA_TEXT_KEYS,
         # per block self-attention over the 576 image tokens and cross-attention to the 512 padded text keys
         {SAGE: 2 * TINY_ANIMA["num_blocks"]}),
    Case("Ideogram 4", "Ideogram4", TINY_IDEOGRAM4, lambda: text_conditioning(dim=TINY_IDEOGRAM4["llm_features_dim"]),
         (4, 4), 128, TEXT + IDEOGRAM4_IMAGE,
         # per layer one joint call over the 5 text + 16 image tokens
         {SAGE: TINY_IDEOGRAM4["num_layers"]}),
]

# Released widths (the model's defaults where model_detection reads nothing more), one or two blocks, the text the
# stock text encoders give, a 1024² image (HiDream-O1 and PiD: 2048², where they were trained).
WIDTHS: dict[str, RealWidths] = {
    # HiDream-O1: the Qwen3-VL-8B decoder, one layer; a 100-token prompt; trained at about 4 megapixels
    "HiDream-O1": RealWidths(dict(image_model="hidream_o1", text_config_overrides=dict(num_hidden_layers=1),
                                  vision_config_overrides=dict(depth=1)),
                             lambda: hidream_o1_conditioning(words=100), (2048, 2048), 3),
    # PixelDiT-1300M: Gemma-2 text, 300 tokens (BOS + the last 299 of the padded system prompt + prompt)
    "PixelDiT": RealWidths(dict(image_model="pixeldit_t2i", patch_depth=1, pixel_depth=1),
                           lambda: text_conditioning(tokens=300, dim=2304), (1024, 1024), 3),
    # PiD 2k (v1.5, FLUX.1 latents): a 512² image's latent decoded to 2048²
    "PiD": RealWidths(dict(TINY_PID, hidden_size=1536, num_groups=24, pixel_hidden_size=16, pixel_attn_hidden_size=1152,
                           pixel_num_groups=16, patch_depth=1, pixel_depth=1, txt_embed_dim=2304, lq_hidden_dim=1024,
                           lq_num_res_blocks=4),
                      lambda: pid_conditioning(lq_hw=(64, 64), tokens=300, dim=2304), (2048, 2048), 3),
    # Z-Image pixel space: Z-Image's widths, ComfyUI's default decoder (3840 wide, 4 blocks); Qwen3 4B text
    "Z-Image pixel space": RealWidths(
        dict(TINY_Z_IMAGE_PIXEL, dim=3840, n_heads=30, n_kv_heads=30, multiple_of=256, cap_feat_dim=2560, n_layers=1,
             decoder_hidden_size=3840, decoder_num_res_blocks=4),
        lambda: text_conditioning(tokens=256, dim=2560), (1024, 1024), 3),
    # Boogu-Image: 28 heads of 120 over 7, Qwen3-VL-8B text (4096 wide), not padded
    "Boogu": RealWidths(dict(TINY_BOOGU, hidden_size=3360, num_attention_heads=28, num_kv_heads=7,
                             instruction_feat_dim=4096, multiple_of=256),
                        lambda: text_conditioning(tokens=128, dim=4096,
                                                  attention_mask=torch.ones(1, 128, dtype=torch.long)),
                        (128, 128), 16),
    # Anima: Cosmos Predict2 2B's blocks; a 64-token prompt through the adapter, padded to 512
    "Anima": RealWidths(dict(TINY_ANIMA, model_channels=2048, num_heads=16, num_blocks=1, adaln_lora_dim=256),
                        lambda: anima_conditioning(tokens=64), (1, 128, 128), 16),
    # Ideogram 4: its fixed widths, one layer; 256 tokens of 13 Qwen3-VL layers' features
    "Ideogram 4": RealWidths(dict(image_model="ideogram4", in_channels=128, num_layers=1),
                             lambda: text_conditioning(tokens=256, dim=53248), (64, 64), 128),
}
# The released depths (model_detection counts them; HiDream-O1's and Boogu's are their models' defaults).
FULL_DEPTH: dict[str, dict] = {
    "HiDream-O1": dict(text_config_overrides=dict(num_hidden_layers=36)),
    "PixelDiT": dict(patch_depth=14, pixel_depth=2),
    "PiD": dict(patch_depth=14, pixel_depth=2),
    "Z-Image pixel space": dict(n_layers=30, n_refiner_layers=2),
    "Boogu": dict(num_layers=32, num_double_stream_layers=8, num_refiner_layers=2),
    "Anima": dict(num_blocks=28),
    "Ideogram 4": dict(num_layers=34),
}
# Latents of a 1024² and a 2048² image: pixels for the pixel-space models (3 channels), 8x down for Boogu and Anima
# (Anima: one frame), FLUX.2's 16x down (128 channels) for Ideogram 4.
SIZES: dict[str, dict] = {
    **{family: {1024: (1024, 1024), 2048: (2048, 2048)}
       for family in ("HiDream-O1", "PixelDiT", "PiD", "Z-Image pixel space")},
    "Boogu": {1024: (128, 128), 2048: (256, 256)},
    "Anima": {1024: (1, 128, 128), 2048: (1, 256, 256)},
    "Ideogram 4": {1024: (64, 64), 2048: (128, 128)},
}
