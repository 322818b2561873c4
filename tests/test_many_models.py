"""A scoped model among other models and other patches: each call honours its own model's
settings, nothing leaks between models or into the next prompt, and other patches that use
transformer_options keep working."""
from __future__ import annotations

import torch

import comfy.ldm.modules.attention as comfy_attention
import comfy.supported_models

from sage_attention_scope.patches import Fault, Reason, Settings, apply_scope, checks
from sas_harness.doubles import RecordingKernel, make_kernel, registered
from sas_harness.families import CASES, routing_table, sample_case
from sas_harness.models import TINY_FLUX, TINY_SDXL, build, flux_conditioning, sample
from sas_harness.run import last_generation

CALLS = 2  # tiny FLUX: 2 attention calls per step
SDXL = next(c for c in CASES if c.family == "SDXL")


def test_a_scoped_and_an_unscoped_model_in_one_graph(session):
    base = build(comfy.supported_models.Flux, TINY_FLUX, seed=0)
    refiner = build(comfy.supported_models.Flux, TINY_FLUX, seed=1)
    cond = flux_conditioning()
    plain_base, plain_refiner = sample(base, cond), sample(refiner, cond)
    kernel = RecordingKernel()
    with registered(session, make_kernel("double", kernel)):
        scoped = apply_scope(base, Settings(kernel="double", min_seq_len=1), session)
        for _ in range(2):  # interleaved, as a base + refiner graph runs them
            torch.testing.assert_close(sample(scoped, cond), plain_base, rtol=1e-4, atol=1e-4)
            assert last_generation(session)["kernel"] == CALLS
            assert torch.equal(sample(refiner, cond), plain_refiner)
    assert len(kernel.calls) == 2 * CALLS  # only the scoped model's calls


def test_two_scoped_models_each_keep_their_own_settings(session):
    first = build(comfy.supported_models.Flux, TINY_FLUX, seed=0)
    second = build(comfy.supported_models.Flux, TINY_FLUX, seed=1)
    cond = flux_conditioning()
    with registered(session, make_kernel("double", RecordingKernel())):
        eager = apply_scope(first, Settings(kernel="double", min_seq_len=1), session)
        strict = apply_scope(second, Settings(kernel="double", min_seq_len=10_000), session)
        sample(eager, cond)
        assert routing_table(last_generation(session)) == {"kernel": CALLS}
        sample(strict, cond)
        assert routing_table(last_generation(session)) == {Reason.TOO_SHORT: CALLS}
        sample(eager, cond)
        assert routing_table(last_generation(session)) == {"kernel": CALLS}


def _sdxl():
    return build(comfy.supported_models.SDXL, TINY_SDXL)


def _replace_without_options(q, k, v, extra_options):
    """An IP-Adapter-style attn1 replacement: its own attention call, without transformer_options."""
    return comfy_attention.optimized_attention(q, k, v, extra_options["n_heads"])


def _replace_with_options(q, k, v, extra_options):
    """One that passes transformer_options on, and so reaches whatever override the model has."""
    return comfy_attention.optimized_attention(q, k, v, extra_options["n_heads"], transformer_options=extra_options)


def test_attention_replacement_patches_keep_working_inside_the_scope(session):
    for replace, reaches_the_scope in ((_replace_without_options, False), (_replace_with_options, True)):
        model = _sdxl()
        model.set_model_attn1_replace(replace, "input", 1)  # the level-0 input block's self-attention
        plain = sample_case(model, SDXL)
        with registered(session, make_kernel("double", RecordingKernel())):
            scoped = apply_scope(model, Settings(kernel="double", min_seq_len=SDXL.min_seq_len), session)
            routed = sample_case(scoped, SDXL)
        torch.testing.assert_close(routed, plain, rtol=1e-3, atol=1e-3)
        expected = dict(SDXL.per_step)
        if not reaches_the_scope:  # that one call is the patch's own, on SDPA, and never counted
            expected["kernel"] -= 1
        assert routing_table(last_generation(session)) == expected


def test_attn2_patches_that_rewrite_the_context_run_before_the_scope_decides(session):
    model = _sdxl()
    extra_tokens = 3

    def longer_context(n, context, value, extra_options):  # e.g. image tokens appended to the text
        pad = context[:, :extra_tokens]
        return n, torch.cat([context, pad], dim=1), torch.cat([value, pad], dim=1)

    model.set_model_attn2_patch(longer_context)
    plain = sample_case(model, SDXL)
    with registered(session, make_kernel("double", RecordingKernel())):
        # 77 + 3 text tokens now reach the threshold of 78: cross-attention at level 0 qualifies
        routed = sample_case(apply_scope(model, Settings(kernel="double", min_seq_len=SDXL.min_seq_len), session), SDXL)
    torch.testing.assert_close(routed, plain, rtol=1e-3, atol=1e-3)
    level0_blocks = SDXL.per_step["kernel"]
    assert last_generation(session)["kernel"] == 2 * level0_blocks


def test_device_state_is_kept_per_device(session):
    for _ in range(3):
        session.knowledge.note_fault("cuda:1", Fault.TRITON)
    assert session.knowledge.retired.get("cuda:1") and not session.knowledge.retired.get("cuda:0")
    failed = checks.CheckKey("cuda:1", "bfloat16", 128, "k")
    out = torch.ones(4, 4)
    session.knowledge.record_verdict(checks.judge(failed, -out, out))  # a kernel that fails its check on cuda:1
    assert session.knowledge.verdict(failed).passed is False
    assert checks.CheckKey("cuda:0", "bfloat16", 128, "k") not in session.knowledge.checks
