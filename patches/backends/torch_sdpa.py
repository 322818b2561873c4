"""torch's own exact attention kernels, each pinned alone: cuDNN, flash and memory-efficient SDPA. They
compute what ComfyUI's attention computes, without quantising, so the first-call check holds them to
exact rounding (checks.py). Which is fastest depends on the GPU and the shape: ComfyUI may run SDPA
flash-first (comfy/ops.py), and cuDNN is faster than flash at diffusion sizes on some GPUs and slower
on others, so each is a measured candidate like any kernel.

The functions below are the kernel boundary (a test hands in a module with their signatures): each
runs ``torch.nn.functional.scaled_dot_product_attention`` under ``sdpa_kernel`` with its backend alone,
where torch raises rather than fall back to another backend, so a candidate is what it says it is."""
from __future__ import annotations

import torch
import torch.nn.functional as F

from . import Backend, register

try:
    from torch.nn.attention import SDPBackend, sdpa_kernel
except ImportError:  # torch before 2.3: no pinned backends, so no exact candidates
    SDPBackend = sdpa_kernel = None

HALF = frozenset({torch.float16, torch.bfloat16})
ALIGNED_HEAD_DIMS = frozenset(range(8, 257, 8))  # flash and cuDNN need a head size that is a multiple of 8


def _pinned(backend, q, k, v, attn_mask=None, scale=None):
    with sdpa_kernel([backend]):
        return F.scaled_dot_product_attention(q, k, v, attn_mask=attn_mask, scale=scale)


def cudnn_attention(q, k, v, attn_mask=None, scale=None):
    return _pinned(SDPBackend.CUDNN_ATTENTION, q, k, v, attn_mask, scale)


def flash_attention(q, k, v, attn_mask=None, scale=None):
    return _pinned(SDPBackend.FLASH_ATTENTION, q, k, v, attn_mask, scale)


def efficient_attention(q, k, v, attn_mask=None, scale=None):
    return _pinned(SDPBackend.EFFICIENT_ATTENTION, q, k, v, attn_mask, scale)


def cudnn_available(device) -> bool:
    return sdpa_kernel is not None and torch.backends.cudnn.is_available()


def flash_available(device) -> bool:
    return sdpa_kernel is not None and torch.backends.cuda.is_flash_attention_available()


def efficient_available(device) -> bool:
    return sdpa_kernel is not None


def torch_version() -> str:
    cudnn = torch.backends.cudnn.version() if torch.backends.cudnn.is_available() else None
    return f"PyTorch {torch.__version__}" + (f", cuDNN {cudnn}" if cudnn else "")


def run(fn, q, k, v, call, layout, settings):
    return fn(q, k, v, attn_mask=call.sdpa_mask(), scale=call.scale)


def _backend(name: str, label: str, function: str, available: str, **declared) -> Backend:
    return Backend(name=name, label=f"PyTorch SDPA, {label} only (exact)", library="PyTorch", module=__name__,
                   function=function, params=("attn_mask", "scale"), run=run, layouts=frozenset({"HND"}),
                   transposed_views=True, exact=True, available=available, version_function="torch_version",
                   **declared)


register(
    # Grouped-query attention through torch's cuDNN backend is silently wrong on sm100: not offered there.
    _backend("sdpa_cudnn", "cuDNN", "cudnn_attention", "cudnn_available", head_dims=ALIGNED_HEAD_DIMS,
             grouped_query_unsafe_on=frozenset({(10, 0)})),
    _backend("sdpa_flash", "flash", "flash_attention", "flash_available", head_dims=ALIGNED_HEAD_DIMS),
    _backend("sdpa_efficient", "memory-efficient", "efficient_attention", "efficient_available",
             head_dims=frozenset(range(1, 257)), dtypes=HALF | {torch.float32}, masks=True, min_capability=(5, 0)),
)
