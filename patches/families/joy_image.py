"""JoyImage (JoyAI-Image-Edit; JoyImage, a JoyImageTransformer3DModel): 40 double-stream blocks, one
joint call each over image (+ reference image) tokens and the Qwen3-VL-8B text, image first, head
size 128 (32 heads of hidden 4096). (B, N, H*D) tensors, no mask: the text encoder's mask never
reaches the model, and its prompt is not padded. The blocks set their position (block_type
"double")."""
from . import Family, register

JOY_IMAGE = register(Family(name="JoyImage", config_classes=("JoyImage",),
                            diffusion_models=("comfy.ldm.joyimage.model.JoyImageTransformer3DModel",)))
