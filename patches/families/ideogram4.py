"""Ideogram 4: one joint call per layer over the Qwen3-VL text followed by the image tokens, head size
256, which comfy-kitchen's int8 kernel takes and SageAttention's do not. A padded text mask masks queries
as well as keys: no key padding to slice off."""
from . import Family, register

IDEOGRAM4 = register(Family(name="Ideogram 4", config_classes=("Ideogram4",),
                            diffusion_models=("comfy.ldm.ideogram4.model.Ideogram4Transformer2DModel",),
                            comfyui="0.24.0"))
