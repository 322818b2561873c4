"""ERNIE-Image, declined by name: its joint attention is called without the model's transformer_options,
so no call can reach the Scope's override."""
from . import Family, register

ERNIE_IMAGE = register(Family(
    name="ERNIE-Image", config_classes=("ErnieImage",), diffusion_models=("comfy.ldm.ernie.model.ErnieImageModel",),
    opens=False, comfyui="0.19.0",
    why_not=("its attention calls ComfyUI's optimized_attention without the model's transformer_options "
             "(comfy/ldm/ernie/model.py), so none can reach the Scope")))
