"""HunyuanVideo (1.0, its I2V and SkyReels I2V), HunyuanVideo 1.5 and HunyuanImage 2.1: one diffusion
model class, three families so the status names the model. Two text-refiner blocks attend over the
text alone; then one joint attention over image + text tokens per double-stream and per
single-stream block, head size 128. A text mask with padding becomes an additive mask over the
joint sequence's keys, the same for every query; up to ComfyUI 0.12 the text comes last, so the
padded keys are the trailing ones and the engine slices them off; from 0.18 the text comes first and
the engine gathers the keys it keeps (a copy)."""
from . import CallSite, Family, register
from ..reasons import Reason

_MODEL = ("comfy.ldm.hunyuan_video.model.HunyuanVideo",)


def _sites(text: str) -> tuple[CallSite, ...]:
    return (
        CallSite("text token refiner (2 blocks): the text alone", Reason.TOO_SHORT,
                 f"{text}: far under the floor (and its mask, where there is one, masks queries too)"),
        CallSite("double-stream joint attention (image + text)", None),
        CallSite("single-stream joint attention (image + text)", None),
        CallSite("joint attention under the text's padding mask, ComfyUI up to 0.12 (text last)", None,
                 "the padded text keys are the last keys, masked for every query: sliced off, the call qualifies"),
        CallSite("joint attention under the text's padding mask, newer ComfyUI (text first)", None,
                 "since ComfyUI's February 2026 refactor (PR 12432; 0.18 and 0.33 read) the padded keys lie between "
                 "the text and the image tokens, masked for every query: the other keys are gathered (a copy)"),
        CallSite("joint attention under any other mask (a bias)", Reason.MASK, "SageAttention takes no mask"),
    )


HUNYUAN_VIDEO = register(Family(
    name="HunyuanVideo",
    config_classes=("HunyuanVideo", "HunyuanVideoI2V", "HunyuanVideoSkyreelsI2V"),
    diffusion_models=_MODEL,
    call_sites=_sites("the LLaMA prompt, a few hundred tokens at most"),
))

HUNYUAN_VIDEO_15 = register(Family(
    name="HunyuanVideo 1.5",
    config_classes=("HunyuanVideo15", "HunyuanVideo15_SR_Distilled"),  # HunyuanVideo subclasses, named first
    diffusion_models=_MODEL,
    call_sites=_sites("the Qwen2.5-VL prompt (the joint calls add its byT5 glyph tokens and, for I2V, "
                      "729 SigLIP tokens)"),
))

HUNYUAN_IMAGE_21 = register(Family(
    name="HunyuanImage 2.1",
    config_classes=("HunyuanImage21", "HunyuanImage21Refiner"),  # the refiner subclasses HunyuanVideo, not 2.1
    diffusion_models=_MODEL,
    call_sites=_sites("the Qwen2.5-VL prompt (the joint calls add its byT5 glyph tokens)"),
))
