"""JoyImage (JoyAI-Image-Edit): one joint call per double-stream block over the image (and reference)
tokens and the Qwen3-VL text, image first, head size 128, no mask."""
from . import Family, register

JOY_IMAGE = register(Family(name="JoyImage", config_classes=("JoyImage",),
                            diffusion_models=("comfy.ldm.joyimage.model.JoyImageTransformer3DModel",),
                            comfyui="0.29.0"))
