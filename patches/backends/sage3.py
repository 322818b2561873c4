"""SageAttention 3 (``sageattn3``, built from source): FP4 attention for Blackwell (sm120/121).
``sageattn3_blackwell(q, k, v, attn_mask=None, is_causal=False, per_block_mean=True, **kwargs)``
takes (B, H, N, D) fp16/bf16, ignores ``attn_mask``, scales by D ** -0.5, dispatches head sizes 64
and 128 only (without refusing others) and subtracts k's mean from k in place (it gets a smoothed
copy). FP4 changes images more: never ``auto``, and, as core's SageAttention 3 node, the first and
last block of each type stay on SDPA unless the user says otherwise."""
from . import Backend, register


def run(fn, q, k, v, call, layout, settings):
    return fn(q, k - k.mean(dim=2, keepdim=True), v, is_causal=False)


register(Backend(
    name="sage3_fp4", label="SageAttention 3 (FP4, Blackwell)", library="SageAttention 3", module="sageattn3",
    function="sageattn3_blackwell", params=("is_causal",), run=run, head_dims=frozenset({64, 128}),
    layouts=frozenset({"HND"}), custom_scale=False, capabilities=frozenset({(12, 0), (12, 1)}),
    edge_blocks=(1, 1)))
