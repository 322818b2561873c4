"""Z-Image (ZImage, a NextDiT): main layers over text + image tokens, noise-refiner layers over
image tokens, context-refiner layers over the text alone (head size 128). The Z-Image Control
layers (the ZImageFunControlnet model patch, ComfyUI >= 0.8) run without transformer_options (and
without a mask): they never reach the Scope."""
from . import Family, register

Z_IMAGE = register(Family(name="Z-Image", config_classes=("ZImage",),
                          diffusion_models=("comfy.ldm.lumina.model.NextDiT",)))
