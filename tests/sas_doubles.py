"""Named test doubles for the kernel boundary, the only thing a CPU test replaces.

``reference_attention`` computes real attention (fp32 SDPA) in the layout SageAttention takes;
the other doubles wrap it to misbehave in one specific way.
"""
from __future__ import annotations

import contextlib

import torch
import torch.nn.functional as F

from sage_attention_scope.patches import kernels

ALL_DTYPES = frozenset({torch.float32, torch.float16, torch.bfloat16})
ANY_HEAD_DIM = frozenset(range(1, 513))


def reference_attention(q, k, v, tensor_layout="HND", is_causal=False, sm_scale=None, smooth_k=False):
    if tensor_layout == "NHD":
        q, k, v = (t.transpose(1, 2) for t in (q, k, v))
    out = F.scaled_dot_product_attention(q.float(), k.float(), v.float(), is_causal=is_causal, scale=sm_scale)
    out = out.to(q.dtype)
    return out.transpose(1, 2) if tensor_layout == "NHD" else out


class RecordingKernel:
    """Callable with SageAttention's signature; records what it received, then behaves."""

    def __init__(self, behave=reference_attention):
        self.behave = behave
        self.calls = []

    def __call__(self, q, k, v, tensor_layout="HND", is_causal=False, sm_scale=None, smooth_k=False):
        self.calls.append({"q": q, "k": k, "v": v, "layout": tensor_layout, "sm_scale": sm_scale,
                           "smooth_k": smooth_k, "device": torch.cuda.current_device()
                           if q.is_cuda else None})
        return self.behave(q, k, v, tensor_layout=tensor_layout, is_causal=is_causal, sm_scale=sm_scale,
                           smooth_k=smooth_k)


def make_kernel(name: str, function, *, device_types=("cpu", "cuda"), dtypes=ALL_DTYPES,
                head_dims=ANY_HEAD_DIM, smooth_k_in_place=False) -> kernels.Kernel:
    spec = kernels.KernelSpec(name, getattr(function, "__name__", name), frozenset(head_dims),
                              frozenset(dtypes), frozenset(device_types), smooth_k_in_place=smooth_k_in_place)
    return kernels.Kernel(spec, function, "test-double")


@contextlib.contextmanager
def registered(kernel: kernels.Kernel):
    kernels.register_test_kernel(kernel)
    try:
        yield kernel
    finally:
        kernels.unregister_test_kernel(kernel.name)


def raising(exc_factory):
    def behave(q, k, v, **kwargs):
        raise exc_factory()
    return behave


def noisy(q, k, v, **kwargs):
    """Plausible-looking but wrong: what SageAttention 1.0.6 does at key length 77."""
    out = reference_attention(q, k, v, **kwargs)
    return out + torch.randn_like(out) * out.std() * 0.5


def non_finite(q, k, v, **kwargs):
    out = reference_attention(q, k, v, **kwargs).clone()
    out[(0,) * out.ndim] = float("nan")
    return out


def nan_after_first_call():
    """A kernel right on its first call (which the check compares with SDPA), NaN on every later one."""
    calls = []

    def behave(q, k, v, **kwargs):
        calls.append(1)
        return reference_attention(q, k, v, **kwargs) if len(calls) == 1 else non_finite(q, k, v, **kwargs)
    return behave


def wrong_shape(q, k, v, **kwargs):
    return reference_attention(q, k, v, **kwargs)[..., :-1]


def smoothing_in_place(q, k, v, tensor_layout="HND", is_causal=False, sm_scale=None, smooth_k=True):
    """Like sageattention 1.0.6: with smooth_k it writes k in place."""
    if smooth_k:
        k -= k.mean(dim=2 if tensor_layout == "HND" else 1, keepdim=True)
    return reference_attention(q, k, v, tensor_layout=tensor_layout, sm_scale=sm_scale)


class FakeClock:
    """A deterministic clock for measured routing: each arm takes the milliseconds given.
    ``run_arms`` also calls the arm once, so a raising kernel raises while being timed."""

    def __init__(self, sage_ms=1.0, sdpa_ms=2.0, run_arms=False):
        self.ms = {"sage": sage_ms, "sdpa": sdpa_ms}
        self.run_arms = run_arms
        self.timed: list[str] = []

    def __call__(self, arm, fn, device):
        self.timed.append(arm)
        if self.run_arms:
            fn()
        return self.ms[arm]


@contextlib.contextmanager
def clock(fake):
    from sage_attention_scope.patches import timing
    previous = timing.use_clock(fake)
    try:
        yield fake
    finally:
        timing.use_clock(previous)
