"""Pure decisions: may this attention call run on the kernel, and if not, why not.

``AttentionCall`` is a read-only view of the arguments ComfyUI's ``wrap_attn`` hands an
override: ``(q, k, v, heads, mask=None, skip_reshape=False, skip_output_reshape=False,
**kwargs)``. With ``skip_reshape`` q/k/v are (B, H, N, D) -> layout "HND"; otherwise
(B, N, H*D), which views as (B, N, H, D) without a copy -> layout "NHD".
"""
from __future__ import annotations

import dataclasses
from typing import Any, Callable, Optional

import torch

from .reasons import Reason


@dataclasses.dataclass(frozen=True)
class AttentionCall:
    q: torch.Tensor
    k: torch.Tensor
    v: torch.Tensor
    heads: int
    mask: Optional[torch.Tensor]
    skip_reshape: bool
    skip_output_reshape: bool
    scale: Optional[float]
    low_precision_attention: bool
    enable_gqa: bool
    transformer_options: Optional[dict]

    @classmethod
    def parse(cls, args: tuple, kwargs: dict[str, Any]) -> "AttentionCall":
        names = ("q", "k", "v", "heads", "mask")
        values = dict(zip(names, args))
        for name in names:
            if name in kwargs:
                values[name] = kwargs[name]
        return cls(
            q=values["q"], k=values["k"], v=values["v"], heads=int(values["heads"]),
            mask=values.get("mask"),
            skip_reshape=bool(kwargs.get("skip_reshape", False)),
            skip_output_reshape=bool(kwargs.get("skip_output_reshape", False)),
            scale=kwargs.get("scale"),
            low_precision_attention=kwargs.get("low_precision_attention", True) is not False,
            enable_gqa=bool(kwargs.get("enable_gqa", False)),
            transformer_options=kwargs.get("transformer_options"),
        )

    @property
    def layout(self) -> str:
        return "HND" if self.skip_reshape else "NHD"

    @property
    def device(self) -> torch.device:
        return self.q.device

    @property
    def head_dim(self) -> int:
        return self.q.shape[-1] if self.skip_reshape else self.q.shape[-1] // max(self.heads, 1)

    @property
    def q_len(self) -> int:
        return self.q.shape[2] if self.skip_reshape else self.q.shape[1]

    @property
    def kv_len(self) -> int:
        return self.k.shape[2] if self.skip_reshape else self.k.shape[1]

    def kernel_views(self) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """q/k/v in the kernel's layout; views only, never copies."""
        if self.skip_reshape:
            return self.q, self.k, self.v
        return tuple(t.unflatten(-1, (self.heads, -1)) for t in (self.q, self.k, self.v))

    def output_from_kernel(self, out: torch.Tensor) -> torch.Tensor:
        """Kernel output (in ``layout``) -> the shape ComfyUI's attention returns."""
        if self.skip_reshape:  # out is (B, H, N, D)
            if self.skip_output_reshape:
                return out
            b, h, n, d = out.shape
            return out.transpose(1, 2).reshape(b, n, h * d)
        if self.skip_output_reshape:  # out is (B, N, H, D)
            return out.transpose(1, 2)
        return out.flatten(-2)

    def expected_kernel_shape(self) -> tuple[int, ...]:
        if self.skip_reshape:
            return tuple(self.q.shape)
        b, n, _ = self.q.shape
        return (b, n, self.heads, self.head_dim)


def layout_problem(call: AttentionCall) -> str | None:
    """Why the kernel cannot take these tensors' shapes as they are, or None."""
    q, k, v = call.q, call.k, call.v
    want_ndim = 4 if call.skip_reshape else 3
    if not (q.ndim == k.ndim == v.ndim == want_ndim):
        return f"expected {want_ndim}-d q/k/v, got {q.ndim}/{k.ndim}/{v.ndim}"
    if call.enable_gqa or k.shape != v.shape or k.shape[-1] != q.shape[-1] or k.shape[0] != q.shape[0]:
        return "grouped-query or mismatched q/k/v shapes"
    if call.skip_reshape and q.shape[1] != call.heads:
        return "head count differs from q's head axis"
    if not call.skip_reshape and q.shape[-1] % call.heads:
        return "inner size not divisible by heads"
    return None


def stride_problem(call: AttentionCall) -> str | None:
    """The kernel reads each row of head_dim values as one contiguous run."""
    if call.q.stride(-1) != 1 or call.k.stride(-1) != 1 or call.v.stride(-1) != 1:
        return "last dimension not contiguous"
    return None


def mask_masks_nothing(mask: torch.Tensor) -> bool:
    """An all-true boolean mask or an all-zero additive mask changes nothing. (Costs one
    host sync, paid only by calls that are otherwise eligible.)"""
    if mask.dtype == torch.bool:
        return bool(mask.all())
    if mask.is_floating_point():
        return bool((mask == 0).all())
    return False


@dataclasses.dataclass(frozen=True)
class KernelTraits:
    head_dims: frozenset
    dtypes: frozenset


FamilyRule = Callable[[AttentionCall], Optional[Reason]]


def too_short(call: AttentionCall, min_seq_len: int) -> bool:
    """Whether the query or key sequence is shorter than ``min_seq_len``. The sequence axis is
    the second-to-last in both layouts ((B, N, H*D) and (B, H, N, D)), so this reads two shapes
    and nothing else: the scope's override tests it first, on every call (inlined there)."""
    q, k = call.q, call.k
    return q.ndim >= 2 and k.ndim >= 2 and (k.shape[-2] < min_seq_len or q.shape[-2] < min_seq_len)


def signature_reason(call: AttentionCall, traits: KernelTraits, min_seq_len: int) -> Reason | None:
    """Reasons that follow from the call's signature alone (shapes, dtypes, flags): the router
    works these out once per signature. Too short comes first, as in the scope's override."""
    if too_short(call, min_seq_len):
        return Reason.TOO_SHORT
    if not call.low_precision_attention:
        return Reason.LOW_PRECISION_OPT_OUT
    if not (call.q.dtype == call.k.dtype == call.v.dtype) or call.q.dtype not in traits.dtypes:
        return Reason.DTYPE
    if layout_problem(call) is not None:
        return Reason.LAYOUT
    if call.head_dim not in traits.head_dims:
        return Reason.HEAD_DIM
    return None


def static_reason(call: AttentionCall, traits: KernelTraits, min_seq_len: int,
                  family_rule: FamilyRule | None = None) -> Reason | None:
    """Reasons that follow from the call's own arguments; None when it may run on the kernel.
    Strides and the family's rule come after the signature's reasons; the mask comes last in
    the router (its test costs a sync)."""
    reason = signature_reason(call, traits, min_seq_len)
    if reason is not None:
        return reason
    if stride_problem(call) is not None:
        return Reason.LAYOUT
    if family_rule is not None:
        return family_rule(call)
    return None
