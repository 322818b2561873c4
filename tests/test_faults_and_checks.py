"""Kernel faults and the first-call check, injected through the kernel boundary; every
generation of a tiny FLUX completes, with the counters saying what happened."""
import logging

import pytest
import torch
import triton.compiler.errors
import triton.runtime.errors

from sage_attention_scope.nodes.status import payload
from sage_attention_scope.patches import Fault, Reason, Settings, apply_scope, checks
from sage_attention_scope.patches.reasons import TRITON_RETIRE_AFTER, classify
from sage_attention_scope.patches.checks import MAX_REL_L2
from sas_harness.doubles import (RecordingKernel, make_kernel, nan_after_first_call, noisy, non_finite, raising,
                                 reference_attention, registered, wrong_shape)
from sas_harness.models import DEVICE, flux_conditioning, sample, tiny_flux
from sas_harness.run import last_generation

STEPS = 2
CALLS = 2 * STEPS  # tiny FLUX: 2 attention calls per forward, one forward per step at cfg 1


@pytest.fixture(scope="module")
def model():
    return tiny_flux()


@pytest.fixture(scope="module")
def plain(model):
    return sample(model, flux_conditioning(), steps=STEPS)


def generate(session, model, behave, **settings):
    kernel = RecordingKernel(behave)
    with registered(session, make_kernel("double", kernel)):
        scoped = apply_scope(model, Settings(kernel="double", min_seq_len=1, **settings), session)
        out = sample(scoped, flux_conditioning(), steps=STEPS)
    return out, kernel


def oom():
    return torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")


def test_out_of_memory_moves_the_rest_of_the_generation_to_sdpa(session, model, plain, caplog):
    out, kernel = generate(session, model, raising(oom))
    assert torch.equal(out, plain)
    assert len(kernel.calls) == 1
    gen = last_generation(session)
    assert gen["faults"] == {Fault.OOM.value: 1}
    assert gen["declined"] == {Reason.KERNEL_FAULT.value: 1, Reason.OOM_EARLIER.value: CALLS - 1}
    assert sum("out of memory" in r.getMessage() for r in caplog.records) == 1
    # The next generation tries the kernel again.
    generate(session, model, reference_attention)
    assert last_generation(session)["kernel"] == CALLS


@pytest.mark.parametrize("error", [
    lambda: triton.runtime.errors.OutOfResources(232448, 101376, "shared memory"),
    lambda: triton.compiler.errors.CompilationError(None, None, "bad"),
    lambda: PermissionError(13, "Permission denied", "/home/user/.triton/cache/abc"),
])
def test_triton_errors_in_a_row_retire_the_device(session, model, plain, error):
    out, kernel = generate(session, model, raising(error))
    assert torch.equal(out, plain)
    assert len(kernel.calls) == TRITON_RETIRE_AFTER
    gen = last_generation(session)
    assert gen["faults"] == {Fault.TRITON.value: TRITON_RETIRE_AFTER}
    assert gen["declined"] == {Reason.KERNEL_FAULT.value: TRITON_RETIRE_AFTER,
                           Reason.DEVICE_RETIRED.value: CALLS - TRITON_RETIRE_AFTER}
    assert payload(session)["devices"][DEVICE]["retired"]


def test_a_success_resets_the_triton_streak(session, model):
    outcomes = iter([True, True, False, True, True, False, True, True])

    def flaky(q, k, v, **kwargs):
        if next(outcomes):
            raise triton.runtime.errors.OutOfResources(1, 0, "registers")
        return reference_attention(q, k, v, **kwargs)

    generate(session, model, flaky, first_call_check=False)
    generate(session, model, flaky, first_call_check=False)
    assert payload(session)["devices"][DEVICE]["retired"] is None
    assert payload(session)["devices"][DEVICE]["session"]["faults"] == {Fault.TRITON.value: 6}


def test_other_kernel_errors_fall_back_per_call_and_log_once(session, model, plain, caplog):
    out, kernel = generate(session, model, raising(lambda: RuntimeError("CUDA error: an illegal memory access")))
    assert torch.equal(out, plain)
    assert len(kernel.calls) == CALLS
    gen = last_generation(session)
    assert gen["faults"] == {Fault.OTHER.value: CALLS} and gen["declined"] == {Reason.KERNEL_FAULT.value: CALLS}
    assert sum("illegal memory access" in r.getMessage() for r in caplog.records) == 1


def test_a_wrong_shaped_result_is_a_fault(session, model, plain):
    out, _ = generate(session, model, wrong_shape)
    assert torch.equal(out, plain)
    assert last_generation(session)["faults"] == {Fault.WRONG_SHAPE.value: CALLS}


def test_non_finite_output_fails_the_check(session, model, plain):
    out, kernel = generate(session, model, non_finite)
    assert torch.equal(out, plain)
    assert len(kernel.calls) == 1
    gen = last_generation(session)
    assert gen["faults"] == {Fault.NON_FINITE.value: 1}
    assert gen["declined"] == {Reason.CHECK_FAILED.value: CALLS}


def test_nan_after_the_check_reruns_the_step_on_sdpa(session, model, plain, caplog):
    caplog.set_level(logging.WARNING)
    out, kernel = generate(session, model, nan_after_first_call())
    # Step 1: the check passes, the second call is NaN; the step runs again with the key
    # failed, so every call of the generation ends on SDPA and the latent is ComfyUI's own.
    assert torch.equal(out, plain)
    assert len(kernel.calls) == 2
    gen = last_generation(session)
    assert gen["kernel"] == 0 and gen["declined"] == {Reason.CHECK_FAILED.value: CALLS}
    assert gen["faults"] == {Fault.NON_FINITE.value: 1}
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1 and "NaN/inf" in warnings[0] and "ran again on ComfyUI's attention" in warnings[0]


def test_finite_flags_are_read_once_per_step_not_per_call(session, model, monkeypatch):
    from sage_attention_scope.patches.state.generation import Generation
    reads = []  # how many flags each read found
    take = Generation.take_bad_keys
    monkeypatch.setattr(Generation, "take_bad_keys", lambda self: reads.append(len(self.flags)) or take(self))
    generate(session, model, reference_attention)
    assert last_generation(session)["kernel"] == CALLS
    assert sum(reads) == CALLS - 1  # the first call is the check's, compared in full
    assert len(reads) == STEPS + 1  # each step, and once at the end of the generation


def test_a_wrong_kernel_fails_the_first_call_check_and_its_key_falls_back(session, model, plain, caplog):
    caplog.set_level(logging.WARNING)
    out, kernel = generate(session, model, noisy)
    assert torch.equal(out, plain)
    assert len(kernel.calls) == 1
    assert last_generation(session)["declined"] == {Reason.CHECK_FAILED.value: CALLS}
    [result] = payload(session)["devices"][DEVICE]["checks"]
    assert result["passed"] is False and result["rel_l2"] > MAX_REL_L2
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1 and "first-call check FAILED" in warnings[0] and "relative L2" in warnings[0]
    # The key stays failed for the session: the next generation never calls the kernel.
    kernel.calls.clear()
    generate(session, model, noisy)
    assert last_generation(session)["declined"] == {Reason.CHECK_FAILED.value: CALLS}


def test_without_the_check_a_wrong_kernel_would_reach_the_output(session, model, plain):
    out, _ = generate(session, model, noisy, first_call_check=False)
    assert not torch.allclose(out, plain, atol=1e-3)


def test_a_passing_check_runs_once_per_key(session, model):
    generate(session, model, reference_attention)
    generate(session, model, reference_attention)
    [result] = payload(session)["devices"][DEVICE]["checks"]
    assert result["passed"] and result["key"] == f"{DEVICE} float32 d32 short keys double"
    assert payload(session)["devices"][DEVICE]["session"]["kernel"] == 2 * CALLS


def test_classify():
    assert classify(oom()) is Fault.OOM
    assert classify(RuntimeError("CUDA out of memory.")) is Fault.OOM
    assert classify(triton.runtime.errors.OutOfResources(1, 0, "x")) is Fault.TRITON
    assert classify(OSError(28, "No space left on device", "/tmp/triton/cache/x.json")) is Fault.TRITON
    assert classify(ValueError("Unsupported head_dim: 256")) is Fault.OTHER


def test_check_thresholds_separate_the_measured_cases():
    # Relative L2 0.042 is SageAttention 2's worst normal figure; 0.28 is sageattention 1.0.6 at
    # key length 77 (its cosine there, 0.999, passes, so relative L2 decides).
    ref = torch.randn(4096, generator=torch.Generator().manual_seed(0))
    noise = torch.randn(4096, generator=torch.Generator().manual_seed(1))
    key = checks.CheckKey("cpu", "bfloat16", 128, "k")
    good = checks.judge(key, ref + noise * 0.042, ref)
    bad = checks.judge(key, ref + noise * 0.28, ref)
    assert good.passed and not bad.passed
    assert bad.cosine > 0.96 and bad.rel_l2 > MAX_REL_L2
    nan = checks.judge(key, torch.full_like(ref, float("nan")), ref)
    assert not nan.passed and not nan.finite


def test_a_step_the_model_itself_makes_non_finite_runs_again_once_and_stands(session, model, caplog):
    """NaN from the model (here a weight), not the kernel: the step runs once more with the kernel
    off, is still not finite, and stands with a warning; later steps keep SDPA."""
    broken = model.clone()
    forwards = []

    def count_forwards(apply_model, args):
        forwards.append(1)
        return apply_model(args["input"], args["timestep"], **args["c"])
    broken.set_model_unet_function_wrapper(count_forwards)
    weight = model.model.diffusion_model.img_in.weight
    broken.add_patches({"diffusion_model.img_in.weight": (torch.full_like(weight, float("nan")),)},
                       strength_patch=1.0, strength_model=0.0)  # ComfyUI's own weight patching: NaN in

    caplog.set_level(logging.WARNING)
    plain = sample(broken, flux_conditioning(), steps=STEPS)
    forwards.clear()
    out, kernel = generate(session, broken, reference_attention, first_call_check=False)
    assert torch.isnan(out).all() and torch.isnan(plain).all()  # the result is the model's own
    assert len(forwards) == STEPS + 1  # step 1 once more with the kernel off, then never again
    gen = last_generation(session)
    assert gen["faults"] == {Fault.NON_FINITE.value: 1} and gen["kernel"] == 0
    assert gen["declined"] == {Reason.CHECK_FAILED.value: CALLS}
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert sum("model itself made the NaN/inf" in w for w in warnings) == 1
