"""ERNIE-Image (8B, and its turbo; ErnieImage): 36 shared-AdaLN layers, one joint self-attention
call each over image + Ministral-3 text tokens (image first), head size 128 (32 heads), no mask.
ComfyUI 0.33 makes that call as optimized_attention(q, k, v, heads, mask=...) without the model's
transformer_options (comfy/ldm/ernie/model.py, ErnieImageAttention.forward): no call can reach the
Scope's override, so the node declines the model by name and passes it through unchanged."""
from . import Family, register

ERNIE_IMAGE = register(Family(
    name="ERNIE-Image", config_classes=("ErnieImage",), diffusion_models=("comfy.ldm.ernie.model.ErnieImageModel",),
    opens=False, why_not=("its attention calls ComfyUI's optimized_attention without the model's transformer_options "
                          "(comfy/ldm/ernie/model.py), so none can reach the Scope")))
