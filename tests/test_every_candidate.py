"""What users report most of quantised attention, black or NaN images, cannot reach an image through any
kernel the pack declares: each kernel, named alone on a GPU it runs on (its library a named double,
sas_harness/library_doubles.py), samples a tiny bf16 FLUX whose head size every kernel takes. A kernel that
answers black or NaN fails its first-call check; one that turns NaN after the check has its step run again
on ComfyUI's attention. Either way the latent is ComfyUI's own, bit for bit. The list is the registry's, so
a kernel added to the pack is held to this with no line here changed. (The sparse kernel is held to its
gate instead: test_sparse.py.)"""
from __future__ import annotations

import pytest
import torch

import comfy.supported_models

from sage_attention_scope.patches import Fault, Reason, Settings, apply_scope, backends, checks
from sas_harness import library_doubles
from sas_harness.models import TINY_FLUX, build, flux_conditioning, sample
from sas_harness.run import last_generation

KERNELS = sorted(name for name, backend in backends.REGISTRY.items() if not backend.sparse)
# Head size 64 (two heads of a 128-wide model): a size every kernel's declaration takes.
HEAD_64 = dict(hidden_size=128, num_heads=2, axes_dim=[16, 24, 24])


def tiny_flux_head_64():
    return build(comfy.supported_models.Flux, {**TINY_FLUX, **HEAD_64}, dtype=torch.bfloat16)


def scoped_and_plain(kernel: str, spoil) -> tuple[torch.Tensor, torch.Tensor, dict]:
    """Two steps of the tiny FLUX without the Scope and with ``kernel`` alone under it, and that generation's
    counters."""
    session, model = library_doubles.machine_for(kernel, spoil), tiny_flux_head_64()
    plain = sample(model, flux_conditioning(), steps=2)
    # every block (SageAttention 3 leaves its first and last to ComfyUI unless told; the tiny model has one a type)
    settings = Settings(kernel=kernel, min_seq_len=1, first_blocks=0, last_blocks=0)
    out = sample(apply_scope(model, settings, session), flux_conditioning(), steps=2)
    return out, plain, last_generation(session, "cpu")


@pytest.mark.parametrize("kernel", KERNELS)
def test_each_kernel_has_a_library_double_and_takes_every_call_when_right(kernel):
    """Without this, a kernel that never binds would pass the tests below on ComfyUI's attention alone."""
    out, plain, counts = scoped_and_plain(kernel, library_doubles.right)
    assert counts["kernel"] > 0 and counts["declined"] == {} and counts["faults"] == {}
    _, rel_l2, finite = checks.compare(out, plain)
    assert finite and rel_l2 < 0.05  # its own rounding, carried through two steps


@pytest.mark.parametrize("kernel", KERNELS)
def test_a_kernel_answering_black_fails_its_first_call_check_and_the_image_is_comfyuis(kernel):
    out, plain, counts = scoped_and_plain(kernel, library_doubles.black)
    assert counts["kernel"] == 0 and set(counts["declined"]) == {Reason.CHECK_FAILED.value}
    assert torch.equal(out, plain)


@pytest.mark.parametrize("kernel", KERNELS)
def test_a_kernel_answering_nan_fails_its_first_call_check_and_the_image_is_comfyuis(kernel):
    out, plain, counts = scoped_and_plain(kernel, library_doubles.nan)
    assert counts["kernel"] == 0 and set(counts["declined"]) == {Reason.CHECK_FAILED.value}
    assert counts["faults"] == {Fault.NON_FINITE.value: 1}
    assert torch.equal(out, plain)


@pytest.mark.parametrize("kernel", KERNELS)
def test_a_kernel_turning_nan_after_its_check_has_the_step_run_again_on_comfyuis_attention(kernel):
    out, plain, counts = scoped_and_plain(kernel, library_doubles.nan_after_the_check())
    assert counts["faults"] == {Fault.NON_FINITE.value: 1}
    assert torch.equal(out, plain)
