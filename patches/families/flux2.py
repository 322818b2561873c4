"""FLUX.2: double- and single-stream joint attention like FLUX.1 (head size 128), text padded
to at least 512 tokens by ComfyUI."""
from . import CallSite, Family, register
from ..reasons import Reason

FLUX2 = register(Family(
    name="FLUX.2",
    config_classes=("Flux2",),
    diffusion_models=("comfy.ldm.flux.model.Flux",),
    call_sites=(
        CallSite("double-stream joint attention (text + image tokens)", None),
        CallSite("single-stream joint attention (text + image tokens)", None),
        CallSite("any call with an attention mask that masks something", Reason.MASK,
                 "SageAttention takes no mask"),
    ),
    scope_controlnets=True,
))
