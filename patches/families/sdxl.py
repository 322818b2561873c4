"""SDXL (base, refiner, inpaint, distilled variants): a UNet whose transformer blocks have head size 64;
each makes one self-attention over its level's image tokens and one cross-attention to the text."""
from . import Family, register

SDXL = register(Family(
    name="SDXL", config_classes=("SDXL", "SDXLRefiner"),  # SDXL's subclasses (SSD1B, Vega, KOALA, ip2p) come along
    diffusion_models=("comfy.ldm.modules.diffusionmodules.openaimodel.UNetModel",)))
