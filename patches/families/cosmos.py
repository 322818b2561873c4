"""Cosmos Predict2 (text-to-image, and video-to-world from an image or video): per block one
self-attention over the image or video tokens and one cross-attention to the T5 text (padded to 512
tokens), head size 128 (2B: 28 blocks x 16 heads; 14B: 36 x 40). (B, H, N, D) tensors, no mask, no
block position."""
from . import Family, register

COSMOS_PREDICT2 = register(Family(
    name="Cosmos Predict2", config_classes=("CosmosT2IPredict2",),  # and its subclass CosmosI2VPredict2
    diffusion_models=("comfy.ldm.cosmos.predict2.MiniTrainDIT",)))
