"""Z-Image (ZImage, a NextDiT): main layers over text + image tokens, noise-refiner layers over
image tokens, context-refiner layers over the text alone (head size 128)."""
from . import CallSite, Family, register
from ..reasons import Reason

Z_IMAGE = register(Family(
    name="Z-Image",
    config_classes=("ZImage",),
    diffusion_models=("comfy.ldm.lumina.model.NextDiT",),
    call_sites=(
        CallSite("main layers: joint text + image attention", None),
        CallSite("noise-refiner layers: image tokens", None),
        CallSite("context-refiner layers: text tokens only", Reason.TOO_SHORT,
                 "a few hundred tokens at most, far below the threshold"),
        CallSite("Z-Image Control layers (ZImageFunControlnet model patch, ComfyUI >= 0.8)", None,
                 "the patch runs the control blocks without transformer_options (and without a mask); "
                 "were a mask passed, it would stay on SDPA (`mask`)", unreached=True),
    ),
))
