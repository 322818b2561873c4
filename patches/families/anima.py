"""Anima (Anima; comfy.ldm.anima.model.Anima): Cosmos Predict2 2B's blocks (28 blocks, 16 heads of
128) behind an LLM adapter that maps the Qwen3 0.6B text onto T5 token ids. Per block one
self-attention over the image tokens (4096 at 1024²) and one cross-attention to the adapted text,
which ComfyUI pads to 512 tokens; (B, H, N, D) tensors, no mask, transformer_options passed. The
adapter's 6 blocks (self-attention over the T5 ids, cross-attention to the Qwen3 text) call PyTorch
SDPA themselves, once a prompt under inference mode (model_base.Anima.extra_conds), else in every
forward: they never reach the override."""
from . import CallSite, Family, register

ANIMA = register(Family(
    name="Anima",
    config_classes=("Anima",),
    diffusion_models=("comfy.ldm.anima.model.Anima",),
    call_sites=(
        CallSite("self-attention over the image tokens", None),
        CallSite("cross-attention to the adapted text (512 keys)", None,
                 "ComfyUI pads the adapter's output to 512 tokens: at the default key floor, so it qualifies"),
        CallSite("LLM adapter blocks (self- and cross-attention over the text)", None,
                 "PyTorch SDPA called directly (anima/model.py:80)", unreached=True),
    ),
    needs="comfy/ldm/anima (added to ComfyUI in 2026)",
    comfyui="0.33.0",  # the oldest release read here (the first to have it is not known here)
))
