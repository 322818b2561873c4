"""The scope under torch.compile: each attention call of a traced scoped model becomes one opaque
custom op whose implementation runs the router on the call at run time, so a scoped block compiles
as one graph and every call is decided, checked, timed and counted as in eager mode. Custom ops take
tensors and scalars: the op finds its router in ``_ROUTERS``, a weak index by id (plumbing, no state
of its own), and ComfyUI's attention by name; ``transformer_options`` (block positions) stays out."""
from __future__ import annotations

import importlib
import re
import weakref
from typing import Optional

import torch
import torch.nn.functional as F

from ..call import allows_low_precision, comfy_arguments

_ROUTERS: "weakref.WeakValueDictionary[str, object]" = weakref.WeakValueDictionary()
# One op per copy of the pack in the process (ComfyUI loading a second one must not take this one's over).
OP_NAME = "attention_" + re.sub(r"\W", "_", __name__.rpartition(".patches.")[0])


def register(router) -> str:
    _ROUTERS[f"{id(router):x}"] = router
    return f"{id(router):x}"


def trace(router, func, args: tuple, kwargs: dict):
    """While Dynamo traces: the call as the op (``__name__``: Dynamo has no ``__qualname__`` here)."""
    a = comfy_arguments(args, kwargs)
    precision = str(a.get("attn_precision") or "").removeprefix("torch.")
    return getattr(torch.ops.sage_attention_scope, OP_NAME)(
        a["q"], a["k"], a["v"], a.get("mask"), int(a["heads"]), bool(a.get("skip_reshape")),
        bool(a.get("skip_output_reshape")), a.get("scale"), allows_low_precision(a),
        bool(a.get("enable_gqa")), precision, f"{func.__module__}:{func.__name__}", router.key)


@torch.library.custom_op(f"sage_attention_scope::{OP_NAME}", mutates_args=())
def attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: Optional[torch.Tensor], heads: int,
              skip_reshape: bool, skip_output_reshape: bool, scale: Optional[float], low_precision: bool,
              enable_gqa: bool, attn_precision: str, func: str, router_key: str) -> torch.Tensor:
    module, _, name = func.partition(":")
    router, comfy_attention = _ROUTERS.get(router_key), getattr(importlib.import_module(module), name, None)
    if router is None or comfy_attention is None:  # the scoped model is gone: plain attention
        d = q.shape[-1] if skip_reshape else q.shape[-1] // heads
        hnd = (q, k, v) if skip_reshape else tuple(t.unflatten(-1, (-1, d)).transpose(1, 2) for t in (q, k, v))
        out = F.scaled_dot_product_attention(*hnd, attn_mask=mask, scale=scale, enable_gqa=enable_gqa)
        return out if skip_output_reshape else out.transpose(1, 2).flatten(-2)
    # ComfyUI's attention is its wrap_attn-wrapped module attribute: _inside_attn_wrapper skips the wrapper.
    # What wrap_attn would have handed over: the optional arguments only where the model passed them.
    arguments = {"mask": mask, "skip_reshape": skip_reshape, "skip_output_reshape": skip_output_reshape,
                 "attn_precision": getattr(torch, attn_precision, None), "_inside_attn_wrapper": True}
    if scale is not None:
        arguments["scale"] = scale
    if enable_gqa:
        arguments["enable_gqa"] = True
    if not low_precision:
        arguments["low_precision_attention"] = False
    out = router(comfy_attention, q, k, v, heads, **arguments)
    # A custom op's output may not alias its inputs.
    return out.clone() if out.data_ptr() in (q.data_ptr(), k.data_ptr(), v.data_ptr()) else out


@attention.register_fake
def _(q, k, v, mask, heads, skip_reshape, skip_output_reshape, scale, low_precision, enable_gqa, attn_precision, func,
      router_key):
    b, n, d = q.shape[0], q.shape[-2], q.shape[-1] if skip_reshape else q.shape[-1] // heads
    return q.new_empty((b, heads, n, d) if skip_output_reshape else (b, n, heads * d))
