"""Qwen-Image: 60 dual-stream blocks, one joint text+image attention call each through
``optimized_attention_masked`` (head size 128). ComfyUI 0.3.75 passes it no text mask; 0.12 on do: an
all-true one masks nothing (dropped), one with zeros masks text keys that come before the image's, the
same for every query (the others are gathered, a copy); any other mask stays on SDPA. Its ControlNet
(comfy/ldm/qwen_image/controlnet.py) runs in the sampling loop and is handed the Scope's override."""
from . import TEXT_FIRST, Family, register

QWEN_IMAGE = register(Family(name="Qwen-Image", config_classes=("QwenImage",),
                             diffusion_models=("comfy.ldm.qwen_image.model.QwenImageTransformer2DModel",),
                             scope_controlnets=True, joint_text=TEXT_FIRST))
