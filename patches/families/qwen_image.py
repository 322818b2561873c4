"""Qwen-Image: 60 dual-stream blocks, one joint text+image attention call each through
``optimized_attention_masked`` (head size 128). Its ControlNet runs in the sampling loop."""
from . import CallSite, Family, register
from ..reasons import Reason

QWEN_IMAGE = register(Family(
    name="Qwen-Image",
    config_classes=("QwenImage",),
    diffusion_models=("comfy.ldm.qwen_image.model.QwenImageTransformer2DModel",),
    call_sites=(
        CallSite("joint text + image attention", None,
                 "ComfyUI 0.3.75 passes no text mask here; 0.12 does, and an all-true text mask masks "
                 "nothing: dropped"),
        CallSite("ControlNet blocks (comfy/ldm/qwen_image/controlnet.py) in the sampling loop", None,
                 "handed the scope's override like FLUX.1's"),
        CallSite("joint attention under a text mask with zeros (ComfyUI 0.12 on)", None,
                 "the masked text keys, the same for every query, come before the image's: the others are "
                 "gathered (a copy) and the call qualifies"),
        CallSite("joint or ControlNet attention under any other mask", Reason.MASK, "SageAttention takes no mask"),
    ),
    scope_controlnets=True,
))
