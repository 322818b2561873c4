"""Boogu-Image: OmniGen2's refiners and single-stream layers with a dual-stream stage between, head size
120 (28 query heads over 7 key/value heads: the kernel gets them repeated, a copy). Boogu subclasses
Omnigen2's config class; recognise() meets it first on the config's MRO."""
from . import Family, register

BOOGU = register(Family(name="Boogu", config_classes=("Boogu",),
                        diffusion_models=("comfy.ldm.boogu.model.BooguTransformer2DModel",), comfyui="0.26.0"))
