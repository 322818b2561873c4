"""Z-Image pixel space (ZImagePixelSpace, a ZImage subclass): Z-Image's NextDiT (NextDiTPixelSpace)
over RGB patches instead of latents, its final layer replaced by a per-patch MLP decoder (no
attention). Per step: context-refiner layers over the text alone, noise-refiner layers over the
image patches, main layers over text + image, head size 128 (30 heads of 128, no grouping).
Text and image are each padded with learned tokens to a multiple of 32 where the checkpoint has
pad tokens (Z-Image's have); ComfyUI hands these layers no mask (patchify_and_embed drops the
text's). The Z-Image Control layers run without transformer_options, as Z-Image's. ZImage claims the
parent class (z_image.py); recognise() meets ZImagePixelSpace first on the config's MRO."""
from . import Family, register

Z_IMAGE_PIXEL_SPACE = register(Family(name="Z-Image pixel space", config_classes=("ZImagePixelSpace",),
                                      diffusion_models=("comfy.ldm.lumina.model.NextDiTPixelSpace",)))
