"""The scope under torch.compile: SageAttention as one registered custom op.

While Dynamo traces a scoped model (ComfyUI's TorchCompileModel, or any torch.compile of it),
the router cannot count, time or read the scope's context variable without breaking the graph.
So, while tracing, it decides only what the call's shapes and dtypes already say (the same
static rules as in eager mode) and hands each eligible call to ``sage_attention_scope::attention``:
an opaque op with a fake implementation for tracing, whose real implementation runs eagerly on
every call and does everything else - kernel choice, first-call check, measured routing, fault
fallback to SDPA, counting - through the router, exactly as in eager mode. Calls decided at
trace time for SDPA are compiled as ComfyUI's own attention and are not counted.
"""
from __future__ import annotations

import weakref
from typing import Optional

import torch
import torch.nn.functional as F

from . import kernels
from .eligibility import AttentionCall, KernelTraits, static_reason

OP = "sage_attention_scope::attention"

_routers: "weakref.WeakValueDictionary[str, object]" = weakref.WeakValueDictionary()


def register(router) -> str:
    """The key by which the op finds ``router`` (ops take no Python objects)."""
    key = f"{id(router):x}"
    _routers[key] = router
    return key


def _sdpa_hnd(q, k, v, heads, mask=None, skip_reshape=True, skip_output_reshape=True, scale=None, **_):
    """Plain SDPA on (B, H, N, D) tensors: the op's fallback and reference."""
    return F.scaled_dot_product_attention(q, k, v, scale=scale)


def _through(func, args, kwargs):
    return func(*args, **kwargs)


@torch.library.custom_op(OP, mutates_args=())
def scoped_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, scale: Optional[float],
                     router_key: str) -> torch.Tensor:
    """q, k, v in (B, H, N, D); returns (B, H, N, D). Never raises for a kernel's sake."""
    from .router import current_scope  # the router imports this module

    router = _routers.get(router_key)
    active = current_scope()
    args, kwargs = (q, k, v, q.shape[1]), {"scale": scale}
    if router is None or active is None or active.router is not router:
        return _sdpa_hnd(*args, **kwargs).clone()
    call = AttentionCall(q=q, k=k, v=v, heads=q.shape[1], mask=None, skip_reshape=True, skip_output_reshape=True,
                         scale=scale, low_precision_attention=True, enable_gqa=False, transformer_options=None)
    out = router.route(call, active, _sdpa_hnd, args, kwargs, _through)
    # A custom op's output may not alias its inputs; the kernel's is fresh, SDPA's too, but
    # make sure (a view of q would break functionalisation).
    return out if out.data_ptr() not in (q.data_ptr(), k.data_ptr(), v.data_ptr()) else out.clone()


@scoped_attention.register_fake
def _(q, k, v, scale, router_key):
    return torch.empty_like(q)


def route_while_tracing(router, func, args, kwargs):
    """The router's decision while Dynamo traces: static rules only, then the op."""
    call = AttentionCall.parse(args, kwargs)
    settings = router.settings
    # The kernel chosen for this device, if already known (the Scope node resolves it for the
    # model's device); if not, the op resolves it at run time and checks the rest itself.
    resolution = kernels.peek(settings.kernel, call.device)
    if resolution is not None and resolution.kernel is None:
        return router.call_through(func, args, kwargs)
    traits = (KernelTraits(resolution.kernel.spec.head_dims, resolution.kernel.spec.dtypes) if resolution
              else KernelTraits(frozenset(range(1, 1025)), frozenset({torch.float16, torch.bfloat16, torch.float32})))
    if (not settings.enabled or call.mask is not None
            or static_reason(call, traits, settings.min_seq_len, router.family_rule) is not None):
        return router.call_through(func, args, kwargs)
    q, k, v = call.kernel_views()
    if call.layout == "NHD":  # views (B, N, H, D) -> (B, H, N, D), still no copy
        q, k, v = (t.transpose(1, 2) for t in (q, k, v))
    out = torch.ops.sage_attention_scope.attention(q, k, v, call.scale, router.op_key)
    if call.skip_output_reshape:
        return out
    b, h, n, d = out.shape
    return out.transpose(1, 2).reshape(b, n, h * d)
