"""LTX-2 / LTX-2.3 (audio + video) and LTX-Video. An LTX-2 block makes six calls: video self-attention and
the video's cross-attention to the text (head size 128), and four audio calls (head size 64). The text
reaches the blocks through connectors that run once before the steps, outside the Scope. LTX-Video's
blocks make video self-attention and cross-attention to the T5 prompt. The text is never in the
self-attention calls (TEXT_NONE)."""
from . import TEXT_NONE, Family, register

LTX2 = register(Family(
    name="LTX-2", config_classes=("LTXAV",),  # LTX-2 (19B) and LTX-2.3 (22B): one config class, the metadata differs
    diffusion_models=("comfy.ldm.lightricks.av_model.LTXAVModel",), joint_text=TEXT_NONE, comfyui="0.8.0"))

LTXV = register(Family(name="LTX-Video", config_classes=("LTXV",),
                       diffusion_models=("comfy.ldm.lightricks.model.LTXVModel",), joint_text=TEXT_NONE))
