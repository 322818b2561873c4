"""OmniGen2: main layers over text + reference + image tokens and refiner layers over each alone, head
size 120 (21 query heads over 7 key/value heads: where ComfyUI hands them grouped, the kernel gets them
repeated, a copy)."""
from . import Family, register

OMNIGEN2 = register(Family(name="Omnigen2", config_classes=("Omnigen2",),
                           diffusion_models=("comfy.ldm.omnigen.omnigen2.OmniGen2Transformer2DModel",)))
