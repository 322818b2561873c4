"""Chroma and Chroma Radiance (pixel space): FLUX's double- and single-stream blocks, one joint
text + image call each, text first, head size 128. Status names which: "Chroma (ChromaRadiance)"."""
from . import TEXT_FIRST, Family, register

CHROMA = register(Family(
    name="Chroma", config_classes=("Chroma",),  # and its subclass ChromaRadiance
    diffusion_models=("comfy.ldm.chroma.model.Chroma", "comfy.ldm.chroma_radiance.model.ChromaRadiance"),
    joint_text=TEXT_FIRST))
