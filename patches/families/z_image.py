"""Z-Image (a NextDiT): main layers over text + image tokens, refiner layers over each alone, head size
128. The Z-Image Control layers run without transformer_options and never reach the Scope."""
from . import Family, register

Z_IMAGE = register(Family(name="Z-Image", config_classes=("ZImage",),
                          diffusion_models=("comfy.ldm.lumina.model.NextDiT",)))
