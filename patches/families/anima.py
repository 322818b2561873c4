"""Anima (Anima; comfy.ldm.anima.model.Anima): Cosmos Predict2 2B's blocks (28 blocks, 16 heads of
128) behind an LLM adapter that maps the Qwen3 0.6B text onto T5 token ids. Per block one
self-attention over the image tokens (4096 at 1024²) and one cross-attention to the adapted text,
which ComfyUI pads to 512 tokens; (B, H, N, D) tensors, no mask, transformer_options passed. The
adapter's 6 blocks (self-attention over the T5 ids, cross-attention to the Qwen3 text) call PyTorch
SDPA themselves, once a prompt under inference mode (model_base.Anima.extra_conds), else in every
forward: they never reach the override."""
from . import Family, register

ANIMA = register(Family(name="Anima", config_classes=("Anima",), diffusion_models=("comfy.ldm.anima.model.Anima",)))
