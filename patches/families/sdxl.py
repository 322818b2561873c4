"""SDXL (base, refiner, inpaint and the distilled SSD-1B/Vega/KOALA): a UNet whose transformer
blocks have head size 64 at every level; each makes one self-attention call over the level's image
tokens (4096 at the 64² level of a 1024² image, 1024 at the 32² level; tiled multi-diffusion makes
them per tile) and one cross-attention call to the 77-token text."""
from . import Family, register

SDXL = register(Family(
    name="SDXL", config_classes=("SDXL", "SDXLRefiner"),  # SDXL's subclasses (SSD1B, Vega, KOALA, ip2p) come along
    diffusion_models=("comfy.ldm.modules.diffusionmodules.openaimodel.UNetModel",)))
