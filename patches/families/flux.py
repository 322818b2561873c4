"""FLUX.1 (dev, schnell, fill, Kontext): one joint text + image call per double- and single-stream block,
text first, head size 128. Its ControlNets run inside the sampling loop without transformer_options: the
Scope hands them its override."""
from . import TEXT_FIRST, Family, register

FLUX1 = register(Family(
    name="FLUX.1", config_classes=("Flux",),  # and its subclasses FluxInpaint, FluxSchnell
    diffusion_models=("comfy.ldm.flux.model.Flux",), scope_controlnets=True, joint_text=TEXT_FIRST))
