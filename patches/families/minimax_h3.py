"""MiniMax H3 (audio + video): each block one self-attention over one packed sequence of text, reference,
audio and video tokens, head size 128, no mask, no block position. Its token refiner runs outside the
Scope (no transformer_options)."""
from . import Family, register

MINIMAX_H3 = register(Family(name="MiniMax H3", config_classes=("MiniMaxH3",),
                             diffusion_models=("comfy.ldm.minimax.model.MiniMaxH3Model",), comfyui="0.30.0"))
