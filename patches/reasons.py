"""Why an attention call kept ComfyUI's attention (``Reason``: ComfyUI's own function, or an override set
before the Scope) and how a kernel failed (``Fault``); a generation counts both per device (ledger.Tally)."""
from __future__ import annotations

import enum

import torch

class Reason(str, enum.Enum):
    """Why a call kept ComfyUI's attention: a stable key (status payload, docs) and its label."""

    def __new__(cls, value: str, label: str):
        member = str.__new__(cls, value)
        member._value_, member.label = value, label
        return member

    DISABLED = "disabled", "scope disabled"
    OUTSIDE_SCOPE = "outside_scope", "called outside the sampling scope"
    NOT_TENSORS = "not_tensors", "arguments no kernel takes (q, k, v not tensors)"
    TOO_SHORT = "too_short", "query or key shorter than the minimum sequence length"
    NOT_CUDA = "not_cuda", "tensors not on a CUDA device"
    NO_KERNEL = "no_kernel", "no attention kernel for this GPU"
    LOW_PRECISION_OPT_OUT = "low_precision_opt_out", "model opted out (low_precision_attention=False)"
    DTYPE = "dtype", "dtype the kernel does not take"
    LAYOUT = "layout", "layout the kernel cannot take without a copy"
    HEAD_DIM = "head_dim", "head size the kernel does not support"
    SCALE = "scale", "softmax scale the kernel cannot apply"
    GROUPED_QUERY = "grouped_query", "grouped-query attention the kernel is wrong on for this GPU"
    OUTSIDE_STEPS = "outside_steps", "step outside the Scope's start/end percent"
    OUTSIDE_BLOCKS = "outside_blocks", "block among the first/last kept on ComfyUI's attention"
    DEVICE_RETIRED = "device_retired", "device retired after repeated kernel errors"
    OOM_EARLIER = "oom_earlier", "out of memory earlier in this generation"
    CHECK_FAILED = "check_failed", "first-call check against ComfyUI's attention failed"
    MASK = "mask", "attention mask the kernel cannot take"
    MEASURED_SLOWER = "measured_slower", "kernels measured slower than ComfyUI's attention for this shape"
    KERNEL_FAULT = "kernel_fault", "kernel raised or returned a bad result"
    STEP_TRIAL = "step_trial", "step timed once without the kernels, to compare with a step with them"
    STEP_SLOWER = "step_slower", "whole step measured no faster with the kernels than without (Scope stepped aside)"
    # Why a call the sparse input could have taken ran dense (its own count: the call still goes to the
    # fastest dense candidate or ComfyUI's attention, for the reasons above).
    SPARSE_UNAVAILABLE = "sparse_unavailable", "no sparse kernel here (comfy-kitchen 0.2.40 or newer has sol_attn)"
    SPARSE_UNDECLARED = "sparse_undeclared", "model family that does not say where its text tokens sit"
    SPARSE_BEFORE_START = "sparse_before_start", "step before the sparse start_percent"
    SPARSE_FIRST_BLOCK = "sparse_first_block", "first block of its block type (kept dense)"
    SPARSE_SHORT = "sparse_short", "fewer tokens than sparse_min_tokens"
    SPARSE_CROSS = "sparse_cross", "cross-attention (query and keys of different lengths)"
    SPARSE_GATE = "sparse_gate", "its kind's first sparse call was further from dense than sparse_gate"


class Fault(str, enum.Enum):  # how a kernel failed (router.fault says what follows from each)
    OOM = "oom"
    TRITON = "triton"
    OTHER = "other"
    NON_FINITE = "non_finite"
    WRONG_SHAPE = "wrong_shape"


TRITON_RETIRE_AFTER = 3  # Triton faults in a row that retire a device for the session


class WrongShape(ValueError):  # a kernel returned something other than the attention output
    pass


_OOM_TYPES = tuple({getattr(torch, "OutOfMemoryError", MemoryError),
                    getattr(torch.cuda, "OutOfMemoryError", MemoryError)})


def classify(exc: BaseException) -> Fault:
    if isinstance(exc, WrongShape):
        return Fault.WRONG_SHAPE
    if isinstance(exc, _OOM_TYPES) or (isinstance(exc, RuntimeError) and "out of memory" in str(exc).lower()):
        return Fault.OOM
    # Triton raises its own classes; a broken or unwritable cache is an OSError naming its path.
    if any(cls.__module__.split(".")[0] == "triton" for cls in type(exc).__mro__) or (
            isinstance(exc, OSError)
            and any(h in str(exc).lower() for h in ("triton", "ptxas", "cuda_utils", "libcuda.so"))):
        return Fault.TRITON
    return Fault.OTHER


def describe(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__module__}.{type(exc).__qualname__}: {text[0] if text else ''}"[:300]
