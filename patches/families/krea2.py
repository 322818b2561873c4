"""Krea 2: a text-fusion adapter and refiner calls, then one joint call per single-stream block over text
and image tokens, text first, head size 128 (the blocks' key/value heads repeated before the call)."""
from . import Family, register

KREA2 = register(Family(name="Krea 2", config_classes=("Krea2",),
                        diffusion_models=("comfy.ldm.krea2.model.SingleStreamDiT",), comfyui="0.26.0"))
