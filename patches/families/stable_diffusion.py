"""SD1.5 and SD2: recognised so that the node can say why it does not open for them."""
from . import Family, register

_UNET = ("comfy.ldm.modules.diffusionmodules.openaimodel.UNetModel",)

SD15 = register(Family(
    name="SD1.5",
    config_classes=("SD15",),
    diffusion_models=_UNET,
    opens=False,
    why_not=("unmeasured: its head sizes are 40, 80 and 160; SageAttention 1 takes none of them, SageAttention 2 "
             "pads 40 and 80 to 64 and 128 (work that may not pay at SD1.5's lengths) and takes no 160, and no "
             "SD1.5 run has been checked against SDPA"),
))

SD2 = register(Family(
    name="SD2",
    config_classes=("SD20",),
    diffusion_models=_UNET,
    opens=False,
    why_not="unmeasured (head size 64 would qualify, but no SD2 run has been checked against SDPA)",
))
