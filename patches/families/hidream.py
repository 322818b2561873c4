"""HiDream-I1 / E1: one joint call per double- and single-stream block over the image tokens and the T5
and Llama text, head size 128, no mask, no block position."""
from . import Family, register

HIDREAM = register(Family(name="HiDream", config_classes=("HiDream",),
                          diffusion_models=("comfy.ldm.hidream.model.HiDreamImageTransformer2DModel",)))
