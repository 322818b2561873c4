"""SD3 and SD3.5: one joint text + image call per joint block (head size 64), and in SD3.5 Medium's first
blocks a second, image-only call. v comes as (B, N, H, D) beside flattened q and k: read as a view."""
from . import Family, register

SD3 = register(Family(
    name="SD3", config_classes=("SD3",),  # SD3 Medium, SD3.5 Large / Large Turbo / Medium: one config class
    diffusion_models=("comfy.ldm.modules.diffusionmodules.mmdit.OpenAISignatureMMDITWrapper",)))
