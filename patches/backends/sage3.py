"""SageAttention 3 (``sageattn3``, built from source): FP4 attention for Blackwell (sm120/121).

``sageattn3_blackwell(q, k, v, attn_mask=None, is_causal=False, per_block_mean=True, **kwargs)``
takes (B, H, N, D) in fp16/bf16, ignores ``attn_mask``, always scales by D ** -0.5, dispatches
head sizes 64 and 128 only (others are not refused, so they are gated here) and subtracts k's
mean from k in place: the adapter hands it a smoothed copy. FP4 changes images more than INT8
or FP8 do, so ``auto`` never picks it, and, as ComfyUI core's SageAttention 3 node, it leaves the
first and last block of each type to SDPA unless the user says otherwise.
"""
from . import Backend, register


def run(fn, q, k, v, call, layout, settings):
    return fn(q, k - k.mean(dim=2, keepdim=True), v, is_causal=False)


register(Backend(
    name="sage3_fp4", label="SageAttention 3 (FP4, Blackwell)", library="SageAttention 3", module="sageattn3",
    function="sageattn3_blackwell", params=("is_causal",), run=run, head_dims=frozenset({64, 128}),
    layouts=frozenset({"HND"}), custom_scale=False, capabilities=frozenset({(12, 0), (12, 1)}), auto=False,
    edge_blocks=(1, 1)))
