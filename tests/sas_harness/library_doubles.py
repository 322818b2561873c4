"""Every kernel library the pack declares a kernel of, as a named double with the library's real signatures,
whose kernels all answer through one output transform, ``spoil``: right (the default), black, NaN, or NaN from
its second call on. For what must hold for every candidate (the first-call check, the non-finite guard):
``machine_for(kernel, spoil)`` is a session on a GPU the kernel runs on, whose one library is the kernel's.

A library the pack adds without a double here has no entry in ``LIBRARIES``: the tests built on this module
fail for its kernels until it has one."""
from __future__ import annotations

from typing import Callable

import torch

from sage_attention_scope.patches import Session, backends
from sage_attention_scope.patches.backends import torch_sdpa

from . import doubles, pip_doubles

Spoil = Callable[[torch.Tensor], torch.Tensor]


def right(out: torch.Tensor) -> torch.Tensor:
    return out


def black(out: torch.Tensor) -> torch.Tensor:
    """Zeros: the black image users report."""
    return torch.zeros_like(out)


nan = doubles.with_nan
nan_after_the_check = doubles.nan_from_the_second_output  # right on the checked first call, NaN after it


def _sageattention1(spoil: Spoil, capability: tuple[int, int]):
    def sageattn(q, k, v, tensor_layout="HND", is_causal=False, sm_scale=None, smooth_k=True):  # 1.0.6's
        return spoil(doubles.reference_attention(q, k, v, tensor_layout=tensor_layout, sm_scale=sm_scale))
    return {"sageattention": doubles.library(sageattn=sageattn)}


def _sageattention2(spoil: Spoil, capability: tuple[int, int]):
    return {"sageattention": doubles.sageattention2_module(spoil=spoil)}


def _sageattention3(spoil: Spoil, capability: tuple[int, int]):
    def sageattn3_blackwell(q, k, v, attn_mask=None, is_causal=False, per_block_mean=True, **kwargs):
        return spoil(doubles.sageattn3_blackwell(q, k, v, attn_mask, is_causal, per_block_mean, **kwargs))
    return {"sageattn3": doubles.library(sageattn3_blackwell=sageattn3_blackwell)}


def _comfy_kitchen(spoil: Spoil, capability: tuple[int, int]):
    def int8_attention(q, k, v, *, scale=None, attn_mask=None):
        return spoil(doubles.int8_attention(q, k, v, scale=scale, attn_mask=attn_mask))
    return {"comfy_kitchen": doubles.library(int8_attention=int8_attention,
                                             int8_attention_is_available=doubles.int8_attention_is_available)}


def _pytorch(spoil: Spoil, capability: tuple[int, int]):
    return {torch_sdpa.__name__: doubles.torch_sdpa_module(spoil=spoil)}


def _flash_attention4(spoil: Spoil, capability: tuple[int, int]):
    flash = pip_doubles.FlashAttention4(arch=capability[0] * 10 + capability[1], behave=spoil)
    return {"flash_attn.cute": flash.module()}


def _cudnn_frontend(spoil: Spoil, capability: tuple[int, int]):
    return {"cudnn": pip_doubles.Cudnn(behave=spoil).module()}


# Backend.library -> its double: (spoil, the GPU's capability) -> {module name: module double}
LIBRARIES: dict[str, Callable[[Spoil, tuple[int, int]], dict]] = {
    "SageAttention 1": _sageattention1,
    "SageAttention 2": _sageattention2,
    "SageAttention 3": _sageattention3,
    "comfy-kitchen": _comfy_kitchen,
    "PyTorch": _pytorch,
    "FlashAttention 4": _flash_attention4,
    "cuDNN frontend": _cudnn_frontend,
}


def runs_on(backend: backends.Backend) -> tuple[int, int]:
    """A GPU capability ``backend`` runs on: the oldest it declares."""
    return min(backend.capabilities) if backend.capabilities else backend.min_capability


def machine_for(kernel: str, spoil: Spoil = right, clock=None) -> Session:
    """A session on a GPU that ``kernel`` runs on (every device is one, the CPU too), whose one library is the
    kernel's, spoiled by ``spoil``."""
    backend = backends.REGISTRY[kernel]
    capability = runs_on(backend)
    modules = LIBRARIES[backend.library](spoil, capability)
    finder = doubles.machine_finder(modules, capability, versions=lambda module: "test double")
    return Session(store=None, clock=clock or doubles.FakeClock(), finder=finder)
