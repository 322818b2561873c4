"""The tiny test cases of Wan (with the Wan models of newer ComfyUI, which skip on 0.3.75) and
HunyuanVideo (with HunyuanVideo 1.5 and HunyuanImage 2.1): each family's tiny random-weight model, and
the routing of one step derived from its structure (see families.py). Added to families.CASES; import
sas_harness.families first (it imports this module)."""
from __future__ import annotations

import dataclasses
import inspect
import types

import torch

from sage_attention_scope.patches import Reason
from .families import SAGE, TEXT, Case, RealWidths
from .models import text_conditioning

# -- Wan ----------------------------------------------------------------------------------------
# Shaped like model_detection's Wan config: head size 128 (dim 256, 2 heads), 2 blocks. text_dim
# (4096 for UMT5) is shrunk; the text keeps its 512 tokens (the tokenizer pads every prompt to 512).
TINY_WAN = dict(image_model="wan2.1", model_type="t2v", patch_size=(1, 2, 2), text_len=512, in_dim=16, dim=256,
                ffn_dim=512, freq_dim=256, text_dim=32, out_dim=16, num_heads=2, num_layers=2, window_size=(-1, -1),
                qk_norm=True, cross_attn_norm=True, eps=1e-6)
TINY_WAN_I2V = dict(TINY_WAN, model_type="i2v", in_dim=36)  # 16 noise + 4 mask + 16 image channels
TINY_WAN_VACE = dict(TINY_WAN, model_type="vace", vace_layers=1, vace_in_dim=96)  # 32 frames + 64 mask channels
WAN_TEXT, WAN_CLIP = 512, 257  # UMT5 tokens; CLIP-H penultimate states of one image


def wan_tokens(fhw):
    """Video tokens of a Wan latent (frames, h, w): patch 1 x 2 x 2."""
    return fhw[0] * (fhw[1] // 2) * (fhw[2] // 2)


def clip_vision(tokens=WAN_CLIP, seed=2):
    """What CLIPVisionEncode hands WanImageToVideo: only penultimate_hidden_states is read."""
    g = torch.Generator().manual_seed(seed)
    return types.SimpleNamespace(penultimate_hidden_states=torch.randn(1, tokens, 1280, generator=g))


def wan_conditioning(**extra):
    return text_conditioning(tokens=WAN_TEXT, dim=TINY_WAN["text_dim"], **extra)


# 512 video tokens: at the threshold of 512 every call but the one to the 257 CLIP keys qualifies,
# as under the automatic floor's key side; and all the eligible calls have long keys (decide.SHORT_KEYS),
# one first-call check between them.
WAN_LATENT = (2, 32, 32)
WAN_THRESHOLD = wan_tokens(WAN_LATENT)


def wan_clip_opts_out() -> bool:
    """Whether this ComfyUI makes Wan's CLIP cross-attention with low_precision_attention=False (0.33
    does; 0.3.75 does not): such a call, once past the threshold, stays on SDPA (low_precision_opt_out)."""
    import comfy.ldm.wan.model
    return "low_precision_attention=False" in inspect.getsource(comfy.ldm.wan.model.WanI2VCrossAttention.forward)


# -- Wan models of newer ComfyUI (0.33 read; not in 0.3.75) ------------------------------------------
# Configs as model_detection gives them (in_dim from the patch embedding, model_type from the keys
# each model adds, or from the checkpoint's metadata for causal_ar, flow_rvs and animate2).
TINY_WAN_CAUSAL_AR = dict(TINY_WAN, causal_ar=True)       # the config class drops the marker itself
TINY_WAN_FLOW_RVS = dict(TINY_WAN, model_type="flow_rvs")  # built as a T2V WanModel
TINY_WAN_SCAIL = dict(TINY_WAN, model_type="scail", in_dim=20)  # 16 latent + 4 mask channels
TINY_WAN_SCAIL2 = dict(TINY_WAN_SCAIL, model_type="scail2")
TINY_WAN_DANCER = dict(TINY_WAN, model_type="wandancer", in_dim=36)  # I2V-shaped, as its config class
TINY_WAN_ANIMATE2 = dict(TINY_WAN, model_type="animate2", in_dim=36)  # Wan 2.1 I2V 14B weights
POSE_LATENT = (2, 16, 16)    # SCAIL's pose video: the video's frames at half its size (64 tokens a frame)
SCAIL_TOKENS = wan_tokens((1 + WAN_LATENT[0], *WAN_LATENT[1:])) + wan_tokens(POSE_LATENT)  # 768 + 128
MUSIC_FRAMES = 5             # WanDancer's music features: about one row a video frame (5 frames: 2 latent)
# Animate 2's latent: the reference image's slot, then 2 frames, each frame 576 tokens: over the
# threshold of 512, as a frame of a real video is (832x480: 1560 tokens). The pose video has the 2 frames.
ANIMATE2_LATENT = (3, 48, 48)
ANIMATE2_FRAME = wan_tokens((1, 48, 48))


# Where a CLIP call passes the threshold: SDPA on a ComfyUI that opts it out, else the kernel.
CLIP_PAST_THRESHOLD = Reason.LOW_PRECISION_OPT_OUT if wan_clip_opts_out() else SAGE


def _table(*routes):
    """A per-step table from (route, calls) pairs; a route named twice adds up."""
    table = {}
    for route, calls in routes:
        table[route] = table.get(route, 0) + calls
    return table


def _randn(*shape, seed=6):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))


def _first_frame_known(latent):
    """concat_mask as the nodes give it, 1 channel: 0 where the frame is given (the first), else 1."""
    mask = torch.ones(1, 1, *latent)
    mask[:, :, :1] = 0.0
    return mask


def scail_conditioning(scail2=False):
    """What WanSCAILToVideo hands the sampler: the reference image's latent, the pose video's latent at
    half size, the reference's CLIP vision output; SCAIL-2 adds the identity masks (28 channels each:
    the pose video's at its size, the reference's and the video's frames at the video's)."""
    extra = dict(reference_latents=[_randn(1, 16, 1, *WAN_LATENT[1:])], pose_video_latent=_randn(1, 16, *POSE_LATENT),
                 clip_vision_output=clip_vision(), ref_mask_flag=True)
    if scail2:
        extra.update(driving_mask_28ch=torch.ones(1, POSE_LATENT[0], 28, *POSE_LATENT[1:]),
                     ref_mask_28ch=torch.zeros(1, 1 + WAN_LATENT[0], 28, *WAN_LATENT[1:]))
    return wan_conditioning(**extra)


def wan_dancer_conditioning():
    """What WanDancerVideo hands the sampler with a start image, its CLIP vision output, a reference
    image's and the music (WanDancerEncodeAudio: 35 features a row, at 30 fps)."""
    return wan_conditioning(concat_latent_image=_randn(1, 16, *WAN_LATENT), concat_mask=_first_frame_known(WAN_LATENT),
                            clip_vision_output=clip_vision(), clip_vision_output_ref=clip_vision(seed=3),
                            audio_embed=_randn(1, MUSIC_FRAMES, 35), fps=30.0, audio_inject_scale=1.0)


def animate2_conditioning():
    """What WanAnimate2ToVideo hands the sampler: the reference image's latent then the video's, the
    mask marking the reference known, the CLIP vision output, the pose video's latent (its frames),
    the pose branch's prompt and CLIP output (by default the same)."""
    clip = clip_vision()
    text = wan_conditioning()[0][0]
    return wan_conditioning(concat_latent_image=_randn(1, 16, *ANIMATE2_LATENT),
                            concat_mask=_first_frame_known(ANIMATE2_LATENT), clip_vision_output=clip,
                            pose_video_latent=_randn(1, 16, ANIMATE2_LATENT[0] - 1, *ANIMATE2_LATENT[1:]),
                            clip_vision_output_pose=clip, cross_attn_pose=text)


# -- HunyuanVideo, 1.5, HunyuanImage 2.1 --------------------------------------------------------

def _meanflow_sum_of_this_comfyui() -> bool:
    """Newer ComfyUI (0.12) made HunyuanVideoParams.meanflow_sum required; model_detection sets it
    True for HunyuanVideo 1.5 (a vision_in) and False otherwise. Set only where this ComfyUI has it."""
    import comfy.ldm.hunyuan_video.model
    return "meanflow_sum" in {f.name for f in dataclasses.fields(comfy.ldm.hunyuan_video.model.HunyuanVideoParams)}


_MEANFLOW_SUM = _meanflow_sum_of_this_comfyui()
# model_detection's config, shrunk: hidden 256 / 2 heads (head size 128), one double-stream and one
# single-stream block; the text encoders' widths (4096 LLaMA, 768 CLIP-L, 3584 Qwen) shrunk to 32.
TINY_HUNYUAN_VIDEO = dict(image_model="hunyuan_video", in_channels=16, out_channels=16, vec_in_dim=32,
                          context_in_dim=32, hidden_size=256, mlp_ratio=4.0, num_heads=2, depth=1,
                          depth_single_blocks=1, axes_dim=[16, 56, 56], theta=256, patch_size=[1, 2, 2],
                          qkv_bias=True, guidance_embed=True, byt5=False, meanflow=False,
                          use_cond_type_embedding=False, vision_in_dim=None,
                          **({"meanflow_sum": False} if _MEANFLOW_SUM else {}))
TINY_HUNYUAN_VIDEO_15 = dict(TINY_HUNYUAN_VIDEO, in_channels=65, out_channels=32, vec_in_dim=None, patch_size=[1, 1, 1],
                             guidance_embed=False, byt5=True, use_cond_type_embedding=True, vision_in_dim=1152,
                             **({"meanflow_sum": True} if _MEANFLOW_SUM else {}))
TINY_HUNYUAN_IMAGE_21 = dict(TINY_HUNYUAN_VIDEO, in_channels=64, out_channels=64, vec_in_dim=None, patch_size=[1, 1],
                             axes_dim=[64, 64], guidance_embed=False, byt5=True)
HV_TEXT, HV_PADDING = 8, 3   # a prompt of 5 tokens padded to the encoder's 8: its mask's last 3 are 0
REFINER_CALLS = 2            # the text token refiner's blocks (fixed in the model), one call each
BYT5 = 8                     # glyph tokens (byT5-small, 1472 wide)
HV_LATENT, HV15_LATENT, HI21_LATENT = (2, 8, 8), (2, 4, 4), (8, 8)
HV_JOINT = 2 * 4 * 4 + HV_TEXT       # 32 image tokens (patch 1 x 2 x 2) + the text, padding included
HV15_JOINT = 2 * 4 * 4 + BYT5 + TEXT  # 32 image tokens (patch 1) + glyphs + text
HI21_JOINT = 8 * 8 + TEXT + BYT5      # 64 image tokens (patch 1) + text + glyphs


def hunyuan_text_last() -> bool:
    """Whether this ComfyUI puts HunyuanVideo's text last in the joint sequence, as up to 0.12 did
    (its padded keys trailing: sliced off). Its refactor of February 2026 (PR 12432) puts the text
    first: the padded keys then lie between text and image, a mask the kernel cannot take."""
    import comfy.ldm.hunyuan_video.model
    return "attn_mask[:, 0, img_len:] = txt_mask" in inspect.getsource(comfy.ldm.hunyuan_video.model.HunyuanVideo)


def text_mask(tokens=HV_TEXT, padding=HV_PADDING):
    """The text encoder's attention mask (1 keeps a token), padding last."""
    return torch.tensor([[1] * (tokens - padding) + [0] * padding])


def hunyuan_video_conditioning(**extra):
    """The text with its mask: padded where this ComfyUI slices the padding off (the text last);
    unpadded where it cannot (the text first), so the case's joint calls still reach the kernel
    (test_families_video routes a padded prompt on both)."""
    mask = text_mask(padding=HV_PADDING if hunyuan_text_last() else 0)
    return text_conditioning(tokens=HV_TEXT, pooled_output=torch.zeros(1, 32), **{"attention_mask": mask, **extra})


def joint_blocks(config):
    """Joint attention calls a step: one per double-stream and per single-stream block."""
    return config["depth"] + config["depth_single_blocks"]


def byt5(tokens=BYT5, seed=3):
    return torch.randn(1, tokens, 1472, generator=torch.Generator().manual_seed(seed))


VIDEO_CASES: list = [
    Case("Wan", "WAN21_T2V", TINY_WAN, wan_conditioning, WAN_LATENT, 16, WAN_THRESHOLD,
         # per block: self-attention over the 512 video tokens, and cross-attention of those
         # queries to the 512 text keys: both at the threshold
         {SAGE: 2 * TINY_WAN["num_layers"]}),
    Case("Wan", "WAN21_I2V", TINY_WAN_I2V,
         lambda: wan_conditioning(clip_vision_output=clip_vision(),
                                  concat_latent_image=torch.zeros(1, 16, *WAN_LATENT)),
         WAN_LATENT, 16, WAN_THRESHOLD,
         # per block: self-attention and the text cross-attention qualify as in T2V; the
         # cross-attention to the 257 CLIP keys, made between them, is short
         {SAGE: 2 * TINY_WAN["num_layers"], Reason.TOO_SHORT: TINY_WAN["num_layers"]}),
    Case("Wan", "WAN21_Vace", TINY_WAN_VACE, wan_conditioning, WAN_LATENT, 16, WAN_THRESHOLD,
         # the main blocks as Wan T2V; the one VACE block (after block 0, one VACE context: the
         # default zero frames and mask) makes the same two calls over the same 512 tokens
         {SAGE: 2 * (TINY_WAN["num_layers"] + TINY_WAN_VACE["vace_layers"])}),
    Case("HunyuanVideo", "HunyuanVideo", TINY_HUNYUAN_VIDEO, hunyuan_video_conditioning, HV_LATENT, 16, HV_JOINT,
         # the two text-refiner calls see the 8 text tokens alone (short); the double- and the
         # single-stream block attend over image + text, their text mask's 3 padded keys last:
         # sliced off, so both qualify at the joint length (where this ComfyUI puts the text first,
         # the prompt is unpadded: hunyuan_video_conditioning)
         {SAGE: joint_blocks(TINY_HUNYUAN_VIDEO), Reason.TOO_SHORT: REFINER_CALLS}),
    Case("HunyuanVideo 1.5", "HunyuanVideo15", TINY_HUNYUAN_VIDEO_15,
         lambda: text_conditioning(pooled_output=None, conditioning_byt5small=byt5()), HV15_LATENT, 32, HV15_JOINT,
         # as HunyuanVideo: two refiner calls over the 5 text tokens, one joint call per block
         # over image + glyphs + text (no text mask: 0.3.75 cannot apply one beside glyphs)
         {SAGE: joint_blocks(TINY_HUNYUAN_VIDEO_15), Reason.TOO_SHORT: REFINER_CALLS}),
    Case("HunyuanImage 2.1", "HunyuanImage21", TINY_HUNYUAN_IMAGE_21,
         lambda: text_conditioning(conditioning_byt5small=byt5()), HI21_LATENT, 64, HI21_JOINT,
         # as HunyuanVideo 1.5, one image (patch 1 x 1): text then glyphs after the image tokens
         {SAGE: joint_blocks(TINY_HUNYUAN_IMAGE_21), Reason.TOO_SHORT: REFINER_CALLS}),
    # -- Wan models of newer ComfyUI, each with its own inputs ---------------------------------------
    Case("Wan", "WAN21_CausalAR_T2V", TINY_WAN_CAUSAL_AR, wan_conditioning, WAN_LATENT, 16, WAN_THRESHOLD,
         # under an ordinary sampler (the cases' euler) a WanModel: per block self-attention and the
         # text, as Wan T2V (under its ar_video sampler nothing reaches the scope: test_families_video)
         {SAGE: 2 * TINY_WAN["num_layers"]}),
    Case("Wan", "WAN21_FlowRVS", TINY_WAN_FLOW_RVS, wan_conditioning, WAN_LATENT, 16, WAN_THRESHOLD,
         # segments a given video: the latent is that video (the sampler starts from it, not noise);
         # per block self-attention and the text, as Wan T2V
         {SAGE: 2 * TINY_WAN["num_layers"]}, latent=lambda: _randn(1, 16, *WAN_LATENT)),
    Case("Wan", "WAN21_SCAIL", TINY_WAN_SCAIL, scail_conditioning, WAN_LATENT, 16, WAN_THRESHOLD,
         # per block: self-attention over the reference frame and the video (3 x 256 tokens) and the
         # pose video (2 x 64) qualifies, so does the text; the CLIP call (257 keys) is short
         {SAGE: 2 * TINY_WAN["num_layers"], Reason.TOO_SHORT: TINY_WAN["num_layers"]}),
    Case("Wan", "WAN21_SCAIL2", TINY_WAN_SCAIL2, lambda: scail_conditioning(scail2=True), WAN_LATENT, 16,
         WAN_THRESHOLD,
         # as SCAIL: the identity masks are added to the tokens, they add none
         {SAGE: 2 * TINY_WAN["num_layers"], Reason.TOO_SHORT: TINY_WAN["num_layers"]}),
    Case("Wan", "WAN22_WanDancer", TINY_WAN_DANCER, wan_dancer_conditioning, WAN_LATENT, 16, WAN_THRESHOLD,
         # per block: self-attention and the text qualify; the CLIP call has both images' keys (514),
         # over the threshold: SDPA where this ComfyUI opts it out (0.33 does). The music
         # encoder's 2 calls and the injector's (block 0) carry no transformer_options: never counted
         _table((SAGE, 2 * TINY_WAN["num_layers"]), (CLIP_PAST_THRESHOLD, TINY_WAN["num_layers"]))),
    Case("Wan", "WAN_Animate2", TINY_WAN_ANIMATE2, animate2_conditioning, ANIMATE2_LATENT, 16, WAN_THRESHOLD,
         # per block, the pose branch: self-attention over the pose video's 2 x 576 tokens and the
         # text qualify, its CLIP call (257 keys) is short; then the generation: one self-attention
         # call per frame (576 queries; keys all 3 x 576 tokens, and frames 1 and 2 one pose frame's
         # more) and the text qualify, its CLIP call is short
         {SAGE: 6 * TINY_WAN["num_layers"], Reason.TOO_SHORT: 2 * TINY_WAN["num_layers"]}),
]


# Released widths (model_detection: head size 128 throughout), one or two blocks, at resolutions
# users run: Wan 2.1 14B at 832x480, 81 frames (VAE 8x, 4x in time: 21 x 60 x 104, 32,760 tokens);
# HunyuanVideo at 848x480, 73 frames (19 x 60 x 106, 30,210 tokens); HunyuanVideo 1.5 at 480p,
# 121 frames (VAE 16x: 31 x 30 x 53, 49,290 tokens); HunyuanImage 2.1 at 2048x2048 (VAE 32x: 64 x 64).
VIDEO_WIDTHS: dict = {
    "Wan": RealWidths(dict(TINY_WAN, dim=5120, ffn_dim=13824, num_heads=40, num_layers=1, text_dim=4096),
                      lambda: text_conditioning(tokens=WAN_TEXT, dim=4096), (21, 60, 104), 16),
    "HunyuanVideo": RealWidths(
        dict(TINY_HUNYUAN_VIDEO, vec_in_dim=768, context_in_dim=4096, hidden_size=3072, num_heads=24, depth=1,
             depth_single_blocks=1),
        # a short prompt: 40 of the encoder's 256 tokens, the rest padding under the text mask
        lambda: text_conditioning(tokens=256, dim=4096, pooled_output=torch.zeros(1, 768),
                                  attention_mask=text_mask(tokens=256, padding=216)), (19, 60, 106), 16),
    # Wan 2.2 TI2V 5B at 1280x704x121 (VAE 16x down, 48 channels): 27,280 tokens
    "Wan 2.2 5B": RealWidths(dict(TINY_WAN, dim=3072, ffn_dim=14336, num_heads=24, num_layers=1, in_dim=48,
                                  out_dim=48, text_dim=4096),
                             lambda: text_conditioning(tokens=WAN_TEXT, dim=4096), (31, 44, 80), 48),
    "HunyuanVideo 1.5": RealWidths(
        dict(TINY_HUNYUAN_VIDEO_15, context_in_dim=3584, hidden_size=2048, num_heads=16, depth=2,
             depth_single_blocks=0),
        lambda: text_conditioning(tokens=256, dim=3584, pooled_output=None, conditioning_byt5small=byt5(64)),
        (31, 30, 53), 32),
    "HunyuanImage 2.1": RealWidths(
        dict(TINY_HUNYUAN_IMAGE_21, context_in_dim=3584, hidden_size=3584, num_heads=28, depth=1,
             depth_single_blocks=1),
        lambda: text_conditioning(tokens=256, dim=3584, conditioning_byt5small=byt5(64)), (64, 64), 64),
}
# The released depths: Wan 2.1 14B 40 blocks; HunyuanVideo 20 double + 40 single; HunyuanVideo 1.5
# (8.3B) 54 double, no single; HunyuanImage 2.1 20 + 40.
VIDEO_FULL_DEPTH: dict = {
    "Wan": dict(num_layers=40),
    "Wan 2.2 5B": dict(num_layers=30),
    "HunyuanVideo": dict(depth=20, depth_single_blocks=40),
    "HunyuanVideo 1.5": dict(depth=54, depth_single_blocks=0),
    "HunyuanImage 2.1": dict(depth=20, depth_single_blocks=40),
}
VIDEO_SIZES: dict = {}       # family -> {size: latent shape} where the family has image sizes
