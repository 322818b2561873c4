"""Kandinsky 5.0: Video Lite (2B: 28 heads of 64, 2 text + 32 visual blocks) and Video Pro (19B: 32 heads
of 128, 4 + 60), T2V and I2V, and Image Lite (Kandinsky5Image, a Kandinsky5 subclass: 20 heads of 128,
2 + 50), one diffusion model class, two families so the status names the model. Text blocks attend
over the Qwen2.5-VL prompt alone; each visual block makes video self-attention (a token count over 8192
chunks the RoPE and projections, still one call), then cross-attention of the video to the prompt. No
mask reaches attention (the text encoder's attention_mask is passed to the model, which ignores it),
and ComfyUI has no NABLA sparse attention: the 10 s checkpoints attend in full."""
from . import Family, register

_MODEL = ("comfy.ldm.kandinsky5.model.Kandinsky5",)

KANDINSKY5 = register(Family(name="Kandinsky 5", config_classes=("Kandinsky5",), diffusion_models=_MODEL))

KANDINSKY5_IMAGE = register(Family(
    name="Kandinsky 5 Image", config_classes=("Kandinsky5Image",),  # a Kandinsky5 subclass: met first on its MRO
    diffusion_models=_MODEL))
