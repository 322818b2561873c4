"""The facts of one attention call, from what ``wrap_attn`` hands an override: ``(q, k, v, heads,
mask=None, skip_reshape=False, skip_output_reshape=False, **kwargs)``. q/k/v are (B, H, N, D) with
``skip_reshape`` ("HND"), else (B, N, H*D), viewed as (B, N, H, D) ("NHD"). Only ``mask_kind`` looks
into a tensor (one sync), when a decision needs it. ``block``: where the call sits among the model's
blocks, where the model sets ``total_blocks`` in its transformer options (a UNet's ``block_index`` is
local to its stage, so it sets none).

Three forms are taken by a copy (``copies``): grouped-query k/v (``enable_gqa``: fewer key/value heads
than query heads) are repeated to the query's heads, as ComfyUI's own SageAttention path does; a q/k/v
whose last dimension is not contiguous (a RoPE that returns strided views) is made contiguous; and the
keys a mask keeps for every query, where the masked ones are not all trailing (a text padding placed
before the image tokens), are gathered. The copy runs inside the kernel's arm, so measured routing
weighs it against ComfyUI's attention."""
from __future__ import annotations

import dataclasses
import enum
import functools
import math
from typing import Any, NamedTuple, Optional

import torch

HND, NHD = "HND", "NHD"
POSITIONAL = ("q", "k", "v", "heads", "mask")  # wrap_attn's positional arguments; the rest come by keyword


def comfy_arguments(args: tuple, kwargs: dict[str, Any]) -> dict[str, Any]:
    """An attention call's arguments by name, as ``wrap_attn`` hands them to an override."""
    return dict(zip(POSITIONAL, args), **kwargs)


def allows_low_precision(arguments: dict[str, Any]) -> bool:
    """False only where the model opted out (``low_precision_attention=False``, newer ComfyUI)."""
    return arguments.get("low_precision_attention", True) is not False


class Block(NamedTuple):
    """Where a call sits among the model's blocks: its block type ("double", "single", ...), its index among
    the blocks of that type, and how many there are."""
    kind: str
    index: int
    count: int


def block_of(arguments: dict[str, Any]) -> Optional[Block]:
    """The call's block where the model sets ``total_blocks`` in its transformer options, else None."""
    options = arguments.get("transformer_options") or {}
    total = options.get("total_blocks")
    if not isinstance(total, int):
        return None
    return Block(options.get("block_type", ""), options.get("block_index", 0), total)


def dtype_name(dtype: torch.dtype) -> str:
    """A dtype as the pack's keys and reports name it: ``bfloat16`` for ``torch.bfloat16``."""
    return str(dtype).removeprefix("torch.")


def signature(arguments: dict[str, Any]) -> Optional[tuple]:
    """Everything ``decide`` reads of a call that holds no mask, without parsing it into a ``Call``: q/k/v's
    shapes, dtypes and device, the head count, the flags, the scale and the block. Two calls with one
    signature are decided alike while nothing else changes (the router remembers a run's routes by it).
    None for a call with a mask (what it masks lies in its values) or without three tensors."""
    q, k, v, heads = arguments.get("q"), arguments.get("k"), arguments.get("v"), arguments.get("heads")
    if arguments.get("mask") is not None or not (_is_sequence(q) and _is_sequence(k) and _is_sequence(v)
                                                 and isinstance(heads, int)):
        return None
    return (q.shape, k.shape, v.shape, q.dtype, k.dtype, v.dtype, q.device, heads,
            bool(arguments.get("skip_reshape")), arguments.get("scale"), allows_low_precision(arguments),
            bool(arguments.get("enable_gqa")), block_of(arguments))


class MaskKind(str, enum.Enum):
    NONE = "none"
    NOOP = "noop"                # all-true boolean or all-zero additive: changes nothing
    KEY_PADDING = "key_padding"  # the same trailing keys masked out for every query: slicing them off is exact
    KEY_SUBSET = "key_subset"    # the same keys masked out for every query, not all trailing: gathering the rest
    #                              is exact
    MASKS = "masks"


class MaskFacts(NamedTuple):
    kind: MaskKind
    keys_kept: int  # the keys the mask keeps for every query (all of them but under a key-padding mask)


# Not frozen: one is made for most attention calls, and a frozen dataclass's __init__ costs several times a
# plain one's, paid in full in a host-bound step. Read only, but for the sparse tier's text fields.
@dataclasses.dataclass(eq=False)
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
    block: Optional[Block] = None
    layout: str = NHD
    dtype: Optional[torch.dtype] = None  # the one dtype of q, k and v; None where they differ
    dtype_name: str = ""                 # q's dtype in words (dtype_name): the checks' and buckets' keys
    q_len: int = 0                       # the sequence axis is the second-to-last in both layouts
    kv_len: int = 0
    head_dim: int = 0
    device_name: str = ""                # str(q.device): the key of every per-device record, made once a call
    text_at: str = ""                    # a sparse kernel's call: where the text tokens sit (families.TEXT_*)
    text_tokens: int = 0                 # and how many (the model's context); both set by the sparse tier

    @classmethod
    def from_arguments(cls, a: dict[str, Any]) -> Optional["Call"]:
        """The call's facts from its arguments by name (``comfy_arguments``), or None for arguments in a form
        no kernel takes (not tensors)."""
        q, k, v, heads, hnd = a.get("q"), a.get("k"), a.get("v"), a.get("heads"), bool(a.get("skip_reshape"))
        if not (_is_sequence(q) and _is_sequence(k) and _is_sequence(v) and isinstance(heads, int)):
            return None
        if not hnd and q.ndim == 3 and v.ndim == 4:  # SD3 hands v as (B, N, H, D) beside (B, N, H*D) q and k
            v = v.flatten(-2)
        dtype = None
        if q.dtype == k.dtype == v.dtype:
            dtype = q.dtype
        if hnd:
            layout, head_dim = HND, q.shape[-1]
        else:
            layout, head_dim = NHD, q.shape[-1] // max(heads, 1)
        return cls(q=q, k=k, v=v, heads=heads, mask=a.get("mask"), skip_reshape=hnd,
                   skip_output_reshape=bool(a.get("skip_output_reshape")), scale=a.get("scale"),
                   low_precision=allows_low_precision(a), gqa=bool(a.get("enable_gqa")), block=block_of(a),
                   layout=layout, dtype=dtype, dtype_name=dtype_name(q.dtype), q_len=q.shape[-2],
                   kv_len=k.shape[-2], head_dim=head_dim, device_name=str(q.device))

    @property
    def device(self) -> torch.device:
        return self.q.device

    @functools.cached_property
    def unusable_layout(self) -> Optional[str]:
        """Why no kernel can take these tensors, even copied, or None (read once a call, by ``decide``)."""
        return self.layout_problem()

    def layout_problem(self) -> Optional[str]:
        """Why no kernel can take these tensors, even copied, or None."""
        q, k, v = self.q, self.k, self.v
        dimensions = 4 if self.skip_reshape else 3
        if not q.ndim == k.ndim == v.ndim == dimensions:
            return f"q/k/v of {q.ndim}/{k.ndim}/{v.ndim} dimensions"
        if self.skip_reshape:
            heads_match = q.shape[1] == self.heads
        else:
            heads_match = q.shape[-1] % self.heads == 0
        if not heads_match:
            return "head count does not match q"
        kv_heads = self.kv_heads
        if self.skip_reshape:  # (B, H, N, D): heads and head size apart
            head_part, expected_head_part = (k.shape[1], k.shape[-1]), (kv_heads, self.head_dim)
        else:  # (B, N, H*D)
            head_part, expected_head_part = (k.shape[-1],), (kv_heads * self.head_dim,)
        if k.shape != v.shape or k.shape[0] != q.shape[0] or head_part != expected_head_part:
            return "mismatched q/k/v shapes"
        if not kv_heads or self.heads % kv_heads:
            return f"{self.heads} query heads cannot share {kv_heads} key/value heads"
        return None

    @property
    def kv_heads(self) -> int:
        """Key/value heads: the query's, but fewer under grouped-query attention."""
        if not self.gqa:
            return self.heads
        return self.k.shape[1] if self.skip_reshape else self.k.shape[-1] // max(self.head_dim, 1)

    @property
    def copies(self) -> bool:
        """Whether the kernel gets copies (k/v repeated for grouped-query heads, a tensor not contiguous in its
        last dimension, the keys a mask keeps gathered) rather than views of what ComfyUI handed over."""
        return (self.kv_heads != self.heads or any(t.stride(-1) != 1 for t in (self.q, self.k, self.v))
                or (self.mask is not None and self.mask_kind is MaskKind.KEY_SUBSET))

    @property
    def mask_kind(self) -> MaskKind:
        return self.mask_facts.kind

    @functools.cached_property
    def mask_facts(self) -> MaskFacts:
        """The mask's kind and the keys it keeps."""
        mask = self.mask
        if mask is None:
            return MaskFacts(MaskKind.NONE, self.kv_len)
        if not (mask.dtype == torch.bool or mask.is_floating_point()):
            return MaskFacts(MaskKind.MASKS, self.kv_len)
        if mask.dtype == torch.bool:  # (ComfyUI's own CPU attention reads these as a bias: not sliced)
            return MaskFacts(MaskKind.NOOP if bool(mask.all()) else MaskKind.MASKS, self.kv_len)
        if not bool(mask.any()):
            return MaskFacts(MaskKind.NOOP, self.kv_len)
        keeps = self.keys_kept
        if keeps is None:
            return MaskFacts(MaskKind.MASKS, self.kv_len)
        kept = int(keeps.sum())
        if bool(keeps[:kept].all()):
            return MaskFacts(MaskKind.KEY_PADDING, kept)
        return MaskFacts(MaskKind.KEY_SUBSET, kept)

    @functools.cached_property
    def keys_kept(self) -> Optional[torch.Tensor]:
        """Which keys a mask keeps, where it is one row for every query that either keeps a key (0) or masks it
        out (-inf, or ComfyUI's -finfo.max: no weight left after the softmax); None for any other mask. Read
        once a call (its tests sync), as ``mask_facts`` and ``views`` both need it."""
        mask = self.mask
        if math.prod(mask.shape[:-1]) != 1 or mask.shape[-1] != self.kv_len:
            return None
        row = mask.reshape(-1)
        keeps = row == 0
        return keeps if bool(keeps.any()) and bool((keeps | (row <= -1e4)).all()) else None

    @functools.cached_property
    def kept_index(self) -> torch.Tensor:
        """The positions of the keys a KEY_SUBSET mask keeps (one sync, once a call: the kernel's timed runs
        reuse it)."""
        return self.keys_kept.nonzero().flatten()

    def sdpa_mask(self) -> Optional[torch.Tensor]:
        """The mask broadcastable to (B, H, Nq, Nkv), as ComfyUI's attention_pytorch gives SDPA; None
        where it was dropped (masks nothing) or the keys it masks left out (``views``)."""
        mask = None if self.mask is None or self.mask_kind is not MaskKind.MASKS else self.mask
        if mask is not None and mask.ndim == 2:
            mask = mask.unsqueeze(0)
        return mask.unsqueeze(1) if mask is not None and mask.ndim == 3 else mask

    def views(self, layout: str) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """q, k, v in ``layout``, k and v without the keys a key mask drops for every query: views, except where
        ``copies`` says (grouped-query k/v repeated, a last dimension made contiguous, the kept keys gathered)."""
        heads_axis = 1 if self.skip_reshape else 2
        if self.skip_reshape:
            q, k, v = self.q, self.k, self.v
        else:
            q = self.q.unflatten(-1, (self.heads, -1))
            k, v = (t.unflatten(-1, (self.kv_heads, -1)) for t in (self.k, self.v))
        if self.kv_heads != self.heads:  # each query head reads key/value head (its index // group), as SDPA's
            k, v = (t.repeat_interleave(self.heads // self.kv_heads, dim=heads_axis) for t in (k, v))
        keys_axis = -2 if self.skip_reshape else 1
        if self.mask is not None and self.mask_kind is MaskKind.KEY_PADDING:
            k, v = (t.narrow(keys_axis, 0, self.mask_facts.keys_kept) for t in (k, v))
        elif self.mask is not None and self.mask_kind is MaskKind.KEY_SUBSET:
            k, v = (t.index_select(keys_axis, self.kept_index) for t in (k, v))
        q, k, v = (t if t.stride(-1) == 1 else t.contiguous() for t in (q, k, v))
        return tuple(t if layout == self.layout else t.transpose(1, 2) for t in (q, k, v))

    def output(self, out: torch.Tensor, layout: str) -> torch.Tensor:
        """A kernel's output in ``layout``, shaped as ComfyUI's attention returns it."""
        if self.skip_output_reshape:
            return out if layout == HND else out.transpose(1, 2)
        nhd = out if layout == NHD else out.transpose(1, 2)  # (B, N, H, D) -> (B, N, H*D)
        return nhd.reshape(*nhd.shape[:2], -1)


def _is_sequence(t) -> bool:
    """A tensor with a sequence axis (second-to-last) and a feature axis."""
    return isinstance(t, torch.Tensor) and t.ndim >= 2
