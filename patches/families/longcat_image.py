"""LongCat-Image and its Edit (6B; LongCatImage): ComfyUI's FLUX.1 diffusion model without guidance
or pooled input, on Qwen2.5-VL-7B text: 10 double-stream + 20 single-stream blocks, one joint call
each over text + image (+ the edit's reference image) tokens, text first, head size 128 (24 heads).
Its tokenizer pads every prompt to 512 tokens; the text encoder's mask of that padding never reaches
the blocks (model_base.Flux passes a mask only with attention_mask_img_shape, a regional mask), so
every joint call sees all 512 text keys unmasked. Its config class is not a Flux subclass: FLUX.1's
family does not claim it."""
from . import Family, register

LONGCAT_IMAGE = register(Family(name="LongCat-Image", config_classes=("LongCatImage",),
                                diffusion_models=("comfy.ldm.flux.model.Flux",)))
