"""PixelDiT and PiD (its pixel decoder of a latent model's image): patch blocks of one joint text + image
call each (head size 64), then pixel blocks of one self-attention each (head size 72), no mask. PiD
subclasses PixelDiTT2I: recognise() meets it first on the config's MRO."""
from . import Family, register

PIXELDIT = register(Family(name="PixelDiT", config_classes=("PixelDiTT2I",),
                           diffusion_models=("comfy.ldm.pixeldit.model.PixDiT_T2I",), comfyui="0.23.0"))

PID = register(Family(name="PiD", config_classes=("PiD",), diffusion_models=("comfy.ldm.pixeldit.pid.PidNet",),
                      comfyui="0.23.0"))
