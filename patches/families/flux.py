"""FLUX.1 (dev, schnell, inpaint/fill, Kontext): 19 double-stream + 38 single-stream blocks, one joint
text + image attention call each, head size 128. Its ControlNets (comfy/ldm/flux/controlnet.py) run
inside the sampling loop and ComfyUI calls them without transformer_options: the Scope hands them its
override. ComfyUI passes a mask only with attention_mask_img_shape (a regional or Redux bias); an
all-true / all-zero one is dropped, keys masked for every query are left out, any other stays on SDPA."""
from . import TEXT_FIRST, Family, register

FLUX1 = register(Family(
    name="FLUX.1", config_classes=("Flux",),  # and its subclasses FluxInpaint, FluxSchnell
    diffusion_models=("comfy.ldm.flux.model.Flux",), scope_controlnets=True, joint_text=TEXT_FIRST))
