"""Kandinsky 5.0 Video (Lite, Pro) and Image Lite: one diffusion model class, two families so that Status
names the model. Text blocks attend over the prompt alone; each visual block makes one video
self-attention and one cross-attention to the prompt, no mask."""
from . import Family, register

_MODEL = ("comfy.ldm.kandinsky5.model.Kandinsky5",)

KANDINSKY5 = register(Family(name="Kandinsky 5", config_classes=("Kandinsky5",), diffusion_models=_MODEL,
                             comfyui="0.4.0"))

KANDINSKY5_IMAGE = register(Family(
    name="Kandinsky 5 Image", config_classes=("Kandinsky5Image",),  # a Kandinsky5 subclass: met first on its MRO
    diffusion_models=_MODEL, comfyui="0.4.0"))
