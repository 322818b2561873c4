"""The tiny test cases of SD3/SD3.5, Chroma, HiDream, Lumina 2, Cosmos Predict2, Omnigen2 and
FLUX.1 Kontext: each family's tiny random-weight model, and the routing of one step derived from
its structure (see families.py). DIT_CASES are added to families.CASES.

Two cases stay out of DIT_CASES, for tests/test_families_dit.py: Chroma Radiance (Chroma's family,
which CASES has once) and FLUX.1 Kontext (a FLUX.1 model, likewise)."""
from __future__ import annotations

import torch

from sage_attention_scope.patches import Reason
from .families import SAGE, TEXT, Case, RealWidths, _patches
from .models import TINY_FLUX, flux_conditioning, text_conditioning

# Tiny configs shaped like ComfyUI's model_detection output; the head sizes that matter are the
# released ones (SD3 64, Lumina 2 96, Cosmos 128, Omnigen2 120).

# MMDiT: width 64 x depth, depth heads of 64. num_patches None: no pos_embed buffer, which a
# checkpoint fills and random weights would leave uninitialised (NaN); the sin-cos table instead.
TINY_SD3 = dict(in_channels=16, out_channels=16, patch_size=2, depth=2, num_blocks=2, input_size=None,
                adm_in_channels=32, pos_embed_max_size=16, num_patches=None, pos_embed_scaling_factor=None,
                context_embedder_config={"target": "torch.nn.Linear",
                                         "params": {"in_features": 32, "out_features": 128}},
                qk_norm="rms", x_block_self_attn_layers=[0])
def newer_fields(module: str, params: str, **defaults) -> dict:
    """``defaults`` for the fields a newer ComfyUI's ``params`` dataclass has (its model_detection's
    values), none where this ComfyUI's lacks them (it would refuse them)."""
    import importlib
    fields = getattr(getattr(importlib.import_module(module), params), "__dataclass_fields__", {})
    return {name: value for name, value in defaults.items() if name in fields}


TINY_CHROMA = dict(image_model="chroma", in_channels=64, out_channels=64, context_in_dim=32, hidden_size=64,
                   mlp_ratio=2.0, num_heads=2, depth=1, depth_single_blocks=1, axes_dim=[8, 12, 12], theta=10000,
                   patch_size=2, qkv_bias=True, in_dim=64, out_dim=64, hidden_dim=32, n_layers=1,  # in_dim: fixed 64
                   **newer_fields("comfy.ldm.chroma.model", "ChromaParams", txt_ids_dims=[], vec_in_dim=None))
TINY_CHROMA_RADIANCE = dict(TINY_CHROMA, image_model="chroma_radiance", in_channels=3, out_channels=3, patch_size=16,
                            nerf_hidden_size=16, nerf_mlp_ratio=2, nerf_depth=1, nerf_max_freqs=4, nerf_tile_size=512,
                            nerf_final_head_type="conv", nerf_embedder_dtype=torch.float32,
                            **newer_fields("comfy.ldm.chroma_radiance.model", "ChromaRadianceParams", use_x0=False,
                                                         use_sequential_txt_ids=False))
TINY_HIDREAM = dict(image_model="hidream", patch_size=2, in_channels=16, out_channels=16, num_layers=1,
                    num_single_layers=1, attention_head_dim=32, num_attention_heads=2, caption_channels=[32, 32],
                    text_emb_dim=32, num_routed_experts=4, num_activated_experts=2, axes_dims_rope=[16, 8, 8],
                    max_resolution=[128, 128], llama_layers=[0, 1])  # one Llama layer a block
TINY_LUMINA2 = dict(image_model="lumina2", patch_size=2, in_channels=16, dim=192, n_layers=2, n_refiner_layers=1,
                    n_heads=2, n_kv_heads=1, multiple_of=16, ffn_dim_multiplier=4.0, qk_norm=True, cap_feat_dim=32,
                    axes_dims=[32, 32, 32], axes_lens=[300, 512, 512], rope_theta=10000.0)  # head size 96
TINY_COSMOS_PREDICT2 = dict(image_model="cosmos_predict2", max_img_h=240, max_img_w=240, max_frames=128,
                            in_channels=16, out_channels=16, patch_spatial=2, patch_temporal=1, model_channels=256,
                            concat_padding_mask=True, crossattn_emb_channels=32, pos_emb_cls="rope3d",
                            pos_emb_learnable=True, pos_emb_interpolation="crop", min_fps=1, max_fps=30,
                            use_adaln_lora=True, adaln_lora_dim=32, num_blocks=2, num_heads=2,
                            extra_per_block_abs_pos_emb=False, rope_h_extrapolation_ratio=4.0,
                            rope_w_extrapolation_ratio=4.0, rope_t_extrapolation_ratio=1.0,
                            extra_h_extrapolation_ratio=1.0, extra_w_extrapolation_ratio=1.0,
                            extra_t_extrapolation_ratio=1.0, rope_enable_fps_modulation=False)  # head size 128
TINY_OMNIGEN2 = dict(image_model="omnigen2", hidden_size=240, num_attention_heads=2, num_kv_heads=1, num_layers=2,
                     num_refiner_layers=1, axes_dim_rope=[40, 40, 40], axes_lens=[1024, 1664, 1664],
                     ffn_dim_multiplier=None, multiple_of=16, norm_eps=1e-5, in_channels=16, out_channels=None,
                     patch_size=2, text_feat_dim=32, timestep_scale=1000.0)  # head size 120

IMAGE_TOKENS = _patches(8, 8, 2)  # an 8x8 latent in 2x2 patches (Chroma Radiance: 64x64 pixels in 16x16)
SD3_TOKENS = TEXT + IMAGE_TOKENS
CHROMA_TOKENS = TEXT + IMAGE_TOKENS
HIDREAM_TOKENS = IMAGE_TOKENS + TEXT + 2 * TEXT  # image, T5, the last Llama layer and each block's own
HIDREAM_LLAMA_LAYERS = 2  # conditioning_llama3 is (batch, Llama layers, tokens, width)
KONTEXT_REFERENCE_HW = (8, 8)
KONTEXT_TOKENS = TEXT + IMAGE_TOKENS + _patches(*KONTEXT_REFERENCE_HW, TINY_FLUX["patch_size"])


def omnigen2_conditioning(**extra):
    """model_base.Omnigen2 takes num_tokens from the attention mask alone: without one the model
    raises. An all-ones mask masks nothing, and ComfyUI does not pass it on."""
    return text_conditioning(attention_mask=torch.ones(1, TEXT, dtype=torch.long), **extra)


def kontext_conditioning():
    """A ReferenceLatent node's output: FLUX.1 Kontext's reference image as a latent."""
    reference = torch.randn(1, 16, *KONTEXT_REFERENCE_HW, generator=torch.Generator().manual_seed(5))
    cond = flux_conditioning()
    cond[0][1]["reference_latents"] = [reference]
    return cond


DIT_CASES: list = [
    Case("Chroma", "Chroma", TINY_CHROMA, lambda: text_conditioning(pooled_output=None), (8, 8), 16, CHROMA_TOKENS,
         # one joint call per double-stream and per single-stream block, as FLUX.1
         {SAGE: TINY_CHROMA["depth"] + TINY_CHROMA["depth_single_blocks"]}),
    Case("HiDream", "HiDream", TINY_HIDREAM,
         lambda: text_conditioning(pooled_output=torch.zeros(1, 32),
                                   conditioning_llama3=torch.randn(1, HIDREAM_LLAMA_LAYERS, TEXT, 32,
                                                                   generator=torch.Generator().manual_seed(2))),
         (8, 8), 16, HIDREAM_TOKENS,
         # one joint call over image + text tokens per double-stream and per single-stream block
         {SAGE: TINY_HIDREAM["num_layers"] + TINY_HIDREAM["num_single_layers"]}),
    Case("Lumina 2", "Lumina2", TINY_LUMINA2, text_conditioning, (8, 8), 16, IMAGE_TOKENS,
         # noise refiner over the 16 image tokens and main layers over text + image qualify; the
         # context refiner sees the 5 text tokens alone
         {SAGE: TINY_LUMINA2["n_refiner_layers"] + TINY_LUMINA2["n_layers"],
          Reason.TOO_SHORT: TINY_LUMINA2["n_refiner_layers"]}),
    Case("Cosmos Predict2", "CosmosT2IPredict2", TINY_COSMOS_PREDICT2, text_conditioning, (1, 8, 8), 16,
         IMAGE_TOKENS,
         # per block: self-attention over the 1 x 4 x 4 tokens qualifies; cross-attention to the
         # 5 text tokens is short (ComfyUI's own T5 text has 512: test_families_dit.py)
         {SAGE: TINY_COSMOS_PREDICT2["num_blocks"], Reason.TOO_SHORT: TINY_COSMOS_PREDICT2["num_blocks"]}),
    Case("Omnigen2", "Omnigen2", TINY_OMNIGEN2, omnigen2_conditioning, (8, 8), 16, IMAGE_TOKENS,
         # as Lumina 2: noise refiner and main layers qualify, the context refiner's text is short
         # (no reference images: no reference-image refiner call)
         {SAGE: TINY_OMNIGEN2["num_refiner_layers"] + TINY_OMNIGEN2["num_layers"],
          Reason.TOO_SHORT: TINY_OMNIGEN2["num_refiner_layers"]}),
]

# Its joint calls (one per block) and SD3.5 Medium's image-only ones (one per layer in
# x_block_self_attn_layers), v handed in 4-D (patches/families/sd3.py).
SD3_CASE = Case("SD3", "SD3", TINY_SD3, lambda: text_conditioning(pooled_output=torch.zeros(1, 32)), (8, 8), 16,
                IMAGE_TOKENS, {SAGE: TINY_SD3["num_blocks"] + len(TINY_SD3["x_block_self_attn_layers"])})
DIT_CASES.append(SD3_CASE)
CHROMA_RADIANCE_CASE = Case("Chroma", "ChromaRadiance", TINY_CHROMA_RADIANCE,
                            lambda: text_conditioning(pooled_output=None), (64, 64), 3, CHROMA_TOKENS,
                            {SAGE: TINY_CHROMA["depth"] + TINY_CHROMA["depth_single_blocks"]})
# FLUX.1 Kontext: the reference's tokens follow the image's in every joint call, which qualify only
# so (the threshold lies above FLUX.1's text + image tokens).
FLUX_KONTEXT_CASE = Case("FLUX.1", "Flux", TINY_FLUX, kontext_conditioning, (8, 8), 16, KONTEXT_TOKENS,
                         {SAGE: TINY_FLUX["depth"] + TINY_FLUX["depth_single_blocks"]})

# Released widths (model_detection.py), one or two blocks, the text the stock text encoders give
# (lengths as their tokenizers pad them), a 1024² image's latent.
DIT_WIDTHS: dict = {
    # SD3.5 Large: 38 heads of 64; CLIP-L/G 77 + T5 77 tokens (4096 wide), pooled 2048
    "SD3": RealWidths(
        dict(TINY_SD3, depth=38, num_blocks=2, adm_in_channels=2048, pos_embed_max_size=192,
             context_embedder_config={"target": "torch.nn.Linear",
                                      "params": {"in_features": 4096, "out_features": 2432}},
             x_block_self_attn_layers=[]),
        lambda: text_conditioning(tokens=154, dim=4096, pooled_output=torch.zeros(1, 2048)), (128, 128), 16),
    # Chroma: FLUX.1's widths; T5 through the PixArt tokenizer, not padded: a prompt's length
    "Chroma": RealWidths(
        dict(TINY_CHROMA, context_in_dim=4096, hidden_size=3072, mlp_ratio=4.0, num_heads=24, axes_dim=[16, 56, 56],
             out_dim=3072, hidden_dim=5120, n_layers=5),
        lambda: text_conditioning(tokens=128, dim=4096, pooled_output=None), (128, 128), 16),
    # HiDream-I1: 20 heads of 128; T5 128 tokens, Llama 3.1 128 tokens from each of its 32 layers
    # (the two blocks read the released llama_layers' first and last)
    "HiDream": RealWidths(
        dict(TINY_HIDREAM, attention_head_dim=128, num_attention_heads=20, caption_channels=[4096, 4096],
             text_emb_dim=2048, axes_dims_rope=[64, 32, 32], llama_layers=[0, 31]),
        lambda: text_conditioning(tokens=128, dim=4096, pooled_output=torch.zeros(1, 2048),
                                  conditioning_llama3=torch.zeros(1, 32, 128, 4096)), (128, 128), 16),
    # Lumina Image 2.0: 24 heads of 96 (8 key/value heads); Gemma 2 text with its system prompt
    "Lumina 2": RealWidths(
        dict(TINY_LUMINA2, dim=2304, n_heads=24, n_kv_heads=8, multiple_of=256, cap_feat_dim=2304, n_layers=1),
        lambda: text_conditioning(tokens=256, dim=2304), (128, 128), 16),
    # Cosmos Predict2 2B text-to-image: 16 heads of 128; T5 padded to 512 tokens (1024 wide)
    "Cosmos Predict2": RealWidths(
        dict(TINY_COSMOS_PREDICT2, model_channels=2048, num_heads=16, num_blocks=1, crossattn_emb_channels=1024,
             adaln_lora_dim=256),
        lambda: text_conditioning(tokens=512, dim=1024), (1, 128, 128), 16),
    # OmniGen2: 21 heads of 120 (7 key/value heads); Qwen2.5-VL 3B text, not padded
    "Omnigen2": RealWidths(
        dict(TINY_OMNIGEN2, hidden_size=2520, num_attention_heads=21, num_kv_heads=7, multiple_of=256,
             text_feat_dim=2048, num_layers=1),
        lambda: text_conditioning(tokens=128, dim=2048, attention_mask=torch.ones(1, 128, dtype=torch.long)),
        (128, 128), 16),
}
# The released depths: SD3.5 Large, Chroma, HiDream-I1 Full, Lumina Image 2.0, Cosmos Predict2 2B,
# OmniGen2 (model_detection.py; Lumina 2's refiners: NextDiT's default 2).
DIT_FULL_DEPTH: dict = {
    "SD3": dict(num_blocks=38),
    "Chroma": dict(depth=19, depth_single_blocks=38),
    "HiDream": dict(num_layers=16, num_single_layers=32, llama_layers=list(range(32)) + [31] * 16),
    "Lumina 2": dict(n_layers=26, n_refiner_layers=2),
    "Cosmos Predict2": dict(num_blocks=28),
    "Omnigen2": dict(num_layers=32, num_refiner_layers=2),
}
# Latents of a 1024² and a 2048² image (8x down, 16 channels; Cosmos Predict2: one frame).
DIT_SIZES: dict = {
    **{family: {1024: (128, 128), 2048: (256, 256)} for family in ("SD3", "Chroma", "HiDream", "Lumina 2", "Omnigen2")},
    "Cosmos Predict2": {1024: (1, 128, 128), 2048: (1, 256, 256)},
}
