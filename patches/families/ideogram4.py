"""Ideogram 4 (Ideogram4; Ideogram4Transformer2DModel): a single-stream DiT of 34 layers, each one
joint attention over the Qwen3-VL text tokens followed by the image's tokens (one a 16x-down latent
position: 4096 at 1024²), head size 256 (18 heads), transformer_options passed. Where the text's
mask has padding, ComfyUI builds a block-diagonal mask from it (padded text tokens attend only to
each other, every other token to all but them): it masks queries as well as keys, so it is no key
padding to slice off; an all-ones mask is dropped before the model. A pass without text (context
None) attends over the image tokens alone. Head size 256 is over SageAttention 1, 2 and 3's sizes
(`head_dim`); comfy-kitchen's int8 kernel (sizes up to 256, masks as SDPA takes them) takes it."""
from . import CallSite, Family, register
from ..reasons import Reason

IDEOGRAM4 = register(Family(
    name="Ideogram 4",
    config_classes=("Ideogram4",),
    diffusion_models=("comfy.ldm.ideogram4.model.Ideogram4Transformer2DModel",),
    call_sites=(
        CallSite("joint attention, text + image tokens (head size 256)", Reason.HEAD_DIM,
                 "no SageAttention takes 256; with comfy-kitchen's int8 kernel chosen, it qualifies"),
        CallSite("joint attention under the text's padding mask", Reason.HEAD_DIM,
                 "head size 256 first; comfy-kitchen takes the mask too; a kernel taking 256 and no mask: `mask`"),
        CallSite("image-only pass (no text)", Reason.HEAD_DIM, "as the joint calls: head size 256"),
    ),
    needs="comfy/ldm/ideogram4 (added to ComfyUI in June 2026)",
    comfyui="0.33.0",  # the oldest release read here (the first to have it is not known here)
))
