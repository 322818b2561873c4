"""HiDream-I1 / E1: 16 double-stream and 32 single-stream blocks, one joint attention call each
over the image tokens, the T5 text (128 tokens) and two Llama layers' text (about 128 each), head
size 128 (20 heads); (B, N, H*D) tensors, no mask, no block position."""
from . import Family, register

HIDREAM = register(Family(name="HiDream", config_classes=("HiDream",),
                          diffusion_models=("comfy.ldm.hidream.model.HiDreamImageTransformer2DModel",)))
