"""FLUX.2: joint attention like FLUX.1's (head size 128), the text padded to at least 512 tokens. Its
ControlNets run in the sampling loop, as FLUX.1's."""
from . import Family, register

FLUX2 = register(Family(name="FLUX.2", config_classes=("Flux2",), diffusion_models=("comfy.ldm.flux.model.Flux",),
                        scope_controlnets=True))
