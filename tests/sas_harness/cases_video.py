"""The tiny test cases of Wan and HunyuanVideo (with HunyuanVideo 1.5 and HunyuanImage 2.1): each family's tiny random-weight model, and the routing of
one step derived from its structure (see families.py). Added to families.CASES."""
from __future__ import annotations

VIDEO_CASES: list = []
VIDEO_WIDTHS: dict = {}      # family -> families.RealWidths at the released checkpoint's widths
VIDEO_FULL_DEPTH: dict = {}  # family -> the config keys of the released depth
VIDEO_SIZES: dict = {}       # family -> {size: latent shape} where the family has image sizes
