"""Mage-Flow (Microsoft Mage; MageFlow, a MageFlowTransformer2DModel): 12 of Qwen-Image's
double-stream blocks, patch size 1, one joint call each over Qwen3-VL-4B text + image (+ reference)
tokens through optimized_attention_masked, text first, head size 128 (24 heads). The text encoder
drops an all-ones mask; a mask with zeros becomes an additive mask over the text keys, the same for
every query, which lie before the image's: the kept keys are gathered (a copy). The blocks set their
position ("double")."""
from . import Family, register

MAGE_FLOW = register(Family(name="Mage-Flow", config_classes=("MageFlow",),
                            diffusion_models=("comfy.ldm.mage_flow.model.MageFlowTransformer2DModel",)))
