"""Helpers to drive a scoped model the way ComfyUI does, through its real attention function."""
from __future__ import annotations

import torch

import comfy.ldm.modules.attention as comfy_attention

from sage_attention_scope.nodes.status import payload
from sage_attention_scope.patches import router_of, sampling
from .models import DEVICE


def attention(model_patcher, q, k, v, heads, **kwargs):
    """One call of ComfyUI's own (wrap_attn-wrapped) optimized_attention with the model's
    transformer_options, as a diffusion model makes it."""
    options = model_patcher.model_options["transformer_options"]
    return comfy_attention.optimized_attention(q, k, v, heads, transformer_options=options, **kwargs)


def call_of(args: tuple, kwargs: dict):
    """The facts the router reads of one attention call made as ``wrap_attn`` hands it over."""
    from sage_attention_scope.patches.call import Call, comfy_arguments
    return Call.from_arguments(comfy_arguments(args, kwargs))


def plain_attention(q, k, v, heads, **kwargs):
    """What ComfyUI returns for the same call without the Scope."""
    return comfy_attention.optimized_attention(q, k, v, heads, **kwargs)


def in_scope(model_patcher, fn):
    """Runs ``fn`` inside the model's scope, as its OUTER_SAMPLE wrapper would."""
    return sampling.outer_sample(router_of(model_patcher), fn)


def last_generation(session, device=DEVICE) -> dict:
    """The last generation's counters on ``device``, from the public snapshot."""
    return payload(session)["devices"][device]["last_generation"]


def totals(session, device=DEVICE) -> dict:
    return payload(session)["devices"][device]["session"]


def hnd(b=1, h=2, n=32, d=64, dtype=torch.float32, device="cpu", seed=0):
    g = torch.Generator(device="cpu").manual_seed(seed)
    return tuple(torch.randn(b, h, n, d, generator=g, dtype=torch.float32).to(device=device, dtype=dtype)
                 for _ in range(3))


def run_kernel(bound, q, k, v, layout="HND", *, scale=None, smooth_k=False, mask=None):
    """A bound kernel called directly on q/k/v in ``layout``, as the router calls it (its
    adapter, under the tensors' device), without a ComfyUI call around it."""
    import contextlib
    import types
    call = types.SimpleNamespace(scale=scale, sdpa_mask=lambda: mask)
    settings = types.SimpleNamespace(smooth_k=smooth_k)
    with torch.cuda.device(q.device) if q.is_cuda else contextlib.nullcontext():
        return bound.backend.run(bound.fn, q, k, v, call, layout, settings)
