"""HiDream-O1-Image: a pixel-space Qwen3-VL decoder, head size 128, 32 query heads over 8 key/value heads.
The generated tokens attend to every key through the override (the kernel gets k/v repeated, a copy);
the prompt's causal attention runs on PyTorch SDPA itself and never reaches the Scope."""
from . import Family, register

HIDREAM_O1 = register(Family(name="HiDream-O1", config_classes=("HiDreamO1",),
                             diffusion_models=("comfy.ldm.hidream_o1.model.HiDreamO1Transformer",), comfyui="0.21.1"))
