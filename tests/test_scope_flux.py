"""The scope end to end on a tiny FLUX.1 built through comfy.supported_models.Flux."""
import torch

import comfy.patcher_extension as ext

from sage_attention_scope.patches import Reason, Settings, apply_scope, router_of
from sage_attention_scope.patches.sampling import OVERRIDE_KEY, WRAPPER_KEY
from sas_harness.doubles import RecordingKernel, make_kernel, registered
from sas_harness.models import TINY_FLUX, TINY_FLUX_TXT_TOKENS, flux_conditioning, sample, tiny_flux
from sas_harness.run import attention, hnd, last_generation, totals

# Structure of TINY_FLUX: depth=1 double-stream + depth_single_blocks=1 single-stream block, one
# joint attention call each, over 8x8 latent / patch 2 = 16 image tokens + 5 text tokens.
CALLS_PER_FORWARD = TINY_FLUX["depth"] + TINY_FLUX["depth_single_blocks"]
TOKENS = (8 // TINY_FLUX["patch_size"]) * (8 // TINY_FLUX["patch_size"]) + TINY_FLUX_TXT_TOKENS


def test_no_node_and_disabled_scope_are_bit_identical(session):
    model, cond = tiny_flux(), flux_conditioning()
    plain = sample(model, cond, steps=2)
    disabled = sample(apply_scope(model, Settings(enabled=False), session), cond, steps=2)
    assert torch.equal(plain, disabled)
    assert last_generation(session)["declined"] == {Reason.DISABLED.value: 2 * CALLS_PER_FORWARD}


def test_eligible_calls_reach_the_kernel_and_ineligible_ones_do_not(session):
    model, cond = tiny_flux(), flux_conditioning()
    plain = sample(model, cond, steps=2)
    kernel = RecordingKernel()
    with registered(session, make_kernel("double", kernel)):
        routed = sample(apply_scope(model, Settings(kernel="double", min_seq_len=TOKENS), session), cond, steps=2)
        assert len(kernel.calls) == 2 * CALLS_PER_FORWARD
        assert last_generation(session) == {"kernel": 4, "declined": {}, "declined_total": 0, "faults": {},
                                            "masks_dropped": 0, "copied": 0, "no_block_positions": 0,
                                            "counted_from_routes": 0}
        torch.testing.assert_close(routed, plain, rtol=1e-4, atol=1e-4)

        kernel.calls.clear()
        short = sample(apply_scope(model, Settings(kernel="double", min_seq_len=TOKENS + 1), session), cond, steps=2)
        assert kernel.calls == []
        assert last_generation(session)["declined"] == {Reason.TOO_SHORT.value: 2 * CALLS_PER_FORWARD}
        assert torch.equal(short, plain)


def test_cfg_batches_cond_and_uncond_into_the_same_calls(session):
    model = tiny_flux()
    kernel = RecordingKernel()
    with registered(session, make_kernel("double", kernel)):
        sample(apply_scope(model, Settings(kernel="double", min_seq_len=1), session), flux_conditioning(seed=1),
               flux_conditioning(seed=2), cfg=3.0)
    assert len(kernel.calls) == CALLS_PER_FORWARD
    assert {c["q"].shape[0] for c in kernel.calls} == {2}


def test_scoped_run_leaves_the_input_model_and_later_runs_untouched(session):
    model, cond = tiny_flux(), flux_conditioning()
    options_before = repr(model.model_options)
    before = sample(model, cond)
    with registered(session, make_kernel("double", RecordingKernel())):
        scoped = apply_scope(model, Settings(kernel="double", min_seq_len=1), session)
        sample(scoped, cond)
    assert repr(model.model_options) == options_before
    assert OVERRIDE_KEY not in model.model_options.get("transformer_options", {})
    assert not model.get_wrappers(ext.WrappersMP.DIFFUSION_MODEL, WRAPPER_KEY)
    assert torch.equal(sample(model, cond), before)


def test_a_call_outside_the_wrapper_never_reaches_the_kernel(session):
    model = tiny_flux()
    kernel = RecordingKernel()
    with registered(session, make_kernel("double", kernel)):
        scoped = apply_scope(model, Settings(kernel="double", min_seq_len=1), session)
        q, k, v = hnd()
        out = attention(scoped, q, k, v, 2, skip_reshape=True)
    assert kernel.calls == []
    assert out.shape == (1, 32, 128)
    assert totals(session, "cpu")["declined"] == {Reason.OUTSIDE_SCOPE.value: 1}


def test_a_second_scope_node_replaces_the_first(session):
    model = tiny_flux()
    once = apply_scope(model, Settings(min_seq_len=100), session)
    twice = apply_scope(once, Settings(min_seq_len=200), session)
    assert router_of(twice).settings.min_seq_len == 200
    assert router_of(twice).previous is None
    for kind in (ext.WrappersMP.OUTER_SAMPLE, ext.WrappersMP.DIFFUSION_MODEL):
        assert len(twice.get_wrappers(kind, WRAPPER_KEY)) == 1


def test_the_installed_override_belongs_to_the_router_through_clones_and_copies(session):
    import copy
    scoped = apply_scope(tiny_flux(), Settings(min_seq_len=100), session)
    router = router_of(scoped)
    override = scoped.model_options["transformer_options"][OVERRIDE_KEY]
    assert override is router
    assert router_of(scoped.clone()) is router
    assert copy.deepcopy(scoped.model_options)["transformer_options"][OVERRIDE_KEY] is override


def test_an_existing_override_keeps_serving_the_calls_the_scope_declines(session):
    model, cond = tiny_flux(), flux_conditioning()
    seen = []

    def other_override(func, *args, **kwargs):
        seen.append(args[0].shape)
        return func(*args, **kwargs)

    model.model_options.setdefault("transformer_options", {})[OVERRIDE_KEY] = other_override
    kernel = RecordingKernel()
    with registered(session, make_kernel("double", kernel)):
        sample(apply_scope(model, Settings(kernel="double", min_seq_len=TOKENS + 1), session), cond)
        assert len(seen) == CALLS_PER_FORWARD and kernel.calls == []
        seen.clear()
        sample(apply_scope(model, Settings(kernel="double", min_seq_len=1), session), cond)
        assert seen == [] and len(kernel.calls) == CALLS_PER_FORWARD
