"""LongCat-Image and its Edit: FLUX.1's diffusion model on Qwen2.5-VL text, one joint call per block, text
first, head size 128. Its config class is no Flux subclass, so FLUX.1's family does not claim it."""
from . import Family, register

LONGCAT_IMAGE = register(Family(name="LongCat-Image", config_classes=("LongCatImage",),
                                diffusion_models=("comfy.ldm.flux.model.Flux",), comfyui="0.16.0"))
