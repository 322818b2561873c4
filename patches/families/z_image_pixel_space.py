"""Z-Image pixel space (ZImagePixelSpace, a ZImage subclass): Z-Image's NextDiT (NextDiTPixelSpace)
over RGB patches instead of latents, its final layer replaced by a per-patch MLP decoder (no
attention). Per step: context-refiner layers over the text alone, noise-refiner layers over the
image patches, main layers over text + image, head size 128 (30 heads of 128, no grouping).
Text and image are each padded with learned tokens to a multiple of 32 where the checkpoint has
pad tokens (Z-Image's have); ComfyUI hands these layers no mask (patchify_and_embed drops the
text's). ZImage claims the parent class (z_image.py); recognise() meets ZImagePixelSpace first on
the config's MRO."""
from . import CallSite, Family, register
from ..reasons import Reason

Z_IMAGE_PIXEL_SPACE = register(Family(
    name="Z-Image pixel space",
    config_classes=("ZImagePixelSpace",),
    diffusion_models=("comfy.ldm.lumina.model.NextDiTPixelSpace",),
    call_sites=(
        CallSite("main layers: joint text + image attention", None),
        CallSite("noise-refiner layers: image patches", None),
        CallSite("context-refiner layers: text tokens only", Reason.TOO_SHORT,
                 "the Qwen3 text, a few hundred tokens at most (padded to a multiple of 32)"),
        CallSite("Z-Image Control layers (the ZImageFunControlnet model patch)", None,
                 "the patch runs its blocks without transformer_options", unreached=True),
    ),
    needs="comfy.ldm.lumina.model.NextDiTPixelSpace (added to ComfyUI in March 2026, its PR 12709)",
    comfyui="0.33.0",  # the oldest release read here (the first to have it is not known here)
))
