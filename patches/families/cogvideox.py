"""CogVideoX (T2V, I2V, inpainting): one joint self-attention per block over the T5 text (always 226
tokens, never masked) and the video tokens, head size 64; no block position, so a first/last-blocks
window cannot apply."""
from . import Family, register

COGVIDEOX = register(Family(
    name="CogVideoX", config_classes=("CogVideoX_T2V",), comfyui="0.21.0",
    added_in={"0.21.0": ("CogVideoX_I2V", "CogVideoX_Inpaint")},  # its subclasses
    diffusion_models=("comfy.ldm.cogvideo.model.CogVideoXTransformer3DModel",)))
