"""SageAttention 1.x (PyPI ``sageattention`` 1.0.x): one Triton kernel, INT8 Q·K, FP16 P·V. Its
``smooth_k`` subtracts k's mean from k *in place*: the adapter smooths a copy (softmax ignores a
per-head shift of k). Wrong at short keys (docs/measured.md has the figures): the first-call check catches it."""
from . import Backend, register


def run(fn, q, k, v, call, layout, settings):
    if settings.smooth_k:
        k = k - k.mean(dim=2 if layout == "HND" else 1, keepdim=True)
    return fn(q, k, v, tensor_layout=layout, is_causal=False, sm_scale=call.scale, smooth_k=False)


register(Backend(
    name="sage1_triton", label="SageAttention 1 (Triton: INT8 Q·K, FP16 P·V)", library="SageAttention 1",
    module="sageattention", function="sageattn", params=("tensor_layout", "is_causal", "sm_scale", "smooth_k"),
    run=run, head_dims=frozenset({64, 96, 128})))
