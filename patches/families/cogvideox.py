"""CogVideoX (2B, 5B, 1.5 5B; T2V, I2V, and Fun inpainting such as VOID): CogVideoX_T2V and its
subclasses CogVideoX_I2V and CogVideoX_Inpaint, one diffusion model class. Each block makes one joint
self-attention over the T5 text (always 226 tokens: the tokenizer pads every prompt, the padding is
attended as the model was trained, never masked) followed by the video tokens, head size 64 (2B: 30
heads, 5B: 48); the I2V and inpainting latents are concatenated as channels: the same tokens, the same
call. No mask, no low_precision_attention opt-out, and no block position (``total_blocks`` is not set:
a first/last-blocks window cannot apply)."""
from . import Family, register

COGVIDEOX = register(Family(
    name="CogVideoX", config_classes=("CogVideoX_T2V",),  # and its subclasses CogVideoX_I2V, CogVideoX_Inpaint
    diffusion_models=("comfy.ldm.cogvideo.model.CogVideoXTransformer3DModel",)))
