"""Boogu-Image (Boogu, an Omnigen2 subclass; BooguTransformer2DModel): OmniGen2's refiners, then a
dual-stream stage, then OmniGen2's single-stream layers, head size 120 (28 query heads, 7 key/value
heads). Per step: context-refiner layers over the Qwen3-VL text alone, noise-refiner layers over
the image tokens, reference-image-refiner layers over each reference (when there are references);
per dual-stream layer one joint attention over text + (reference +) image tokens and one image
self-attention; per single-stream layer one joint attention over all of them. Every call passes
transformer_options; ComfyUI 0.33 hands the 7 key/value heads over as they are (enable_gqa), and
the kernel gets them repeated to the 28 query heads (a copy, counted `copied`). ComfyUI 0.33's Boogu
cannot take a text mask that masks (its RoPE is built for the unmasked tokens: the model raises, with
or without the node).
Omnigen2 claims the parent class (omnigen2.py); recognise() meets Boogu first on the config's MRO."""
from . import Family, register

BOOGU = register(Family(name="Boogu", config_classes=("Boogu",),
                        diffusion_models=("comfy.ldm.boogu.model.BooguTransformer2DModel",)))
