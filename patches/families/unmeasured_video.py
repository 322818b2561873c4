"""Older video models, declined by name: a Scope on one passes it through unchanged and Status says why.
Stable Video Diffusion and SV3D ask for fp32 attention; Mochi and Cosmos 1.0 would qualify (head size 128,
every call with transformer_options) but are not measured."""
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
