"""Mage-Flow: Qwen-Image's double-stream blocks, one joint call each over text then image tokens, head
size 128; a text mask with zeros becomes a key mask the same for every query (the kept keys gathered)."""
from . import Family, register

MAGE_FLOW = register(Family(name="Mage-Flow", config_classes=("MageFlow",),
                            diffusion_models=("comfy.ldm.mage_flow.model.MageFlowTransformer2DModel",),
                            comfyui="0.29.0"))
