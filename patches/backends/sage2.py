"""SageAttention 2.x: one function per kernel family, each called directly with the arguments
upstream's own ``sageattn`` would pick for the GPU (its ``**kwargs`` would swallow them
silently, so the adapter never calls ``sageattn``).
"""
import dataclasses

from . import Backend, register


def _run(fixed: dict):
    def run(fn, q, k, v, call, layout, settings):
        return fn(q, k, v, tensor_layout=layout, is_causal=False, sm_scale=call.scale, smooth_k=settings.smooth_k,
                  **fixed)
    return run


def _backend(name, label, function, fixed, **extra):
    params = ("tensor_layout", "is_causal", "sm_scale", "smooth_k", *fixed)
    return Backend(name=name, label=f"SageAttention 2 ({label})", library="SageAttention 2", module="sageattention",
                   function=f"sageattn_{function}", params=params, run=_run(fixed),
                   head_dims=frozenset({64, 128}), **extra)


FP16_CUDA = _backend("sage2_fp16_cuda", "INT8 Q·K, FP16 P·V with FP32 accumulation, CUDA", "qk_int8_pv_fp16_cuda",
                     {"pv_accum_dtype": "fp32"})
FP16_TRITON = _backend("sage2_fp16_triton", "INT8 Q·K, FP16 P·V, Triton", "qk_int8_pv_fp16_triton", {})
FP8_CUDA = _backend("sage2_fp8_cuda", "INT8 Q·K, FP8 P·V, Ada", "qk_int8_pv_fp8_cuda",
                    {"pv_accum_dtype": "fp32+fp16"}, min_capability=(8, 9))
FP8_CUDA_SM120 = dataclasses.replace(
    FP8_CUDA, name="sage2_fp8_cuda_sm120", label="SageAttention 2 (INT8 Q·K per warp, FP8 P·V, Blackwell)",
    params=FP8_CUDA.params + ("qk_quant_gran",), run=_run({"qk_quant_gran": "per_warp", "pv_accum_dtype": "fp32+fp16"}),
    min_capability=(12, 0))
FP8_CUDA_SM90 = _backend("sage2_fp8_sm90", "INT8 Q·K, FP8 P·V, Hopper", "qk_int8_pv_fp8_cuda_sm90",
                         {"pv_accum_dtype": "fp32+fp32"}, capabilities=frozenset({(9, 0)}))
register(FP16_CUDA, FP16_TRITON, FP8_CUDA, FP8_CUDA_SM120, FP8_CUDA_SM90)
