"""LTX-2 and LTX-2.3 (audio + video, LTXAV; 48 blocks) and LTX-Video (LTXV). An LTX-2 block makes six
calls: video self-attention and the video's cross-attention to the text (head size 128), audio
self-attention, the audio's cross-attention to the text, audio-to-video and video-to-audio (head size
64, the audio stream's). The text reaches the blocks through the model's connectors, which append
learned registers to the prompt up to 1024 tokens, unmasked. Guides (LTXVAddGuide) at a strength
other than 1 or with an attention mask split video self-attention by a bias mask into noisy and guide
queries, made with low_precision_attention=False (ComfyUI 0.33 read). LTX-2 needs
comfy/ldm/lightricks/av_model.py (ComfyUI >= 0.8); ComfyUI 0.3.75 has LTXV only."""
from . import CallSite, Family, register
from ..reasons import Reason

_GUIDE_MASK = CallSite(
    "video self-attention under a guide's attention mask (noisy queries, then the guides' queries)",
    Reason.LOW_PRECISION_OPT_OUT,
    "newer ComfyUI (0.33 read; 0.3.75 has no guide mask) makes both with low_precision_attention=False "
    "(lightricks/model.py:407, 412): SDPA, before their bias mask (a log-strength per guide token) is looked at")

LTX2 = register(Family(
    name="LTX-2",
    config_classes=("LTXAV",),  # LTX-2 (19B) and LTX-2.3 (22B): one config class, the metadata differs
    diffusion_models=("comfy.ldm.lightricks.av_model.LTXAVModel",),
    call_sites=(
        CallSite("video self-attention", None),
        CallSite("the video's cross-attention to the text (1024 keys)", None,
                 "the prompt plus the connectors' registers: 1024 keys, not under the floor's 512; with 1024 video "
                 "tokens or more, measured routing decides"),
        _GUIDE_MASK,
        CallSite("audio self-attention", Reason.TOO_SHORT, "about 25 audio tokens a second"),
        CallSite("the audio's cross-attention to the text", Reason.TOO_SHORT, "its queries are the audio tokens"),
        CallSite("audio-to-video and video-to-audio cross-attention", Reason.TOO_SHORT, "one side is the audio"),
        CallSite("text connectors (2 self-attention layers; LTX-2.3: 8) over the prompt and registers", None,
                 "run once in extra_conds before the steps, without transformer_options "
                 "(lightricks/embeddings_connector.py:94)", unreached=True),
    ),
    needs="comfy/ldm/lightricks/av_model.py, ComfyUI >= 0.8",
    comfyui="0.8.0",
))

LTXV = register(Family(
    name="LTX-Video",
    config_classes=("LTXV",),
    diffusion_models=("comfy.ldm.lightricks.model.LTXVModel",),
    call_sites=(
        CallSite("video self-attention", None),
        CallSite("cross-attention to the text", Reason.TOO_SHORT,
                 "the T5 prompt, 128 tokens or a few more (its padding masked): the key side is below the threshold"),
        _GUIDE_MASK,
    ),
))
