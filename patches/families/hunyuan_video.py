"""HunyuanVideo (1.0, its I2V and SkyReels I2V), HunyuanVideo 1.5 and HunyuanImage 2.1: one diffusion
model class, three families so the status names the model. Two text-refiner blocks attend over the
text alone (the LLaMA prompt; 1.5 and 2.1: Qwen2.5-VL's), under its mask where there is one, which
masks queries too; then one joint attention over image + text tokens per double-stream and per
single-stream block, head size 128 (1.5 and 2.1 add the byT5 glyph tokens to the text; 1.5's I2V 729
SigLIP tokens). A text mask with padding becomes an additive mask over the joint sequence's keys, the
same for every query; up to ComfyUI 0.12 the text comes last, so the padded keys are the trailing ones
and the engine slices them off; from 0.18 (its refactor of February 2026, PR 12432) the text comes
first and the engine gathers the keys it keeps (a copy). Any other mask (a bias) stays on SDPA."""
import functools
import inspect

from . import TEXT_FIRST, TEXT_LAST, Family, register

_MODEL = ("comfy.ldm.hunyuan_video.model.HunyuanVideo",)


@functools.cache
def text_position() -> str:
    """The text's place in the joint sequence on the ComfyUI running: last where FLUX's double-stream block
    still takes ``flipped_img_txt`` (HunyuanVideo passes True there: image, then text), first after the
    refactor that removed it."""
    from comfy.ldm.flux.layers import DoubleStreamBlock
    if "flipped_img_txt" in inspect.signature(DoubleStreamBlock.__init__).parameters:
        return TEXT_LAST
    return TEXT_FIRST

HUNYUAN_VIDEO = register(Family(
    name="HunyuanVideo", config_classes=("HunyuanVideo", "HunyuanVideoI2V", "HunyuanVideoSkyreelsI2V"),
    diffusion_models=_MODEL, joint_text=text_position))

HUNYUAN_VIDEO_15 = register(Family(
    name="HunyuanVideo 1.5",
    config_classes=("HunyuanVideo15", "HunyuanVideo15_SR_Distilled"),  # HunyuanVideo subclasses, named first
    diffusion_models=_MODEL))

HUNYUAN_IMAGE_21 = register(Family(
    name="HunyuanImage 2.1",
    config_classes=("HunyuanImage21", "HunyuanImage21Refiner"),  # the refiner subclasses HunyuanVideo, not 2.1
    diffusion_models=_MODEL))
