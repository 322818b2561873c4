"""SeedVR2, a video upscaler, declined by name: its windowed attention is called once per window without
transformer_options, so no call reaches the Scope."""
from . import Family, register

SEEDVR2 = register(Family(
    name="SeedVR2", config_classes=("SeedVR2",), diffusion_models=("comfy.ldm.seedvr.model.NaDiT",), opens=False,
    comfyui="0.28.0",
    why_not=("its attention cannot reach the scope: comfy/ldm/seedvr/attention.py calls optimized_attention once "
             "per window without transformer_options, so no override is ever asked")))
