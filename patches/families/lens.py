"""Lens (Microsoft, 3.8B; Lens, a LensTransformer2DModel): 48 dual-stream blocks, one joint call each
over image + GPT-OSS-20B text tokens, image first and text last, head size 64 (24 heads). Every call
carries an additive mask over the keys, built from the text encoder's mask, the same for every
query: for one prompt it masks nothing (dropped; the empty negative prompt has no text tokens at
all); a mask of padded text marks the trailing keys, which are sliced off where the batch holds
one prompt (a batch of several keeps it: `mask`), and a hole in the text is left out by gathering
the other keys. The blocks set their position ("double")."""
from . import Family, register

LENS = register(Family(name="Lens", config_classes=("Lens",),
                       diffusion_models=("comfy.ldm.lens.model.LensTransformer2DModel",)))
