"""SD3 and SD3.5 (MMDiT): one joint text + image attention call per joint block (head size 64;
SD3.5 Large has 38 blocks), and in SD3.5 Medium's first 13 blocks a second, image-only call
(x_block_self_attn_layers). ComfyUI hands v as (B, N, H, D) beside (B, N, H*D) q and k (mmdit.py's
split_qkv): the call's facts take it flattened, a view."""
from . import Family, register

SD3 = register(Family(
    name="SD3", config_classes=("SD3",),  # SD3 Medium, SD3.5 Large / Large Turbo / Medium: one config class
    diffusion_models=("comfy.ldm.modules.diffusionmodules.mmdit.OpenAISignatureMMDITWrapper",)))
