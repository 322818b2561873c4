"""Vision models (not diffusion models: nothing samples them), declined by name: a Scope on one passes it
through unchanged and Status says why. None of their attention calls carries transformer_options, so none
would reach the Scope.

SAM 3 and SAM 3.1 (SAM3, and SAM31 through it; comfy/ldm/sam3): the detector's and tracker's attention and
the SAM mask decoder (sam3/detector.py, sam.py, tracker.py), every call with
low_precision_attention=False. Depth Anything 3: a DINOv2 backbone (comfy/image_encoders/dino2.py) and its
camera encoder (depth_anything_3/camera.py), both through optimized_attention_for_device(small_input=True).
RT-DETR v4: its decoder's self-attention over the object queries (rt_detr/rtdetr_v4.py, the same way);
its cross-attention is deformable (sampled features, no attention call)."""
from . import Family, register

_NEVER = "not a diffusion model: its attention calls never reach the Scope"

SAM3 = register(Family(name="SAM 3", config_classes=("SAM3",),  # and its subclass SAM31
                       diffusion_models=("comfy.ldm.sam3.detector.SAM3Model",), opens=False,
                       why_not=f"a vision model (segmentation), {_NEVER}"))

DEPTH_ANYTHING_3 = register(Family(
    name="Depth Anything 3", config_classes=("DepthAnything3",), opens=False,
    diffusion_models=("comfy.ldm.depth_anything_3.model.DepthAnything3Net",),
    why_not=f"a vision model (depth estimation), {_NEVER}"))

RT_DETR_V4 = register(Family(name="RT-DETR v4", config_classes=("RT_DETR_v4",), opens=False,
                             diffusion_models=("comfy.ldm.rt_detr.rtdetr_v4.RTv4",),
                             why_not=f"a vision model (object detection), {_NEVER}"))
