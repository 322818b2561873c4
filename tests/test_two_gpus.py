"""Two GPUs: scoped models on cuda:1 while cuda:0 is current (issue 7). Needs two CUDA devices;
skipped elsewhere. Set SAS_GPU_RECORD to keep the figures."""
import pytest
import torch

import comfy.supported_models

from sage_attention_scope.nodes.status import payload
from sage_attention_scope.nodes.status import render
from sage_attention_scope.patches import Reason, Settings, apply_scope, checks
from sas_harness.doubles import RecordingKernel, make_kernel, noisy, reference_attention, registered
from sas_harness.families import CASES, SAGE, sample_case
from sas_harness.gpu import build_tiny_flux_d128, kernel_on, record
from sas_harness.models import build, flux_conditioning, sample
from sas_harness.run import last_generation

pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(torch.cuda.device_count() < 2, reason="needs two CUDA devices")]

FLUX_CALLS = 2 * 4  # two steps, 2 + 2 blocks
SDXL = next(c for c in CASES if c.family == "SDXL")


@pytest.fixture
def kernel_on_cuda1(session):
    return kernel_on(session, "cuda:1")


def _scoped_run_leaves_cuda0_alone(sample_scoped):
    """Runs ``sample_scoped`` with cuda:0 current; what the run allocated on cuda:0 meanwhile."""
    torch.cuda.set_device(0)
    torch.cuda.synchronize(0)
    before = torch.cuda.memory_allocated(0)
    out = sample_scoped()
    torch.cuda.synchronize(0)
    assert torch.cuda.current_device() == 0
    return out, torch.cuda.memory_allocated(0) - before


def test_scoped_flux_and_sdxl_on_cuda1_run_on_the_kernel_there(session, kernel_on_cuda1):
    flux = build_tiny_flux_d128("cuda:1")
    cond = flux_conditioning()
    plain = sample(flux, cond, latent_hw=(64, 64), steps=2)
    scoped = apply_scope(flux, Settings(min_seq_len=1, routing="always"), session)
    routed, on_cuda0 = _scoped_run_leaves_cuda0_alone(lambda: sample(scoped, cond, latent_hw=(64, 64), steps=2))
    gen = last_generation(session, "cuda:1")
    cosine, rel_l2, finite = checks.compare(routed, plain)
    record(test="two_gpus_flux_on_cuda1", kernel=kernel_on_cuda1.name, cosine=cosine, rel_l2=rel_l2,
           sage=gen["kernel"], allocated_on_cuda0=on_cuda0)
    assert gen["kernel"] == FLUX_CALLS and gen["declined_total"] == 0
    assert finite and cosine >= 0.99 and on_cuda0 == 0

    sdxl = build(getattr(comfy.supported_models, SDXL.config_class),
                 SDXL.unet_config, dtype=torch.bfloat16, device=torch.device("cuda:1"))
    plain = sample_case(sdxl, SDXL)
    scoped = apply_scope(sdxl, Settings(min_seq_len=SDXL.min_seq_len, routing="always"), session)
    routed, on_cuda0 = _scoped_run_leaves_cuda0_alone(lambda: sample_case(scoped, SDXL))
    gen = last_generation(session, "cuda:1")
    cosine, rel_l2, finite = checks.compare(routed, plain)
    record(test="two_gpus_sdxl_on_cuda1", kernel=kernel_on_cuda1.name, cosine=cosine, rel_l2=rel_l2,
           sage=gen["kernel"], allocated_on_cuda0=on_cuda0)
    assert gen["kernel"] == SDXL.per_step[SAGE]
    assert gen["declined"] == {Reason.TOO_SHORT.value: SDXL.per_step[Reason.TOO_SHORT]}
    assert finite and cosine >= 0.99 and on_cuda0 == 0


def test_a_failing_check_on_one_device_retires_only_that_device(session):
    def wrong_on_cuda1(q, k, v, **kwargs):
        return (noisy if q.device.index == 1 else reference_attention)(q, k, v, **kwargs)

    cond = flux_conditioning()
    with registered(session, make_kernel("double", RecordingKernel(wrong_on_cuda1))):
        for device in ("cuda:0", "cuda:1"):
            model = build_tiny_flux_d128(device)
            sample(apply_scope(model, Settings(kernel="double", min_seq_len=1), session), cond,
                   latent_hw=(64, 64), steps=2)
            gen = last_generation(session, device)
            if device == "cuda:0":
                assert gen["kernel"] == FLUX_CALLS
            else:
                assert gen["kernel"] == 0 and gen["declined"] == {Reason.CHECK_FAILED.value: FLUX_CALLS}
    state = payload(session)["devices"]
    [ok], [failed] = state["cuda:0"]["checks"], state["cuda:1"]["checks"]
    assert ok["passed"] and not failed["passed"]
    text = render(payload(session))
    assert "cuda:0" in text and "cuda:1" in text and "FAILED" in text
    record(test="two_gpus_check_failure_on_cuda1", cuda0_check=ok, cuda1_check=failed)
