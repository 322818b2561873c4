"""Qwen-Image: one joint text + image call per dual-stream block, text first, head size 128. A text mask
with zeros masks keys the same for every query (the kept keys gathered). Its ControlNet runs in the
sampling loop and is handed the Scope's override."""
from . import TEXT_FIRST, Family, register

QWEN_IMAGE = register(Family(name="Qwen-Image", config_classes=("QwenImage",),
                             diffusion_models=("comfy.ldm.qwen_image.model.QwenImageTransformer2DModel",),
                             scope_controlnets=True, joint_text=TEXT_FIRST))
