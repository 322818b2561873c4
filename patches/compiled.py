"""The scope under torch.compile: every attention call of a traced scoped model becomes one
opaque custom op, ``sage_attention_scope::attention``, whose implementation runs the router on
the call at run time - the same ``decide``, kernel, check, timing, fallback and counting as in
eager mode. So a scoped block compiles as one graph (no graph break), and nothing is decided at
trace time.

Custom ops take tensors and scalars, not Python objects: the op finds its router in
``_ROUTERS``, a weak index by id (the one piece of process-level plumbing besides the import-time
registries; it holds no state of its own), and ComfyUI's attention function by its qualified
name. The call's keyword arguments that are not tensors or flags (``transformer_options``) do
not cross the op; ComfyUI's attention functions do not read them.
"""
from __future__ import annotations

import importlib
import weakref
from typing import Optional

import torch
import torch.nn.functional as F

OP = "sage_attention_scope::attention"
_ROUTERS: "weakref.WeakValueDictionary[str, object]" = weakref.WeakValueDictionary()


def register(router) -> str:
    key = f"{id(router):x}"
    _ROUTERS[key] = router
    return key


def trace(router, func, args: tuple, kwargs: dict):
    """While Dynamo traces: the call as the op."""
    values = dict(zip(("q", "k", "v", "heads", "mask"), args), **kwargs)
    precision = values.get("attn_precision")
    return torch.ops.sage_attention_scope.attention(
        values["q"], values["k"], values["v"], values.get("mask"), int(values["heads"]),
        bool(values.get("skip_reshape", False)), bool(values.get("skip_output_reshape", False)), values.get("scale"),
        values.get("low_precision_attention", True) is not False, str(precision).removeprefix("torch.")
        if precision is not None else "", f"{func.__module__}:{func.__name__}", router.key)  # (Dynamo has no __qualname__)


@torch.library.custom_op(OP, mutates_args=())
def attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: Optional[torch.Tensor], heads: int,
              skip_reshape: bool, skip_output_reshape: bool, scale: Optional[float], low_precision: bool,
              attn_precision: str, func: str, router_key: str) -> torch.Tensor:
    """The traced call, run through its router as an eager call is."""
    router, comfy_attention = _ROUTERS.get(router_key), _function(func)
    if router is None or comfy_attention is None:  # the scoped model is gone: plain attention
        hnd = (q, k, v) if skip_reshape else tuple(t.unflatten(-1, (heads, -1)).transpose(1, 2) for t in (q, k, v))
        out = F.scaled_dot_product_attention(*hnd, attn_mask=mask, scale=scale)
        return out if skip_output_reshape else out.transpose(1, 2).flatten(-2)
    kwargs = dict(mask=mask, skip_reshape=skip_reshape, skip_output_reshape=skip_output_reshape,
                  attn_precision=getattr(torch, attn_precision) if attn_precision else None,
                  _inside_attn_wrapper=True, **({"scale": scale} if scale is not None else {}),
                  **({} if low_precision else {"low_precision_attention": False}))
    out = router(comfy_attention, q, k, v, heads, **kwargs)
    # A custom op's output may not alias its inputs.
    return out.clone() if out.data_ptr() in (q.data_ptr(), k.data_ptr(), v.data_ptr()) else out


@attention.register_fake
def _(q, k, v, mask, heads, skip_reshape, skip_output_reshape, scale, low_precision, attn_precision, func, router_key):
    b, n, d = q.shape[0], q.shape[-2], q.shape[-1] if skip_reshape else q.shape[-1] // heads
    return q.new_empty((b, heads, n, d) if skip_output_reshape else (b, n, heads * d))


def _function(name: str):
    """ComfyUI's attention function by "module:name" (its ``wrap_attn``-wrapped module attribute,
    which ``_inside_attn_wrapper`` sends straight to the function), or None."""
    module, _, attribute = name.partition(":")
    try:
        return getattr(importlib.import_module(module), attribute, None)
    except ImportError:
        return None
