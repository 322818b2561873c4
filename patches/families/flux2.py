"""FLUX.2: double- and single-stream joint attention like FLUX.1 (head size 128), text padded
to at least 512 tokens by ComfyUI. Its ControlNets run in the sampling loop, as FLUX.1's."""
from . import Family, register

FLUX2 = register(Family(name="FLUX.2", config_classes=("Flux2",), diffusion_models=("comfy.ldm.flux.model.Flux",),
                        scope_controlnets=True))
