"""Anima: Cosmos Predict2 2B's blocks (head size 128) behind an LLM adapter. Per block one self-attention
over the image tokens and one cross-attention to the adapted text, both with transformer_options; the
adapter calls PyTorch SDPA itself and never reaches the Scope."""
from . import Family, register

ANIMA = register(Family(name="Anima", config_classes=("Anima",), diffusion_models=("comfy.ldm.anima.model.Anima",),
                        comfyui="0.11.0"))
