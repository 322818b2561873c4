"""PixelDiT (PixelDiTT2I, NVIDIA PixelDiT-1300M) and PiD (the Pixel Diffusion Decoder, a PixelDiT
whose patch blocks also take a latent of a latent-space model's image: decoding it to pixels 4x up;
its latent branch, convolutions and gates before the blocks, attends to nothing).
One pixel-space body: 14 MMDiT patch blocks, each one joint attention over the Gemma-2 text (300
tokens) and the image's 16x16-pixel patches (4096 at 1024²), head size 64 (24 heads); then 2
pixel blocks, each one self-attention over the patches again (one token a patch), head size 72
(1152 / 16 heads). Both pass transformer_options and no mask (the text's mask is never handed on).
SageAttention 2 pads 72 to 128; SageAttention 1 (64, 96, 128) and 3 (64, 128) decline it."""
from . import Family, register

PIXELDIT = register(Family(name="PixelDiT", config_classes=("PixelDiTT2I",),
                           diffusion_models=("comfy.ldm.pixeldit.model.PixDiT_T2I",)))

PID = register(Family(  # PiD subclasses PixelDiTT2I: recognise() meets PiD first on the config's MRO
    name="PiD", config_classes=("PiD",), diffusion_models=("comfy.ldm.pixeldit.pid.PidNet",)))
