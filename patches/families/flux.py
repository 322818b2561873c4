"""FLUX.1 (dev, schnell, inpaint/fill): 19 double-stream + 38 single-stream blocks, one joint
text+image attention call each, head size 128. Its ControlNets run inside the sampling loop."""
from . import CallSite, Family, register
from ..reasons import Reason

FLUX1 = register(Family(
    name="FLUX.1",
    config_classes=("Flux",),  # and its subclasses FluxInpaint, FluxSchnell
    diffusion_models=("comfy.ldm.flux.model.Flux",),
    call_sites=(
        CallSite("double-stream joint attention (text + image tokens)", None),
        CallSite("single-stream joint attention (text + image tokens)", None),
        CallSite("ControlNet blocks (comfy/ldm/flux/controlnet.py) in the sampling loop", None,
                 "ComfyUI calls them without transformer_options; the scope hands them its override"),
        CallSite("any call with an attention mask that masks something", Reason.MASK,
                 "SageAttention takes no mask; an all-true / all-zero mask is dropped, and keys masked for every "
                 "query are left out (sliced off, or the others gathered): those calls qualify"),
    ),
    scope_controlnets=True,
))
