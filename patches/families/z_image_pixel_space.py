"""Z-Image pixel space: Z-Image's NextDiT over RGB patches (its per-patch decoder has no attention), the
same calls, head size 128. It subclasses ZImage: recognise() meets it first on the config's MRO."""
from . import Family, register

Z_IMAGE_PIXEL_SPACE = register(Family(name="Z-Image pixel space", config_classes=("ZImagePixelSpace",),
                                      diffusion_models=("comfy.ldm.lumina.model.NextDiTPixelSpace",),
                                      comfyui="0.16.0"))
