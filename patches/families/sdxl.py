"""SDXL (base, refiner, inpaint and the distilled SSD-1B/Vega/KOALA): a UNet whose transformer
blocks have head size 64 at every level; each makes one self- and one cross-attention call."""
from . import CallSite, Family, register
from ..reasons import Reason

SDXL = register(Family(
    name="SDXL",
    config_classes=("SDXL", "SDXLRefiner"),  # SDXL's subclasses (SSD1B, Vega, KOALA, ip2p) come along
    diffusion_models=("comfy.ldm.modules.diffusionmodules.openaimodel.UNetModel",),
    call_sites=(
        CallSite("self-attention at every level (tiled multi-diffusion included)", None,
                 "4096 tokens at most at 1024x1024: below the default threshold; qualifies at 2048x2048 "
                 "or with a lower min_seq_len"),
        CallSite("cross-attention to the 77-token text", Reason.TOO_SHORT, "the key side has 77 tokens"),
    ),
))
