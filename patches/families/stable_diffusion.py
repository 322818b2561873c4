"""SD1.5 and SD2: recognised so that the node can say why it does not open for them."""
from . import Family, register

_UNET = ("comfy.ldm.modules.diffusionmodules.openaimodel.UNetModel",)

SD15 = register(Family(
    name="SD1.5",
    config_classes=("SD15",),
    diffusion_models=_UNET,
    opens=False,
    why_not="head sizes 40/80/160 never qualify (SageAttention takes 64 and 128)",
))

SD2 = register(Family(
    name="SD2",
    config_classes=("SD20",),
    diffusion_models=_UNET,
    opens=False,
    why_not="unmeasured (head size 64 would qualify, but no SD2 run has been checked against SDPA)",
))
