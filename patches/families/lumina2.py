"""Lumina Image 2.0: main layers over text + image tokens, refiner layers over each alone, head size 96
(key/value heads repeated before the call). Z-Image, a Lumina2 subclass, is z_image.py's: recognise()
meets ZImage first on the config's MRO."""
from . import Family, register

LUMINA2 = register(Family(name="Lumina 2", config_classes=("Lumina2",),
                          diffusion_models=("comfy.ldm.lumina.model.NextDiT",)))
