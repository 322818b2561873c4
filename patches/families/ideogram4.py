"""Ideogram 4 (Ideogram4; Ideogram4Transformer2DModel): a single-stream DiT of 34 layers, each one
joint attention over the Qwen3-VL text tokens followed by the image's tokens (one a 16x-down latent
position: 4096 at 1024²), head size 256 (18 heads), transformer_options passed. Where the text's
mask has padding, ComfyUI builds a block-diagonal mask from it (padded text tokens attend only to
each other, every other token to all but them): it masks queries as well as keys, so it is no key
padding to slice off; an all-ones mask is dropped before the model. A pass without text (context
None) attends over the image tokens alone. Head size 256 is over SageAttention 1, 2 and 3's sizes
(`head_dim`); comfy-kitchen's int8 kernel (sizes up to 256, masks as SDPA takes them) takes it."""
from . import Family, register

IDEOGRAM4 = register(Family(name="Ideogram 4", config_classes=("Ideogram4",),
                            diffusion_models=("comfy.ldm.ideogram4.model.Ideogram4Transformer2DModel",)))
