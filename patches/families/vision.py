"""Vision models (not diffusion models: nothing samples them), declined by name: a Scope on one passes it
through unchanged and Status says why. None of their attention calls carries transformer_options."""
from . import Family, register

_NEVER = "not a diffusion model: its attention calls never reach the Scope"

SAM3 = register(Family(name="SAM 3", config_classes=("SAM3",), added_in={"0.20.0": ("SAM31",)},  # its subclass
                       diffusion_models=("comfy.ldm.sam3.detector.SAM3Model",), opens=False, comfyui="0.20.0",
                       why_not=f"a vision model (segmentation), {_NEVER}"))

DEPTH_ANYTHING_3 = register(Family(
    name="Depth Anything 3", config_classes=("DepthAnything3",), opens=False, comfyui="0.25.0",
    diffusion_models=("comfy.ldm.depth_anything_3.model.DepthAnything3Net",),
    why_not=f"a vision model (depth estimation), {_NEVER}"))

RT_DETR_V4 = register(Family(name="RT-DETR v4", config_classes=("RT_DETR_v4",), opens=False, comfyui="0.19.0",
                             diffusion_models=("comfy.ldm.rt_detr.rtdetr_v4.RTv4",),
                             why_not=f"a vision model (object detection), {_NEVER}"))
