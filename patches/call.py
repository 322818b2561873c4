"""The facts of one attention call, read from what ComfyUI's ``wrap_attn`` hands an override:
``(q, k, v, heads, mask=None, skip_reshape=False, skip_output_reshape=False, **kwargs)``.

With ``skip_reshape`` q/k/v are (B, H, N, D): layout "HND"; otherwise (B, N, H*D), which views as
(B, N, H, D) without a copy: layout "NHD". All of it is read from the arguments, except
``mask_kind``, which looks at the mask (one sync) and is read only when a decision needs it.
``block`` is (type, index, count) where the model says which of its blocks is calling (FLUX,
Chroma, HunyuanVideo and Qwen-Image set ``total_blocks``; a UNet's local ``block_index`` is none).
"""
from __future__ import annotations

import dataclasses
import enum
import functools
from typing import Any, Optional

import torch

HND, NHD = "HND", "NHD"


class MaskKind(str, enum.Enum):
    NONE = "none"
    NOOP = "noop"      # all-true boolean or all-zero additive: changes nothing
    MASKS = "masks"


@dataclasses.dataclass(frozen=True)
class Call:
    q: torch.Tensor
    k: torch.Tensor
    v: torch.Tensor
    heads: int
    mask: Optional[torch.Tensor] = None
    skip_reshape: bool = False
    skip_output_reshape: bool = False
    scale: Optional[float] = None
    low_precision: bool = True
    gqa: bool = False
    block: Optional[tuple[str, int, int]] = None

    @classmethod
    def from_comfy(cls, args: tuple, kwargs: dict[str, Any]) -> Optional["Call"]:
        """The call's facts, or None for arguments in a form no kernel takes (not tensors)."""
        names = ("q", "k", "v", "heads", "mask")
        values = dict(zip(names, args), **{n: kwargs[n] for n in names if n in kwargs})
        if not all(isinstance(values.get(n), torch.Tensor) for n in "qkv") or not isinstance(values.get("heads"), int):
            return None
        options = kwargs.get("transformer_options") or {}
        block = ((options.get("block_type", ""), options.get("block_index", 0), options["total_blocks"])
                 if isinstance(options.get("total_blocks"), int) else None)
        return cls(values["q"], values["k"], values["v"], values["heads"], values.get("mask"),
                   bool(kwargs.get("skip_reshape")), bool(kwargs.get("skip_output_reshape")), kwargs.get("scale"),
                   kwargs.get("low_precision_attention", True) is not False, bool(kwargs.get("enable_gqa")), block)

    @property
    def layout(self) -> str:
        return HND if self.skip_reshape else NHD

    @property
    def device(self) -> torch.device:
        return self.q.device

    @property
    def dtype(self) -> Optional[torch.dtype]:
        """The one dtype of q, k and v; None where they differ."""
        return self.q.dtype if self.q.dtype == self.k.dtype == self.v.dtype else None

    @property
    def q_len(self) -> int:  # the sequence axis is the second-to-last in both layouts
        return self.q.shape[-2]

    @property
    def kv_len(self) -> int:
        return self.k.shape[-2]

    @property
    def head_dim(self) -> int:
        return self.q.shape[-1] if self.skip_reshape else self.q.shape[-1] // max(self.heads, 1)

    def layout_problem(self) -> Optional[str]:
        """Why no kernel can take these tensors as they are, or None."""
        q, k, v = self.q, self.k, self.v
        if not q.ndim == k.ndim == v.ndim == (4 if self.skip_reshape else 3):
            return f"q/k/v of {q.ndim}/{k.ndim}/{v.ndim} dimensions"
        if self.gqa or k.shape != v.shape or k.shape[-1] != q.shape[-1] or k.shape[0] != q.shape[0]:
            return "grouped-query or mismatched q/k/v shapes"
        if (q.shape[1] != self.heads) if self.skip_reshape else q.shape[-1] % self.heads:
            return "head count does not match q"
        if q.stride(-1) != 1 or k.stride(-1) != 1 or v.stride(-1) != 1:
            return "last dimension not contiguous"
        return None

    @property
    def sdpa_style_mask(self) -> bool:
        """A boolean (keep) or additive floating mask, as SDPA takes them."""
        return self.mask is not None and (self.mask.dtype == torch.bool or self.mask.is_floating_point())

    @functools.cached_property
    def mask_kind(self) -> MaskKind:
        mask = self.mask
        if mask is None:
            return MaskKind.NONE
        if mask.dtype == torch.bool:
            return MaskKind.NOOP if bool(mask.all()) else MaskKind.MASKS
        return MaskKind.NOOP if mask.is_floating_point() and not bool(mask.any()) else MaskKind.MASKS

    def sdpa_mask(self) -> Optional[torch.Tensor]:
        """The mask broadcastable to (B, H, Nq, Nkv), as ComfyUI's attention_pytorch hands it to SDPA."""
        mask = self.mask
        if mask is not None and mask.ndim == 2:
            mask = mask.unsqueeze(0)
        return mask.unsqueeze(1) if mask is not None and mask.ndim == 3 else mask

    def views(self, layout: str) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """q, k, v in ``layout``, as views: never a copy."""
        qkv = (self.q, self.k, self.v) if self.skip_reshape else (t.unflatten(-1, (self.heads, -1)) for t in
                                                                    (self.q, self.k, self.v))
        return tuple(t if layout == self.layout else t.transpose(1, 2) for t in qkv)

    def kernel_shape(self, layout: str) -> tuple[int, ...]:
        b, n, h, d = self.q.shape[0], self.q_len, self.heads, self.head_dim
        return (b, h, n, d) if layout == HND else (b, n, h, d)

    def output(self, out: torch.Tensor, layout: str) -> torch.Tensor:
        """A kernel's output in ``layout``, shaped as ComfyUI's attention returns it."""
        hnd = out if layout == HND else out.transpose(1, 2)
        if self.skip_output_reshape:
            return hnd
        b, h, n, d = hnd.shape
        return hnd.transpose(1, 2).reshape(b, n, h * d)
