"""comfy-kitchen's ``int8_attention(q, k, v, *, scale=None, attn_mask=None)``: one fused INT8 launch
on (B, H, N, D) or strided views of it, head sizes up to 256 (padded inside), masks as SDPA takes
them. Accurate everywhere measured, slower than SDPA on the H200: measured routing decides."""
import torch

from . import Backend, register


def run(fn, q, k, v, call, layout, settings):
    return fn(q, k, v, scale=call.scale, attn_mask=call.sdpa_mask())


register(Backend(
    name="kitchen_int8", label="comfy-kitchen INT8 (Q·K and P·V in INT8)", library="comfy-kitchen",
    module="comfy_kitchen", function="int8_attention", params=("scale", "attn_mask"), run=run,
    head_dims=frozenset(range(1, 257)), dtypes=frozenset({torch.float16, torch.bfloat16, torch.float32}),
    layouts=frozenset({"HND"}), transposed_views=True, masks=True, min_capability=(7, 5),
    available="int8_attention_is_available"))
