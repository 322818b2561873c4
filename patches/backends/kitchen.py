"""comfy-kitchen's kernels. ``int8_attention(q, k, v, *, scale=None, attn_mask=None)``: one fused INT8
launch on (B, H, N, D) or strided views of it, head sizes up to 256 (padded inside), masks as SDPA takes
them. Accurate everywhere measured, and slower than SDPA on some GPUs (docs/measured.md): measured routing
decides.

``sol_attn`` (0.2.40 and newer): Sol-Attn, training-free sparse attention on (B, T, H, 128). Each
64-token query block attends a routed subset of key blocks exactly and every other block through one
pooled term; ``tau`` (or ``topk_ratio``) sets how many. The Scope offers it only where the node's
``sparse`` input asks and the call suits it (decide.sparse_refusal); the text tokens of a joint
sequence are kept exact: their key blocks are sinks every query attends, their query blocks attend
everything."""
import torch

from . import Backend, register

SOL_BLOCK = 64  # sol_attn's block of tokens
SOL_ATTN = "kitchen_sol_attn"


def run(fn, q, k, v, call, layout, settings):
    return fn(q, k, v, scale=call.scale, attn_mask=call.sdpa_mask())


def text_blocks(text_at: str, text_tokens: int, tokens: int):
    """The [start, end) blocks of ``tokens`` that hold ``text_tokens`` text tokens placed ``text_at``
    ("first" or "last"), a block partly text counted whole; None where there is no text."""
    if text_tokens <= 0 or text_at not in ("first", "last"):
        return None
    blocks = -(-tokens // SOL_BLOCK)
    if text_at == "first":
        return [0, min(blocks, -(-text_tokens // SOL_BLOCK))]
    return [max(0, (tokens - text_tokens) // SOL_BLOCK), blocks]


def run_sparse(fn, q, k, v, call, layout, settings):
    """sol_attn on the call, in (B, T, H, D) (an HND call's tensors as transposed views)."""
    if layout == "HND":
        q, k, v = (t.transpose(1, 2) for t in (q, k, v))
    sinks = text_blocks(call.text_at, call.text_tokens, q.shape[1])
    out = fn(q, k, v, tau=settings.sparse_tau, scale=call.scale, sink_blocks=sinks, sink_q=sinks,
             topk_ratio=settings.sparse_topk)
    if layout == "HND":
        return out.transpose(1, 2)
    return out


register(Backend(
    name="kitchen_int8", label="comfy-kitchen INT8 (Q·K and P·V in INT8)", library="comfy-kitchen",
    module="comfy_kitchen", function="int8_attention", params=("scale", "attn_mask"), run=run,
    head_dims=frozenset(range(1, 257)), dtypes=frozenset({torch.float16, torch.bfloat16, torch.float32}),
    layouts=frozenset({"HND"}), transposed_views=True, masks=True, min_capability=(7, 5),
    available="int8_attention_is_available"))

register(Backend(
    name=SOL_ATTN, label="comfy-kitchen Sol-Attn (sparse)", library="comfy-kitchen", module="comfy_kitchen",
    function="sol_attn", params=("tau", "scale", "sink_blocks", "sink_q", "topk_ratio"), run=run_sparse,
    head_dims=frozenset({128}), layouts=frozenset({"NHD", "HND"}), min_capability=(8, 0),
    available="sol_attn_is_available", grouped_query=False, sparse=True))
