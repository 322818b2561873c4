"""Older image models, declined by name: a Scope on one passes it through unchanged and Status says why
(not measured; some make no call with transformer_options, AuraFlow's head size no SageAttention kernel
takes)."""
from . import Family, register

_UNET = ("comfy.ldm.modules.diffusionmodules.openaimodel.UNetModel",)
_UNREACHED = "not measured, and its attention calls carry no transformer_options: none would reach the Scope"

AURAFLOW = register(Family(
    name="AuraFlow", config_classes=("AuraFlow",), diffusion_models=("comfy.ldm.aura.mmdit.MMDiT",), opens=False,
    why_not="not measured: its head size is 256, which no SageAttention kernel takes"))

PIXART = register(Family(
    name="PixArt", config_classes=("PixArtAlpha",), diffusion_models=("comfy.ldm.pixart.pixartms.PixArtMS",),
    opens=False, why_not=_UNREACHED))

HUNYUAN_DIT = register(Family(
    name="Hunyuan-DiT", config_classes=("HunyuanDiT",), diffusion_models=("comfy.ldm.hydit.models.HunYuanDiT",),
    opens=False, why_not=_UNREACHED))

STABLE_CASCADE = register(Family(
    name="Stable Cascade", config_classes=("Stable_Cascade_C",),  # and its subclass Stable_Cascade_B
    diffusion_models=("comfy.ldm.cascade.stage_c.StageC", "comfy.ldm.cascade.stage_b.StageB"), opens=False,
    why_not="not measured: its attention calls see a few hundred to a thousand tokens at 1024²"))

STABLE_ZERO123 = register(Family(
    name="Stable Zero123", config_classes=("Stable_Zero123",), diffusion_models=_UNET, opens=False,
    why_not="a novel-view (3D) model on SD1.5's UNet: not measured (head sizes 40, 80 and 160, 1,024 tokens at most)"))

SD_X4_UPSCALER = register(Family(
    name="SD x4 Upscaler", config_classes=("SD_X4Upscaler",), diffusion_models=_UNET, opens=False,
    why_not="an upscaler on an SD2-style UNet: not measured (it self-attends only at its coarsest levels)"))
