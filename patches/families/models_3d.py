"""3D models, declined by name: a Scope on one passes it through unchanged and Status says why.

Hunyuan3D 2.0 (Hunyuan3Dv2, and Hunyuan3Dv2mini through it): FLUX's double- and single-stream blocks
(comfy/ldm/flux/math.py's attention, with transformer_options) over the shape latent (3,072 tokens by
default) and the DINOv2 image tokens (1,370 at 518 px), head size 64 (1,024 wide, 16 heads). Hunyuan3D 2.1
(Hunyuan3Dv2_1, a subclass with its own diffusion model, its own family): self-attention over the latent and
cross-attention to the image tokens, head size 128, both without transformer_options and with
low_precision_attention=False (hunyuan3dv2_1/hunyuandit.py). TripoSplat: joint blocks over 8,192
latent tokens and the image tokens, head size 64, every call low_precision_attention=False
(triposplat/model.py). Trellis 2: dense attention over the 16³ = 4,096 structure tokens, sparse attention
over the shape and texture voxels (a batch of uneven voxel counts gets a key-padding mask) and cross-attention
to the image tokens, head size 128 (1,536 wide, 12 heads), with transformer_options (trellis2/model.py)."""
from . import Family, register

HUNYUAN_3D_2 = register(Family(
    name="Hunyuan3D 2.0", config_classes=("Hunyuan3Dv2",),  # and its subclass Hunyuan3Dv2mini
    diffusion_models=("comfy.ldm.hunyuan3d.model.Hunyuan3Dv2",), opens=False,
    why_not="a 3D shape model: not measured against SDPA"))

HUNYUAN_3D_21 = register(Family(
    name="Hunyuan3D 2.1", config_classes=("Hunyuan3Dv2_1",),  # a Hunyuan3Dv2 subclass, named first
    diffusion_models=("comfy.ldm.hunyuan3dv2_1.hunyuandit.HunYuanDiTPlain",), opens=False,
    why_not="a 3D shape model whose attention calls carry no transformer_options: none would reach the Scope"))

TRIPOSPLAT = register(Family(
    name="TripoSplat", config_classes=("TripoSplat",), opens=False,
    diffusion_models=("comfy.ldm.triposplat.model.LatentSeqMMFlowModel",),
    why_not="a 3D (Gaussian splat) model whose every attention call asks for SDPA (low_precision_attention=False)"))

TRELLIS_2 = register(Family(name="Trellis 2", config_classes=("Trellis2",), opens=False,
                            diffusion_models=("comfy.ldm.trellis2.model.Trellis2",),
                            why_not="a 3D model: not measured against SDPA"))
