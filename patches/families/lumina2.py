"""Lumina Image 2.0 (Lumina2, a NextDiT): main layers over text + image tokens, noise-refiner layers
over the image tokens, context-refiner layers over the text alone; head size 96 (24 heads, its 8
key/value heads repeated to 24 before the call). SageAttention 1 takes 96, SageAttention 2 pads it
to 128; SageAttention 3 (64 and 128 only) declines it (`head_dim`). Z-Image, a Lumina2 subclass,
is z_image.py's: recognise() meets ZImage first on the config's class MRO."""
from . import CallSite, Family, register
from ..reasons import Reason

LUMINA2 = register(Family(
    name="Lumina 2",
    config_classes=("Lumina2",),
    diffusion_models=("comfy.ldm.lumina.model.NextDiT",),
    call_sites=(
        CallSite("main layers: joint text + image attention", None),
        CallSite("noise-refiner layers: image tokens", None),
        CallSite("context-refiner layers: text tokens only", Reason.TOO_SHORT,
                 "the Gemma text, a few hundred tokens at most. Where the text encoder's mask has zeros ComfyUI "
                 "hands these calls that mask as int64 (1 = keep), which no kernel takes: were the text long "
                 "enough, it would stay on SDPA for it (`mask`). ComfyUI 0.33 drops the caption mask: unmasked"),
    ),
))
