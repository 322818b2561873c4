"""Helpers to drive the router the way ComfyUI does, through its real attention function."""
from __future__ import annotations

import torch

import comfy.ldm.modules.attention as comfy_attention

from sage_attention_scope.patches import router_of, stats
from sas_models import DEVICE


def attention(model_patcher, q, k, v, heads, **kwargs):
    """One call of ComfyUI's own (wrap_attn-wrapped) optimized_attention with the model's
    transformer_options, as a diffusion model makes it."""
    options = model_patcher.model_options["transformer_options"]
    return comfy_attention.optimized_attention(q, k, v, heads, transformer_options=options, **kwargs)


def in_scope(model_patcher, fn):
    """Runs ``fn`` inside the model's scope, as its OUTER_SAMPLE wrapper would."""
    return router_of(model_patcher).outer_sample_wrapper(fn)


def last_generation(device=DEVICE) -> dict:
    """The last generation's counters on ``device``, from the public snapshot."""
    return stats.snapshot()["devices"][device]["last_generation"]


def session(device=DEVICE) -> dict:
    return stats.snapshot()["devices"][device]["session"]


def hnd(b=1, h=2, n=32, d=64, dtype=torch.float32, device="cpu", seed=0):
    g = torch.Generator(device="cpu").manual_seed(seed)
    return tuple(torch.randn(b, h, n, d, generator=g, dtype=torch.float32).to(device=device, dtype=dtype)
                 for _ in range(3))
