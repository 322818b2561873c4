"""Lumina Image 2.0 (Lumina2, a NextDiT): main layers over text + image tokens, noise-refiner layers
over the image tokens, context-refiner layers over the Gemma text alone; head size 96 (24 heads, its 8
key/value heads repeated to 24 before the call). SageAttention 1 takes 96, SageAttention 2 pads it
to 128; SageAttention 3 (64 and 128 only) declines it (`head_dim`). Where the text encoder's mask has
zeros, ComfyUI 0.3.75 hands the context refiner that mask as int64 (1 = keep), which no kernel takes
(`mask`); ComfyUI 0.33 drops the caption mask. Z-Image, a Lumina2 subclass, is z_image.py's:
recognise() meets ZImage first on the config's class MRO."""
from . import Family, register

LUMINA2 = register(Family(name="Lumina 2", config_classes=("Lumina2",),
                          diffusion_models=("comfy.ldm.lumina.model.NextDiT",)))
