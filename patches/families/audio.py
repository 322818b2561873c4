"""Audio models, declined by name: a Scope on one passes it through unchanged and Status says why.
Stable Audio (Open 1.0) and Stable Audio 3 are not measured, and newer ComfyUI makes their every call
with low_precision_attention=False; ACE-Step's self-attention is linear attention outside ComfyUI's;
ACE-Step 1.5 and MiniMax Music 3 make every call without transformer_options."""
from . import Family, register

_AUDIO_DIT = ("comfy.ldm.audio.dit.AudioDiffusionTransformer",)
_UNREACHED = "an audio model whose attention calls carry no transformer_options: none would reach the Scope"

STABLE_AUDIO = register(Family(
    name="Stable Audio", config_classes=("StableAudio",), diffusion_models=_AUDIO_DIT, opens=False,
    why_not=("an audio model: not measured against SDPA, and newer ComfyUI makes every one of its attention "
             "calls ask for SDPA (low_precision_attention=False)")))

STABLE_AUDIO_3 = register(Family(
    name="Stable Audio 3", config_classes=("StableAudio3",),  # a StableAudio subclass, named first
    diffusion_models=_AUDIO_DIT, opens=False, comfyui="0.22.0",
    why_not="an audio model whose every attention call asks for SDPA (low_precision_attention=False)"))

ACE_STEP = register(Family(
    name="ACE-Step", config_classes=("ACEStep",), diffusion_models=("comfy.ldm.ace.model.ACEStepTransformer2DModel",),
    opens=False, why_not=("an audio model: its self-attention is linear attention outside ComfyUI's attention, and "
                          "its cross-attention to the prompt and lyrics is short and masked")))

ACE_STEP_15 = register(Family(name="ACE-Step 1.5", config_classes=("ACEStep15",), opens=False, why_not=_UNREACHED,
                              diffusion_models=("comfy.ldm.ace.ace_step15.AceStepConditionGenerationModel",),
                              comfyui="0.12.0"))

MINIMAX_MUSIC_3 = register(Family(name="MiniMax Music 3", config_classes=("MiniMaxMusic3",), opens=False,
                                  diffusion_models=("comfy.ldm.minimax_music.dit.MiniMaxMusic3DiT",),
                                  why_not=_UNREACHED, comfyui="0.33.0"))
