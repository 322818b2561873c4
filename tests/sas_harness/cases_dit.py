"""The tiny test cases of SD3/SD3.5, Chroma, HiDream, Lumina 2, Cosmos Predict2, Omnigen2, FLUX.1 Kontext: each family's tiny random-weight model, and the routing of
one step derived from its structure (see families.py). Added to families.CASES."""
from __future__ import annotations

DIT_CASES: list = []
DIT_WIDTHS: dict = {}      # family -> families.RealWidths at the released checkpoint's widths
DIT_FULL_DEPTH: dict = {}  # family -> the config keys of the released depth
DIT_SIZES: dict = {}       # family -> {size: latent shape} where the family has image sizes
