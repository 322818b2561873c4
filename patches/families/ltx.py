"""LTX-2 and LTX-2.3 (audio + video, LTXAV; 48 blocks) and LTX-Video (LTXV). An LTX-2 block makes six
calls: video self-attention and the video's cross-attention to the text (head size 128), audio
self-attention, the audio's cross-attention to the text, audio-to-video and video-to-audio (head size
64, the audio stream's). The text reaches the blocks through the model's connectors, which append
learned registers to the prompt up to 1024 tokens, unmasked; the connectors themselves (2 self-attention
layers, LTX-2.3's 8) run once before the steps without transformer_options, never reaching the Scope.
LTX-Video's blocks make video self-attention and cross-attention to the T5 prompt (128 tokens or a few
more, its padding masked). Guides (LTXVAddGuide) at a strength other than 1 or with an attention mask
split video self-attention by a bias mask into noisy and guide queries, made with
low_precision_attention=False (ComfyUI 0.33 read; 0.3.75 has no guide mask). LTX-2 needs
comfy/ldm/lightricks/av_model.py (ComfyUI >= 0.8); ComfyUI 0.3.75 has LTXV only."""
from . import TEXT_NONE, Family, register

LTX2 = register(Family(
    name="LTX-2", config_classes=("LTXAV",),  # LTX-2 (19B) and LTX-2.3 (22B): one config class, the metadata differs
    diffusion_models=("comfy.ldm.lightricks.av_model.LTXAVModel",), joint_text=TEXT_NONE))

LTXV = register(Family(name="LTX-Video", config_classes=("LTXV",),
                       diffusion_models=("comfy.ldm.lightricks.model.LTXVModel",), joint_text=TEXT_NONE))
