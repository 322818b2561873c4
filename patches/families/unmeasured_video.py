"""Older video models, declined by name (unmeasured): a Scope on one passes it through unchanged and Status
says why. Mochi and Cosmos 1.0 would qualify (head size 128, tens of thousands of tokens a call, every call
with transformer_options): serving them waits for their tables and a measured run.

Stable Video Diffusion (SVD_img2vid) and SV3D (SV3D_u, SV3D_p: SVD's UNet turned to orbits of an object):
per transformer block a spatial self-attention over each frame's tokens (head size 64; 128x72 = 9,216 at
1024x576), a cross-attention to one CLIP-image token and a temporal self- and cross-attention over the
frames (14 or 25; SV3D 21), through comfy/ldm/modules/attention.py with transformer_options. ComfyUI
asks for them in fp32 (attn_precision), which the kernels do not compute in. Mochi (GenmoMochi): one joint
attention over the video and the text (cropped to its real tokens, no mask) per block
(genmo/joint_model/asymm_models_joint.py), head size 128 (3,072 wide, 24 heads), 44,520 video tokens at
848x480, 163 frames; its text pooler calls torch's SDPA itself (utils.py). Cosmos 1.0 (CosmosT2V, and
CosmosI2V through it): per block a self-attention over the video tokens (56,320 at 1280x704, 121 frames) and
a cross-attention to the 512 T5 tokens (cosmos/blocks.py), head size 128 (7B: 4,096 wide, 32 heads;
14B: 5,120, 40), no mask at the released configs (use_cross_attn_mask False)."""
from . import Family, register

_UNET = ("comfy.ldm.modules.diffusionmodules.openaimodel.UNetModel",)
_FP32 = "ComfyUI asks for its attention in fp32 (attn_precision), which the SageAttention kernels do not compute in"

SVD = register(Family(
    name="Stable Video Diffusion", config_classes=("SVD_img2vid",), diffusion_models=_UNET, opens=False,
    why_not=f"not measured, and {_FP32}"))

SV3D = register(Family(
    name="SV3D", config_classes=("SV3D_u",),  # SVD_img2vid subclasses, named first; and SV3D_p through SV3D_u
    diffusion_models=_UNET, opens=False,
    why_not=f"a 3D (orbital video) model on Stable Video Diffusion's UNet: not measured, and {_FP32}"))

MOCHI = register(Family(
    name="Mochi", config_classes=("GenmoMochi",),
    diffusion_models=("comfy.ldm.genmo.joint_model.asymm_models_joint.AsymmDiTJoint",), opens=False,
    why_not="not measured against SDPA yet (its joint video + text attention has head size 128)"))

COSMOS_1 = register(Family(
    name="Cosmos 1.0", config_classes=("CosmosT2V",),  # and its subclass CosmosI2V
    diffusion_models=("comfy.ldm.cosmos.model.GeneralDIT",), opens=False,
    why_not="not measured against SDPA yet (its video self-attention has head size 128)"))
