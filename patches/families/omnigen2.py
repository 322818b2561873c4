"""OmniGen2: main layers over text + reference-image + image tokens, noise-refiner layers over the
image tokens, reference-image-refiner layers over each reference (when there are references),
context-refiner layers over the Qwen2.5-VL text alone; head size 120 (21 heads over 7 key/value heads:
repeated before the call up to ComfyUI 0.12, handed grouped (enable_gqa) by 0.33, where the kernel gets
a copy repeated to 21). SageAttention 2 pads 120 to 128; SageAttention 1 and 3 decline it (`head_dim`).
ComfyUI 0.3.75 cannot pass the context refiner a mask that masks (its RoPE is built for the unmasked
tokens and the model raises)."""
from . import Family, register

OMNIGEN2 = register(Family(name="Omnigen2", config_classes=("Omnigen2",),
                           diffusion_models=("comfy.ldm.omnigen.omnigen2.OmniGen2Transformer2DModel",)))
