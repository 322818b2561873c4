"""SageAttention 2.x: one function per kernel family, each called directly with the arguments its own
``sageattn`` would pick for the GPU (that ``sageattn`` swallows them in ``**kwargs``). Head sizes up
to 128: it pads other sizes to 64 or 128 itself (Lumina 2's 96, Omnigen2's 120), at a cost measured
routing weighs."""
from . import Backend, register


def _backend(name, label, function, fixed, **extra):
    def run(fn, q, k, v, call, layout, settings):
        return fn(q, k, v, tensor_layout=layout, is_causal=False, sm_scale=call.scale, smooth_k=settings.smooth_k,
                  **fixed)
    return Backend(name=name, label=f"SageAttention 2 ({label})", library="SageAttention 2", module="sageattention",
                   function=f"sageattn_{function}",
                   params=("tensor_layout", "is_causal", "sm_scale", "smooth_k", *fixed),
                   run=run, head_dims=frozenset(range(1, 129)), **extra)


register(
    _backend("sage2_fp16_cuda", "INT8 Q·K, FP16 P·V with FP32 accumulation, CUDA", "qk_int8_pv_fp16_cuda",
             {"pv_accum_dtype": "fp32"}),
    _backend("sage2_fp16_triton", "INT8 Q·K, FP16 P·V, Triton", "qk_int8_pv_fp16_triton", {}),
    _backend("sage2_fp8_cuda", "INT8 Q·K, FP8 P·V, Ada", "qk_int8_pv_fp8_cuda", {"pv_accum_dtype": "fp32+fp16"},
             min_capability=(8, 9)),
    _backend("sage2_fp8_cuda_sm120", "INT8 Q·K per warp, FP8 P·V, Blackwell", "qk_int8_pv_fp8_cuda",
             {"qk_quant_gran": "per_warp", "pv_accum_dtype": "fp32+fp16"}, min_capability=(12, 0)),
    _backend("sage2_fp8_sm90", "INT8 Q·K, FP8 P·V, Hopper", "qk_int8_pv_fp8_cuda_sm90", {"pv_accum_dtype": "fp32+fp32"},
             capabilities=frozenset({(9, 0)})),
)
