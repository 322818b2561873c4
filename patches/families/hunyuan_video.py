"""HunyuanVideo (1.0, I2V, SkyReels I2V), HunyuanVideo 1.5 and HunyuanImage 2.1: one diffusion model class,
three families so that Status names the model. Text-refiner blocks attend over the text alone; then one
joint image + text call per double- and single-stream block, head size 128. A text mask with padding
becomes an additive mask over the joint keys, the same for every query: where the text sits (first or
last, text_position) decides whether the engine slices the padded keys off or gathers the kept ones."""
import functools
import inspect

from . import TEXT_FIRST, TEXT_LAST, Family, register

_MODEL = ("comfy.ldm.hunyuan_video.model.HunyuanVideo",)


@functools.cache
def text_position() -> str:
    """The text's place in the joint sequence on the ComfyUI running: last where FLUX's double-stream block
    takes ``flipped_img_txt`` (HunyuanVideo passes True there: image, then text), else first."""
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
