"""Why an attention call stayed on PyTorch SDPA: one closed set, counted per call."""
from __future__ import annotations

import enum


class Reason(str, enum.Enum):
    """Every SDPA route carries exactly one of these. Values are stable, snake_case keys
    (they appear in the status payload and the docs); ``label`` is the human text."""

    DISABLED = "disabled"
    OUTSIDE_SCOPE = "outside_scope"
    NO_KERNEL = "no_kernel"
    NOT_CUDA = "not_cuda"
    DEVICE_RETIRED = "device_retired"
    OOM_EARLIER = "oom_earlier"
    LOW_PRECISION_OPT_OUT = "low_precision_opt_out"
    DTYPE = "dtype"
    HEAD_DIM = "head_dim"
    LAYOUT = "layout"
    TOO_SHORT = "too_short"
    FAMILY = "family"
    CHECK_FAILED = "check_failed"
    MASK = "mask"
    KERNEL_FAULT = "kernel_fault"
    MEASURED_SLOWER = "measured_slower"

    @property
    def label(self) -> str:
        return _LABELS[self]


_LABELS = {
    Reason.DISABLED: "scope disabled",
    Reason.OUTSIDE_SCOPE: "called outside the sampling scope",
    Reason.NO_KERNEL: "no SageAttention kernel for this GPU",
    Reason.NOT_CUDA: "tensors not on a CUDA device",
    Reason.DEVICE_RETIRED: "device retired after repeated kernel errors",
    Reason.OOM_EARLIER: "out of memory earlier in this generation",
    Reason.LOW_PRECISION_OPT_OUT: "model opted out (low_precision_attention=False)",
    Reason.DTYPE: "dtype not fp16/bf16 (or not what the kernel takes)",
    Reason.HEAD_DIM: "head size the kernel does not support",
    Reason.LAYOUT: "layout the kernel cannot take without a copy",
    Reason.TOO_SHORT: "query or key shorter than the minimum sequence length",
    Reason.FAMILY: "not eligible for this model family",
    Reason.CHECK_FAILED: "first-call check against SDPA failed",
    Reason.MASK: "attention mask given",
    Reason.KERNEL_FAULT: "kernel raised or returned a bad result",
    Reason.MEASURED_SLOWER: "SageAttention measured slower than SDPA for this shape",
}
assert set(_LABELS) == set(Reason)
