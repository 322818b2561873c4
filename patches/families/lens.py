"""Lens (Microsoft, 3.8B; Lens, a LensTransformer2DModel): 48 dual-stream blocks, one joint call each
over image + GPT-OSS-20B text tokens, image first and text last, head size 64 (24 heads). Every call
carries an additive mask over the keys, built from the text encoder's mask, the same for every
query: for one prompt it masks nothing (dropped; the empty negative prompt has no text tokens at
all); a mask of padded text marks the trailing keys, which are sliced off where the batch holds
one prompt (a batch of several keeps it: `mask`), and a hole in the text is left out by gathering
the other keys. The blocks set their position ("double")."""
from . import CallSite, Family, register
from ..reasons import Reason

LENS = register(Family(
    name="Lens",
    config_classes=("Lens",),
    diffusion_models=("comfy.ldm.lens.model.LensTransformer2DModel",),
    call_sites=(
        CallSite("dual-stream joint attention (image + text tokens) under the text mask", None,
                 "the mask of an unpadded prompt masks nothing: dropped; padded text keys are the last ones: "
                 "sliced off"),
        CallSite("joint attention under a text mask with a hole", None,
                 "the same key masked for every query: the other keys gathered (a copy), the call qualifies"),
        CallSite("joint attention under padding in a batch of prompts", Reason.MASK,
                 "a mask per prompt: SageAttention takes no mask"),
    ),
    needs="comfy/ldm/lens, ComfyUI >= 0.33 (the release read; 0.3.75 lacks it)",
    comfyui="0.33.0",
))
