"""Kandinsky 5.0: Video Lite (2B: 28 heads of 64, 2 text + 32 visual blocks) and Video Pro (19B: 32 heads
of 128, 4 + 60), T2V and I2V, and Image Lite (Kandinsky5Image, a Kandinsky5 subclass: 20 heads of 128,
2 + 50), one diffusion model class, two families so the status names the model. Text blocks attend
over the Qwen2.5-VL prompt alone; each visual block makes video self-attention, then cross-attention of
the video to the prompt. No mask reaches attention (the text encoder's attention_mask is passed to the
model, which ignores it), and ComfyUI has no NABLA sparse attention: the 10 s checkpoints attend in full."""
from . import CallSite, Family, register
from ..reasons import Reason

_MODEL = ("comfy.ldm.kandinsky5.model.Kandinsky5",)
_RELEASE = dict(needs="comfy/ldm/kandinsky5/model.py (ComfyUI PR 10988, merged December 2025)",
                comfyui="0.33.0")  # the oldest release read here (the first one to have it is not known here)
_SITES = (
    CallSite("text blocks: self-attention over the prompt alone", Reason.TOO_SHORT,
             "the prompt after its system template: tens to a few hundred tokens"),
    CallSite("visual blocks: self-attention over the video / image tokens", None,
             "a token count over 8192 chunks the RoPE and projections, still one call"),
    CallSite("visual blocks: cross-attention of the video / image tokens to the prompt", Reason.TOO_SHORT,
             "the key side is the prompt, under the floor's 512 keys"),
)

KANDINSKY5 = register(Family(
    name="Kandinsky 5",
    config_classes=("Kandinsky5",),
    diffusion_models=_MODEL,
    call_sites=_SITES,
    **_RELEASE,
))

KANDINSKY5_IMAGE = register(Family(
    name="Kandinsky 5 Image",
    config_classes=("Kandinsky5Image",),  # a Kandinsky5 subclass: met first on its class's MRO
    diffusion_models=_MODEL,
    call_sites=_SITES,
    **_RELEASE,
))
