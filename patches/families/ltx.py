"""LTX-2 (audio + video, LTXAV) and LTX-Video (LTXV): only video self-attention is long enough.
LTX-2 needs comfy/ldm/lightricks/av_model.py (ComfyUI >= 0.8); ComfyUI 0.3.75 has LTXV only."""
from . import CallSite, Family, register
from ..reasons import Reason

_TEXT_CROSS = CallSite("cross-attention to the text", Reason.TOO_SHORT,
                       "the text is short (and masked): the key side is below the threshold")

LTX2 = register(Family(
    name="LTX-2",
    config_classes=("LTXAV",),
    diffusion_models=("comfy.ldm.lightricks.av_model.LTXAVModel",),
    call_sites=(
        CallSite("video self-attention", None),
        CallSite("audio self-attention", Reason.TOO_SHORT, "about 25 audio tokens a second"),
        CallSite("audio-to-video and video-to-audio cross-attention", Reason.TOO_SHORT,
                 "one side is the audio"),
        _TEXT_CROSS,
    ),
    needs="comfy/ldm/lightricks/av_model.py, ComfyUI >= 0.8",
))

LTXV = register(Family(
    name="LTX-Video",
    config_classes=("LTXV",),
    diffusion_models=("comfy.ldm.lightricks.model.LTXVModel",),
    call_sites=(CallSite("video self-attention", None), _TEXT_CROSS),
))
