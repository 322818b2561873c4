"""The per-call benchmark's scoped arms (bench/attention_calls.py): one attention shape, called
as a diffusion model calls it, through the pack's Scope node on a carrier model. The same code
runs this tree's arms and, in its own process, an earlier tree's (``remote_handlers``)."""
from __future__ import annotations

import torch
import torch.nn.functional as F

import comfy.ldm.modules.attention as comfy_attention
import comfy.supported_models

from .arms import in_scope, scope, timed
from .models import TINY_FLUX, build

# The Scope node's inputs per scoped arm; the rest stay at the node's defaults.
SCOPED = {"routed": {}, "measured": {"min_seq_len": 1}, "always": {"min_seq_len": 1, "routing": "always"}}


def inputs(b, h, nq, nkv, d, device, dtype, seed=0):
    """Standard normal q/k/v, with a per-channel offset on k (the outlier pattern K-smoothing is for)."""
    g = torch.Generator(device=device).manual_seed(seed)
    q = torch.randn(b, h, nq, d, device=device, generator=g)
    k = torch.randn(b, h, nkv, d, device=device, generator=g) + 2 * torch.randn(1, 1, 1, d, device=device, generator=g)
    v = torch.randn(b, h, nkv, d, device=device, generator=g)
    return q.to(dtype), k.to(dtype), v.to(dtype)


def fp32_reference(q, k, v, chunk_bytes=4 << 30):
    """fp32 SDPA of (B, H, N, D) q/k/v on the memory-efficient kernel where there is one, else the math
    kernel, whose scores take 4·B·H·Nq·Nkv bytes: so in query chunks of at most ``chunk_bytes`` of them
    (FLUX.2 2048²'s 51 GiB did not fit an 80 GB H100)."""
    q, k, v = q.float(), k.float(), v.float()
    if q.device.type != "cuda":
        return F.scaled_dot_product_attention(q, k, v)
    from torch.nn.attention import SDPBackend, sdpa_kernel
    rows = max(1, chunk_bytes // (4 * q.shape[0] * q.shape[1] * k.shape[-2]))
    with sdpa_kernel([SDPBackend.EFFICIENT_ATTENTION, SDPBackend.MATH]):
        return torch.cat([F.scaled_dot_product_attention(q[..., i:i + rows, :], k, v)
                          for i in range(0, q.shape[-2], rows)], dim=-2)


def comfy_call(q, k, v, heads, options=None):
    """One call as a diffusion model makes it: ComfyUI's wrap_attn-wrapped SDPA, (B, N, H*D) out."""
    return comfy_attention.attention_pytorch(q, k, v, heads, skip_reshape=True, transformer_options=options)


def accuracy(out: torch.Tensor, ref: torch.Tensor) -> dict:
    """Cosine and relative L2 of a (B, N, H*D) output against the fp32 (B, H, N, D) reference."""
    b, h, n, d = ref.shape
    o = out.reshape(b, n, h, d).transpose(1, 2).reshape(-1).float()
    r = ref.reshape(-1)
    return {"cosine": float(F.cosine_similarity(o, r, dim=0)), "rel_l2": float((o - r).norm() / r.norm())}


class ScopedCalls:
    """The scoped arms of one shape: a carrier model (a tiny FLUX.1) through the Scope node once per
    arm, each call made with that model's transformer_options inside its scope."""

    def __init__(self, pack, dims, dtype: torch.dtype, device: torch.device, kernel: str = "auto"):
        b, h, nq, nkv, d = dims
        self.device, self.heads = device, h
        self.q, self.k, self.v = inputs(b, h, nq, nkv, d, device, dtype)
        carrier = build(comfy.supported_models.Flux, dict(TINY_FLUX, hidden_size=256, axes_dim=[16, 56, 56]),
                        dtype=dtype, device=device)
        self.patched = {name: scope(pack, carrier, kernel=kernel, **extra) for name, extra in SCOPED.items()}

    def run(self, name: str, repeats: int) -> tuple[torch.Tensor, float]:
        patched = self.patched[name]
        options = patched.model_options.get("transformer_options")
        call = lambda: comfy_call(self.q, self.k, self.v, self.heads, options)  # noqa: E731
        return in_scope(patched, lambda: (call(), timed(call, self.device, repeats)))


def remote_handlers(pack) -> dict:
    """What the other tree's process answers for bench/attention_calls.py."""
    state = {}

    def setup(dims, dtype, kernel):
        device = torch.device("cuda:0" if torch.cuda.is_available() else "cpu")
        state["arms"] = ScopedCalls(pack, dims, getattr(torch, dtype), device, kernel)
        state["ref"] = fp32_reference(state["arms"].q, state["arms"].k, state["arms"].v)
        return list(SCOPED)

    def run(name, repeats):
        out, ms = state["arms"].run(name, repeats)
        return {"ms": ms, **accuracy(out, state["ref"])}

    return {"calls.setup": setup, "calls.run": run}
