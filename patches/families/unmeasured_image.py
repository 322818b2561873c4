"""Older image models, declined by name (unmeasured): a Scope on one passes it through unchanged and
Status says why. Token counts at 1024² unless said.

AuraFlow: joint layers over 8 register + text + 4,096 image tokens (aura/mmdit.py), then single layers
over that sequence, with transformer_options; head size 256 (3,072 wide, 12 heads: model_detection
sets neither, MMDiT's defaults), which no SageAttention kernel takes. PixArt-α/Σ (PixArtSigma through
PixArtAlpha): self-attention over 4,096 image tokens (pixart/blocks.py) and cross-attention to the T5
text (120 / 300 tokens, :74), head size 72 (1,152 wide, 16 heads), without transformer_options. Hunyuan-DiT
1.0-1.2 (HunyuanDiT1 through HunyuanDiT): self- and cross-attention (hydit/attn_layers.py; CLIP +
mT5 text keys) and the text pooler (poolers.py), head size 88 (1,408 wide, 16 heads), without
transformer_options. Stable Cascade (Stage B through Stage C): self-attention with the CLIP tokens appended
to the keys (cascade/common.py), with transformer_options, head size 64; Stage C sees 24x24 = 576 image
tokens, Stage B attends only at its two coarsest levels (32x32, 16x16). Stable Zero123: SD1.5's UNet at
256² (1,024 tokens at most) with one CLIP-image key, head sizes 40, 80, 160. SD x4 Upscaler (an SD20
subclass, named first): a UNet 256 wide with 8 heads (head sizes 64 and 128 where it has transformer blocks)
whose finer levels' blocks do not self-attend (disable_self_attentions: both calls attend to the text)."""
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
