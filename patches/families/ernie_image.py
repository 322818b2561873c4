"""ERNIE-Image (8B, and its turbo; ErnieImage): 36 shared-AdaLN layers, one joint self-attention
call each over image + Ministral-3 text tokens (image first), head size 128 (32 heads), no mask.
ComfyUI 0.33 makes that call as optimized_attention(q, k, v, heads, mask=...) without the model's
transformer_options (comfy/ldm/ernie/model.py, ErnieImageAttention.forward): no call can reach the
Scope's override, so the node declines the model by name and passes it through unchanged."""
from . import CallSite, Family, register

ERNIE_IMAGE = register(Family(
    name="ERNIE-Image",
    config_classes=("ErnieImage",),
    diffusion_models=("comfy.ldm.ernie.model.ErnieImageModel",),
    call_sites=(
        CallSite("joint image + text self-attention (one call per layer)", None,
                 "called without transformer_options", unreached=True),
    ),
    opens=False,
    why_not=("its attention calls ComfyUI's optimized_attention without the model's transformer_options "
             "(comfy/ldm/ernie/model.py), so none can reach the Scope"),
    needs="comfy/ldm/ernie, ComfyUI >= 0.33 (the release read; 0.3.75 lacks it)",
    comfyui="0.33.0",
))
