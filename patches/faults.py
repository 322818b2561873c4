"""Which kernel failure is which, and what each costs.

- out of memory: this call and the rest of the generation on SDPA for that device;
- Triton compile / cache errors: this call on SDPA; ``TRITON_RETIRE_AFTER`` in a row retire
  the device for the session (a success resets the streak);
- anything else (including a wrong-shaped or non-finite result): this call on SDPA.
"""
from __future__ import annotations

import enum

import torch

TRITON_RETIRE_AFTER = 3


class Fault(str, enum.Enum):
    OOM = "oom"
    TRITON = "triton"
    OTHER = "other"
    NON_FINITE = "non_finite"
    WRONG_SHAPE = "wrong_shape"


_OOM_TYPES = tuple(t for t in (getattr(torch, "OutOfMemoryError", None),
                               getattr(torch.cuda, "OutOfMemoryError", None)) if t is not None)
_TRITON_HINTS = ("triton", ".triton", "ptxas", "cuda_utils", "libcuda.so")


def classify(exc: BaseException) -> Fault:
    if isinstance(exc, _OOM_TYPES) or (isinstance(exc, RuntimeError) and "out of memory" in str(exc).lower()):
        return Fault.OOM
    # Triton raises its own classes (triton.compiler.errors.*, triton.runtime.errors.*);
    # a broken or unwritable cache surfaces as an OSError naming the Triton cache path.
    for cls in type(exc).__mro__:
        if cls.__module__.split(".")[0] == "triton":
            return Fault.TRITON
    if isinstance(exc, OSError) and any(h in str(exc).lower() for h in _TRITON_HINTS):
        return Fault.TRITON
    return Fault.OTHER


def describe(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__module__}.{type(exc).__qualname__}: {text[0] if text else ''}"[:300]
