"""3D models, declined by name: a Scope on one passes it through unchanged and Status says why (not
measured, or no call can reach the Scope)."""
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
    name="TripoSplat", config_classes=("TripoSplat",), opens=False, comfyui="0.23.0",
    diffusion_models=("comfy.ldm.triposplat.model.LatentSeqMMFlowModel",),
    why_not="a 3D (Gaussian splat) model whose every attention call asks for SDPA (low_precision_attention=False)"))

TRELLIS_2 = register(Family(name="Trellis 2", config_classes=("Trellis2",), opens=False, comfyui="0.34.0",
                            diffusion_models=("comfy.ldm.trellis2.model.Trellis2",),
                            why_not="a 3D model: not measured against SDPA"))
