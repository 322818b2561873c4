"""Audio models, declined by name: a Scope on one passes it through unchanged and Status says why.

Stable Audio Open 1.0 (StableAudio) and Stable Audio 3 (a subclass, its own family): a DiT over the audio
latent (about 21.5 frames a second; Open 1.0: 1,536 wide, 24 heads, head size 64, 1,024 frames for its 47 s),
per layer a self-attention (with Open 1.0's prepended global token) and a cross-attention to the T5 prompt
and the seconds tokens (about 130 keys), through comfy/ldm/audio/dit.py's Attention with transformer_options.
ComfyUI 0.3.75 makes them like any other call; 0.33 makes every one with low_precision_attention=False
(comfy/ldm/audio/dit.py), which keeps it on SDPA. ACE-Step v1: its self-attention is linear attention (LiteLA) that
never calls ComfyUI's attention, its lyric encoder computes its own softmax; only the cross-attention to the
prompt and lyrics (head size 128) calls it (comfy/ldm/ace/attention.py), with a mask. ACE-Step 1.5 (head size 128,
sliding-window masks) and MiniMax Music 3 (head size 64, about 690 tokens a window) make every call without
transformer_options (comfy/ldm/ace/ace_step15.py, comfy/ldm/minimax_music/dit.py): none would reach the Scope."""
from . import Family, register

_AUDIO_DIT = ("comfy.ldm.audio.dit.AudioDiffusionTransformer",)
_UNREACHED = "an audio model whose attention calls carry no transformer_options: none would reach the Scope"

STABLE_AUDIO = register(Family(
    name="Stable Audio", config_classes=("StableAudio",), diffusion_models=_AUDIO_DIT, opens=False,
    why_not=("an audio model: not measured against SDPA, and newer ComfyUI (0.33) makes every one of its attention "
             "calls ask for SDPA (low_precision_attention=False)")))

STABLE_AUDIO_3 = register(Family(
    name="Stable Audio 3", config_classes=("StableAudio3",),  # a StableAudio subclass, named first
    diffusion_models=_AUDIO_DIT, opens=False,
    why_not="an audio model whose every attention call asks for SDPA (low_precision_attention=False)"))

ACE_STEP = register(Family(
    name="ACE-Step", config_classes=("ACEStep",), diffusion_models=("comfy.ldm.ace.model.ACEStepTransformer2DModel",),
    opens=False, why_not=("an audio model: its self-attention is linear attention outside ComfyUI's attention, and "
                          "its cross-attention to the prompt and lyrics is short and masked")))

ACE_STEP_15 = register(Family(name="ACE-Step 1.5", config_classes=("ACEStep15",), opens=False, why_not=_UNREACHED,
                              diffusion_models=("comfy.ldm.ace.ace_step15.AceStepConditionGenerationModel",)))

MINIMAX_MUSIC_3 = register(Family(name="MiniMax Music 3", config_classes=("MiniMaxMusic3",), opens=False,
                                  diffusion_models=("comfy.ldm.minimax_music.dit.MiniMaxMusic3DiT",),
                                  why_not=_UNREACHED))
