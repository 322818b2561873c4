"""Chroma and Chroma Radiance: FLUX's double- and single-stream blocks (head size 128; 19 + 38),
one joint text + image attention call each, the block position set as FLUX sets it. Chroma
Radiance (a subclass: pixel space, 16x16 patches) makes the same calls; its NeRF head has no
attention. ComfyUI passes a mask only with attention_mask_img_shape (a Redux attn-bias), never the
text encoder's mask alone. Status names which: "Chroma (Chroma)" or "Chroma (ChromaRadiance)"."""
from . import TEXT_FIRST, Family, register

CHROMA = register(Family(
    name="Chroma", config_classes=("Chroma",),  # and its subclass ChromaRadiance
    diffusion_models=("comfy.ldm.chroma.model.Chroma", "comfy.ldm.chroma_radiance.model.ChromaRadiance"),
    joint_text=TEXT_FIRST))
