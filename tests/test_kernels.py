"""Kernel selection per compute capability and installed sageattention; signature checks."""
import types

import pytest
import torch

from sage_attention_scope.patches import kernels
from sage_attention_scope.patches.kernels import Installed


def _fp16_cuda(q, k, v, tensor_layout="HND", is_causal=False, qk_quant_gran="per_thread", sm_scale=None,
               pv_accum_dtype="fp32", smooth_k=True, smooth_v=False, return_lse=False, **kwargs):
    raise AssertionError("selection-table stand-in, not for calling")


def _fp16_triton(q, k, v, tensor_layout="HND", quantization_backend="triton", is_causal=False, attn_mask=None,
                 sm_scale=None, smooth_k=True, return_lse=False, **kwargs):
    raise AssertionError("selection-table stand-in, not for calling")


def fake_sa2_module(**overrides):
    """Kernel-boundary stand-in: functions with SageAttention 2.2's signatures, for the
    selection and signature logic only; no test calls them."""
    functions = {
        "sageattn_qk_int8_pv_fp16_cuda": _fp16_cuda,
        "sageattn_qk_int8_pv_fp16_triton": _fp16_triton,
        "sageattn_qk_int8_pv_fp8_cuda": _fp16_cuda,
        "sageattn_qk_int8_pv_fp8_cuda_sm90": _fp16_cuda,
    }
    functions.update(overrides)
    return types.SimpleNamespace(**functions)


@pytest.mark.parametrize("capability, expected", [
    ((8, 0), "qk_int8_pv_fp16_cuda"), ((8, 6), "qk_int8_pv_fp16_triton"), ((8, 7), None),
    ((8, 9), "qk_int8_pv_fp8_cuda"), ((9, 0), "qk_int8_pv_fp8_cuda_sm90"), ((10, 0), None),
    ((12, 0), "qk_int8_pv_fp8_cuda"), ((7, 5), None),
])
def test_auto_for_sageattention_2(capability, expected):
    spec, why = kernels._auto_spec(Installed("2.2.0", object()), capability, "smXX")
    assert (spec.name if spec else None) == expected
    assert why


def test_sm120_uses_per_warp_quantisation():
    spec, _ = kernels._auto_spec(Installed("2.2.0", object()), (12, 0), "sm120")
    assert spec.fixed_kwargs == {"qk_quant_gran": "per_warp", "pv_accum_dtype": "fp32+fp16"}


@pytest.mark.parametrize("capability, expected", [((8, 0), "sageattn_1x_triton"), ((9, 0), "sageattn_1x_triton"),
                                                  ((7, 5), None)])
def test_auto_for_sageattention_1(capability, expected):
    spec, _ = kernels._auto_spec(Installed("1.0.6", object()), capability, "smXX")
    assert (spec.name if spec else None) == expected


def test_binding_checks_every_argument_against_the_signature():
    inst = Installed("2.2.0", fake_sa2_module())
    bound = kernels._bind(kernels.SA2_FP8_CUDA_SM90, inst, "why")
    assert bound.kernel is not None and bound.kernel.spec.fixed_kwargs == {"pv_accum_dtype": "fp32+fp32"}

    def swallows(q, k, v, tensor_layout="HND", is_causal=False, sm_scale=None, smooth_k=True, **kwargs):
        raise AssertionError
    refused = kernels._bind(kernels.SA2_FP8_CUDA_SM90,
                            Installed("2.0.0", fake_sa2_module(sageattn_qk_int8_pv_fp8_cuda_sm90=swallows)), "why")
    assert refused.kernel is None and "pv_accum_dtype" in refused.why


def test_missing_export_is_reported():
    module = fake_sa2_module()
    del module.sageattn_qk_int8_pv_fp8_cuda_sm90
    res = kernels._bind(kernels.SA2_FP8_CUDA_SM90, Installed("2.1.0", module), "why")
    assert res.kernel is None and "does not export" in res.why


def test_named_kernels_belong_to_their_major_version():
    assert kernels._named_spec("qk_int8_pv_fp16_cuda", Installed("1.0.6", object())) is None
    assert kernels._named_spec("sageattn_1x_triton", Installed("1.0.6", object())) is kernels.SA1_TRITON
    assert kernels._named_spec("sageattn_1x_triton", Installed("2.2.0", object())) is None


def test_installed_sageattention_1_binds():
    """The real PyPI sageattention 1.0.6 (installed by the test set-up) passes the signature check."""
    inst = kernels.installed()
    if inst.module is None or inst.major != 1:
        pytest.skip(f"needs sageattention 1.x installed: {inst.error or inst.version}")
    res = kernels._bind(kernels.SA1_TRITON, inst, "why")
    assert res.kernel is not None and res.kernel.version == inst.version


def test_cpu_devices_never_resolve_a_real_kernel():
    res = kernels.resolve("auto", torch.device("cpu"))
    assert res.kernel is None and res.not_cuda


def test_missing_parameters_ignores_catch_alls():
    def f(q, k, v, *, sm_scale=None, **kwargs):
        pass
    assert kernels.missing_parameters(f, ("sm_scale", "smooth_k")) == ["smooth_k"]
