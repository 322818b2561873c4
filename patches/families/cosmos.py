"""Cosmos Predict2 (text to image, video to world): per block one self-attention over the image or video
tokens and one cross-attention to the T5 text, head size 128, no mask."""
from . import Family, register

COSMOS_PREDICT2 = register(Family(
    name="Cosmos Predict2", config_classes=("CosmosT2IPredict2",),  # and its subclass CosmosI2VPredict2
    diffusion_models=("comfy.ldm.cosmos.predict2.MiniTrainDIT",)))
