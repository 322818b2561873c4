"""The tiny test cases of Krea 2, LongCat-Image, ERNIE-Image, JoyImage, Lens and MageFlow (families ComfyUI added
after 0.3.75; a host without a case's class skips it, naming the class): each family's tiny random-weight model,
and the routing of one step derived from its structure (see families.py). Added to families.CASES.

ERNIE-Image stays out of CASES: its attention never reaches the Scope (patches/families/ernie_image.py), so the
node does not open for it and the generic tests, which expect a model it serves, do not apply;
tests/test_families_image_2026.py builds ERNIE_CASE's model and checks that it passes through unchanged."""
from __future__ import annotations

import torch

from sage_attention_scope.patches import Reason
from .families import SAGE, TEXT, Case, RealWidths, _patches
from .models import text_conditioning

# Tiny configs shaped like ComfyUI 0.33's model_detection output for each model, shrunk: the released
# head sizes kept (128, Lens 64), the text encoders' widths shrunk to a few dozen.

# Krea 2: model_detection reads features, channels, patch, layers, heads, kvheads, txtlayers and txtdim;
# txtheads/txtkvheads stay the model's defaults (20 of 2560: 128), so the tiny text width keeps 128 a head
# with one. 2 heads of 128 over 1 key/value head (the released 48 over 12, repeated before the call).
TINY_KREA2 = dict(image_model="krea2", features=256, channels=16, patch=2, layers=2, heads=2, kvheads=1,
                  txtlayers=2, txtdim=128, txtheads=1, txtkvheads=1)
KREA2_TEXT_FUSION_CALLS = 2 + 2  # fixed in the model: two layerwise and two refiner blocks, one call each
# LongCat-Image: model_detection's FLUX.1 config with vec_in_dim None, no guidance and txt_ids_dims [1, 2];
# context_in_dim (3584, Qwen2.5-VL-7B) shrunk. 2 heads of 128 (axes 16 + 56 + 56).
TINY_LONGCAT_IMAGE = dict(image_model="flux", guidance_embed=False, vec_in_dim=None, context_in_dim=32,
                          txt_ids_dims=[1, 2], in_channels=16, out_channels=16, hidden_size=256, mlp_ratio=2.0,
                          num_heads=2, depth=1, depth_single_blocks=1, axes_dim=[16, 56, 56], theta=10000,
                          patch_size=2, qkv_bias=True, yak_mlp=False, txt_norm=False)
# ERNIE-Image: model_detection sets image_model alone (the model's defaults are the released widths);
# 2 heads of 128 (rope axes 32 + 48 + 48), Ministral's 3072 text width shrunk.
TINY_ERNIE_IMAGE = dict(image_model="ernie", hidden_size=256, num_attention_heads=2, num_layers=2,
                        ffn_hidden_size=512, in_channels=128, out_channels=128, patch_size=1, text_in_dim=32,
                        rope_axes_dim=(32, 48, 48))
# JoyImage: model_detection reads in_channels, hidden_size, patch_size, num_layers, heads (from the q-norm's
# head size) and text_dim 4096 (Qwen3-VL-8B), shrunk here. 2 heads of 128 (rope 16 + 56 + 56, the config's).
TINY_JOY_IMAGE = dict(image_model="joyimage", in_channels=16, hidden_size=256, patch_size=[1, 2, 2],
                      num_layers=2, num_attention_heads=2, text_dim=32)
# Lens: model_detection's keys; 2 heads of 64 (its fixed head size), two tapped GPT-OSS layers of 16
# (released: four of 2880), concatenated in the context.
TINY_LENS = dict(image_model="lens", in_channels=128, out_channels=32, num_layers=2, num_attention_heads=2,
                 enc_hidden_dim=16, multi_layer_encoder_feature=True, selected_layer_index=(0, 1))
LENS_CONTEXT = 2 * 16
# Mage-Flow: model_detection reads in_channels and num_layers; heads (24 of 128) and the text width (2560,
# Qwen3-VL-4B) are the model's defaults, shrunk here to 2 heads of 128 and 32.
TINY_MAGE_FLOW = dict(image_model="mage_flow", in_channels=128, num_layers=2, num_attention_heads=2,
                      joint_attention_dim=32)

# Latents: Krea 2 and JoyImage take Wan 2.1's (16 channels, 8x down, one frame), LongCat-Image FLUX.1's
# (16, 8x), ERNIE-Image, Lens and Mage-Flow Flux.2's (128 channels, 16x down, patch 1: a latent pixel a token).
WAN_LATENT, FLUX_LATENT, FLUX2_LATENT = (1, 8, 8), (8, 8), (4, 4)
IMAGE_TOKENS = _patches(8, 8, 2)                 # 16: 8 x 8 in 2 x 2 patches, or a 4 x 4 Flux.2 latent
JOINT_TOKENS = TEXT + IMAGE_TOKENS               # 21: every family's joint calls see the text and the image


def krea2_conditioning(tokens=TEXT, **extra):
    """Krea 2's text: each token's txtlayers tapped Qwen3-VL features side by side (the text encoder
    flattens its (B, 12, seq, 2560) stack to (B, seq, 12 x 2560))."""
    return text_conditioning(tokens=tokens, dim=TINY_KREA2["txtlayers"] * TINY_KREA2["txtdim"], **extra)


def lens_conditioning(mask=None, **extra):
    """Lens's text as its encoder gives it: the tapped layers side by side and, always, the text mask
    (long, 1 = a token); all ones for one prompt."""
    mask = torch.ones(1, TEXT, dtype=torch.long) if mask is None else mask
    return text_conditioning(dim=LENS_CONTEXT, attention_mask=mask, **extra)


CASES: list[Case] = [
    Case("Krea 2", "Krea2", TINY_KREA2, krea2_conditioning, WAN_LATENT, 16, JOINT_TOKENS,
         # one joint call per block over the 5 text + 16 image tokens qualifies; the text fusion's two
         # layerwise calls (each token's 2 layer features: 2 keys) and two refiner calls (5 text tokens)
         # are short
         {SAGE: TINY_KREA2["layers"], Reason.TOO_SHORT: KREA2_TEXT_FUSION_CALLS}),
    Case("LongCat-Image", "LongCatImage", TINY_LONGCAT_IMAGE, text_conditioning, FLUX_LATENT, 16, JOINT_TOKENS,
         # as FLUX.1: one joint call per double-stream and per single-stream block
         {SAGE: TINY_LONGCAT_IMAGE["depth"] + TINY_LONGCAT_IMAGE["depth_single_blocks"]}),
    Case("JoyImage", "JoyImage", TINY_JOY_IMAGE, text_conditioning, WAN_LATENT, 16, JOINT_TOKENS,
         # one joint call per double-stream block over the 16 image + 5 text tokens
         {SAGE: TINY_JOY_IMAGE["num_layers"]}),
    Case("Lens", "Lens", TINY_LENS, lens_conditioning, FLUX2_LATENT, 128, JOINT_TOKENS,
         # one joint call per block over the 16 image + 5 text tokens; its all-zero mask is dropped
         {SAGE: TINY_LENS["num_layers"]}),
    Case("Mage-Flow", "MageFlow", TINY_MAGE_FLOW, text_conditioning, FLUX2_LATENT, 128, JOINT_TOKENS,
         # one joint call per block over the 5 text + 16 image tokens
         {SAGE: TINY_MAGE_FLOW["num_layers"]}),
]
# Not in CASES (see above): its one call per layer never reaches the Scope.
ERNIE_CASE = Case("ERNIE-Image", "ErnieImage", TINY_ERNIE_IMAGE, text_conditioning, FLUX2_LATENT, 128,
                  JOINT_TOKENS, {})

# Released widths (0.33's model_detection and the models' defaults), one or two blocks, the text the stock
# encoders give (Qwen3-VL and GPT-OSS prompts are not padded: 128 tokens; LongCat's tokenizer pads to 512),
# a 1024² image's latent.
WIDTHS: dict[str, RealWidths] = {
    # Krea 2: 6144 wide, 48 heads of 128 over 12 key/value heads; text fusion of 12 layers x 2560
    "Krea 2": RealWidths(
        dict(TINY_KREA2, features=6144, heads=48, kvheads=12, layers=1, txtlayers=12, txtdim=2560, txtheads=20,
             txtkvheads=20),
        lambda: text_conditioning(tokens=128, dim=12 * 2560), (1, 128, 128), 16),
    # LongCat-Image: FLUX.1's widths (24 heads of 128), Qwen2.5-VL-7B text (3584) padded to 512
    "LongCat-Image": RealWidths(
        dict(TINY_LONGCAT_IMAGE, context_in_dim=3584, hidden_size=3072, mlp_ratio=4.0, num_heads=24),
        lambda: text_conditioning(tokens=512, dim=3584), (128, 128), 16),
    # JoyImage: 32 heads of 128 (hidden 4096), Qwen3-VL-8B text (4096)
    "JoyImage": RealWidths(
        dict(TINY_JOY_IMAGE, hidden_size=4096, num_attention_heads=32, num_layers=1, text_dim=4096),
        lambda: text_conditioning(tokens=128, dim=4096), (1, 128, 128), 16),
    # Lens: 24 heads of 64, four tapped GPT-OSS-20B layers of 2880
    "Lens": RealWidths(
        dict(TINY_LENS, num_attention_heads=24, num_layers=1, enc_hidden_dim=2880,
             selected_layer_index=(5, 11, 17, 23)),
        lambda: text_conditioning(tokens=128, dim=4 * 2880, attention_mask=torch.ones(1, 128, dtype=torch.long)),
        (64, 64), 128),
    # Mage-Flow: 24 heads of 128, Qwen3-VL-4B text (2560)
    "Mage-Flow": RealWidths(
        dict(TINY_MAGE_FLOW, num_attention_heads=24, num_layers=1, joint_attention_dim=2560),
        lambda: text_conditioning(tokens=128, dim=2560), (64, 64), 128),
}
# The released depths: Krea 2 28 blocks; LongCat-Image (6B) 10 double + 20 single; JoyImage-Edit 40;
# Lens 48; Mage-Flow 12.
FULL_DEPTH: dict[str, dict] = {
    "Krea 2": dict(layers=28),
    "LongCat-Image": dict(depth=10, depth_single_blocks=20),
    "JoyImage": dict(num_layers=40),
    "Lens": dict(num_layers=48),
    "Mage-Flow": dict(num_layers=12),
}
# Latents of a 1024² and a 2048² image: 8x down (Krea 2, JoyImage: one Wan 2.1 frame; LongCat-Image),
# 16x down for the Flux.2 latent (Lens, Mage-Flow).
SIZES: dict[str, dict] = {
    "Krea 2": {1024: (1, 128, 128), 2048: (1, 256, 256)},
    "JoyImage": {1024: (1, 128, 128), 2048: (1, 256, 256)},
    "LongCat-Image": {1024: (128, 128), 2048: (256, 256)},
    "Lens": {1024: (64, 64), 2048: (128, 128)},
    "Mage-Flow": {1024: (64, 64), 2048: (128, 128)},
}
