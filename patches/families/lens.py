"""Lens: one joint call per dual-stream block over image then text tokens, head size 64, each with an
additive key mask from the text's padding, the same for every query (dropped, sliced or gathered)."""
from . import Family, register

LENS = register(Family(name="Lens", config_classes=("Lens",),
                       diffusion_models=("comfy.ldm.lens.model.LensTransformer2DModel",), comfyui="0.23.0"))
