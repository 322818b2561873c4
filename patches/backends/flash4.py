"""FlashAttention 4 (PyPI ``flash-attn-4``): FlashAttention written in NVIDIA's CuTe DSL, which compiles
its kernel in the process at the first call of each configuration (dtype, head size, the tile its
heuristics pick for the shape, ...) and keeps it in memory. ``flash_attn.cute.flash_attn_func(q, k, v,
..., softmax_scale=None, causal=False, ..., return_lse=False, ...)`` takes (B, N, H, D) fp16/bf16 (strided
views with a contiguous last dimension), computes attention without quantising (an fp32 softmax) and
returns ``(out, lse)``, lse None unless asked for. It runs on compute capability 8.x to 12.x. Head sizes:
8 to 128 in steps of 8, and 256, which every GPU it validates takes (sm90 also takes 136 to 248, sm100
does not). Its masks are CuTe callables, not tensors: masked calls keep ComfyUI's attention. Its FP8
inputs run on sm100 only: not offered.

The compile is paid by the first call of a configuration, which the router makes before any timing: the
first-call check's call, or under measured routing each candidate's first run on the bucket's first call
(``Router.choose`` runs every candidate once, then times them). A new shape in a bucket already decided
compiles on a plain kernel call: each binding notes the configurations it has run (dtype, head size, token
counts), logs the first call of each with its time, and counts them (``builds``), so that the router marks
that step as one that waited (no sample of the step trial)."""
from __future__ import annotations

import logging
import time
from typing import NamedTuple

import torch

from . import Backend, register

log = logging.getLogger(__name__)

HEAD_DIMS = frozenset(range(8, 129, 8)) | {256}


class Configuration(NamedTuple):
    """What a first call may compile for, as far as the adapter sees it: the library picks its tile by the
    shape too, and compiles again for a new one (a few ms to tens of ms, after seconds for the first)."""
    device: str
    dtype: torch.dtype
    head_dim: int
    queries: int
    keys: int


class FirstCalls:
    """One binding's ``flash_attn_func``, logging the first call of each configuration with its time (the
    compile). Noted per binding: a session's, for its device."""

    def __init__(self, flash_attn_func):
        self.flash_attn_func = flash_attn_func
        self.seen: set[Configuration] = set()

    @property
    def builds(self) -> int:  # (Bound.builds)
        return len(self.seen)

    def __call__(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, softmax_scale) -> torch.Tensor:
        configuration = Configuration(str(q.device), q.dtype, q.shape[-1], q.shape[-3], k.shape[-3])  # (B, N, H, D)
        if configuration in self.seen:
            return self.attention(q, k, v, softmax_scale)
        started = time.perf_counter()
        out = self.attention(q, k, v, softmax_scale)
        self.seen.add(configuration)
        log.info("FlashAttention 4: the first call of %s d%d, %d x %d tokens, on %s took %.0f ms (it compiles "
                 "its kernel there)", configuration.dtype, configuration.head_dim, configuration.queries,
                 configuration.keys, configuration.device, (time.perf_counter() - started) * 1e3)
        return out

    def attention(self, q, k, v, softmax_scale) -> torch.Tensor:
        out, _lse = self.flash_attn_func(q, k, v, softmax_scale=softmax_scale, causal=False)
        return out


def first_calls(module, flash_attn_func) -> FirstCalls:
    return FirstCalls(flash_attn_func)


def run(fn, q, k, v, call, layout, settings):
    """``flash_attn_func`` on (B, N, H, D): an HND call's tensors as transposed views, its output back."""
    if layout == "HND":
        q, k, v = (t.transpose(1, 2) for t in (q, k, v))
    out = fn(q, k, v, call.scale)
    if layout == "HND":
        return out.transpose(1, 2)
    return out


register(Backend(
    name="fa4", label="FlashAttention 4 (CuTe DSL, exact)", library="FlashAttention 4", module="flash_attn.cute",
    function="flash_attn_func", params=("softmax_scale", "causal"), run=run, head_dims=HEAD_DIMS,
    layouts=frozenset({"NHD", "HND"}), min_capability=(8, 0), exact=True, per_binding=first_calls))
