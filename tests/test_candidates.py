"""Every way this machine runs an attention call, a measured candidate per shape bucket: torch's exact SDPA
backends pinned one at a time, the installed quantised kernels, and ComfyUI's own attention as the reference.
The libraries are named doubles with their real signatures (real attention); the machine is an sm90 GPU by
its capability, the tensors on the CPU. And the Scope stepping aside once every call of a run keeps
ComfyUI's attention."""
from __future__ import annotations

import dataclasses
import types

import pytest
import torch

import comfy.supported_models

from sage_attention_scope.nodes.status import payload, render
from sage_attention_scope.patches import Fault, Reason, Session, Settings, apply_scope, backends, router_of, timing
from sage_attention_scope.patches.backends import torch_sdpa
from sas_harness import doubles
from sas_harness.doubles import FakeClock
from sas_harness.models import TINY_FLUX, build, flux_conditioning, sample
from sas_harness.run import call_of, attention, hnd, in_scope, last_generation, plain_attention

QUANTISED = ("sage2_fp8_sm90", "sage1_triton", "kitchen_int8")
EXACT = tuple(name for name in backends.EXACT if backends.REGISTRY[name].module == torch_sdpa.__name__)  # torch's
BF16 = torch.bfloat16
CPU = torch.device("cpu")  # the tensors' device: the doubles run there, the machine says sm90


def in_fp32(name: str) -> backends.Backend:
    """The pack's declaration of ``name``, taking fp32 too (the tiny models' dtype)."""
    declared = backends.REGISTRY[name]
    return dataclasses.replace(declared, dtypes=declared.dtypes | {torch.float32})


def machine(clock=None, *, sdpa=None, sage2=None, kitchen=None, capability=(9, 0), step_clock=None) -> Session:
    """A session on a GPU of ``capability`` (every device is one, the CPU too) whose libraries are SageAttention 2,
    comfy-kitchen and torch's SDPA backends (doubles; ``None`` for one leaves the default double, ``False``
    leaves it uninstalled)."""
    modules = {"sageattention": doubles.sageattention2_module() if sage2 is None else sage2,
               "comfy_kitchen": doubles.library(int8_attention=doubles.int8_attention,
                                                int8_attention_is_available=doubles.int8_attention_is_available)
               if kitchen is None else kitchen,
               torch_sdpa.__name__: doubles.torch_sdpa_module() if sdpa is None else sdpa}
    session = Session(store=None, clock=clock or FakeClock(),
                      finder=doubles.machine_finder(modules, capability, lambda module: "2.2.0"), step_clock=step_clock)
    for name in (*QUANTISED, *EXACT):
        doubles.add_kernel(session.knowledge, in_fp32(name))
    return session


def sage2_with(behave):
    """SageAttention 2's double whose sm90 kernel (its real signature) answers with ``behave(q, k, v)``."""
    module = doubles.sageattention2_module()

    def sageattn_qk_int8_pv_fp8_cuda_sm90(q, k, v, tensor_layout="HND", is_causal=False, qk_quant_gran="per_thread",
                                          sm_scale=None, pv_accum_dtype="fp32+fp32", smooth_k=True, smooth_v=False,
                                          return_lse=False, **kwargs):
        module.calls.append("sageattn_qk_int8_pv_fp8_cuda_sm90")
        return behave(q, k, v)
    module.sageattn_qk_int8_pv_fp8_cuda_sm90 = sageattn_qk_int8_pv_fp8_cuda_sm90
    return module


def routed(session, settings, calls, model=None):
    """One generation of ``calls`` ((q, k, v, keyword arguments) each); outputs and counters."""
    scoped = apply_scope(model or build(comfy.supported_models.Flux, TINY_FLUX), settings, session)
    outs = in_scope(scoped, lambda: [attention(scoped, q, k, v, q.shape[1], skip_reshape=True, **kw)
                                     for q, k, v, kw in calls])
    return outs, last_generation(session, "cpu")


def same_shape(count=3, n=64, d=64, dtype=BF16):
    q, k, v = hnd(n=n, d=d, dtype=dtype)
    return [(q, k, v, {})] * count


AUTO = Settings(min_seq_len=1)


def served_by(session) -> dict[str, int]:
    """Calls per route of the last generation (a kernel's name, or ComfyUI), summed over its buckets."""
    counts = {}
    for routes in payload(session)["devices"]["cpu"]["route_calls"]["last"].values():
        for route, n in routes.items():
            counts[route] = counts.get(route, 0) + n
    return counts


# -- which candidates a choice offers ---------------------------------------------------------

def test_auto_offers_every_installed_kernel_then_torchs_exact_backends():
    session = machine()
    names = [b.name for b in session.knowledge.kernel("auto", CPU).candidates]
    assert names == ["sage2_fp8_sm90", "kitchen_int8", "sdpa_cudnn", "sdpa_flash", "sdpa_efficient"]
    exact = [b.name for b in session.knowledge.kernel("exact", CPU).candidates]
    assert exact == list(EXACT)
    named = session.knowledge.kernel("kitchen_int8", CPU).candidates
    assert [b.name for b in named] == ["kitchen_int8"]


def test_with_only_torch_the_exact_backends_are_the_candidates():
    session = machine(sage2=False, kitchen=False)
    resolution = session.knowledge.kernel("auto", CPU)
    assert [b.name for b in resolution.candidates] == list(EXACT) and "not installed" not in resolution.why
    assert all(b.backend.exact for b in resolution.candidates)


def test_exact_and_every_bound_kernel_are_offered_as_the_node_s_choices():
    session = machine()
    usable = session.knowledge.usable([CPU])
    assert usable[:2] == ["auto", "exact"] and set(EXACT) <= set(usable) and "sage2_fp8_sm90" in usable


# -- the fastest checked candidate wins its bucket --------------------------------------------

def test_the_fastest_checked_candidate_wins_its_bucket_and_serves_its_calls():
    sdpa = doubles.torch_sdpa_module()
    clock = FakeClock(1.5, 2.0, per_kernel={"sdpa_cudnn": 1.0, "kitchen_int8": 1.2, "sdpa_flash": 1.8})
    session = machine(clock, sdpa=sdpa)
    calls = same_shape()
    outs, counts = routed(session, AUTO, calls)
    assert counts["kernel"] == 3 and counts["declined"] == {}
    assert served_by(session) == {"sdpa_cudnn": 3}
    # each candidate ran once for its check; then only the winner, its checked output the first call's answer
    assert sdpa.calls == ["cudnn_attention", "flash_attention", "efficient_attention", "cudnn_attention",
                          "cudnn_attention"]
    assert clock.timed == ["comfy", *["kernel"] * 5] * timing.ROUNDS, "every candidate timed in the same rounds"
    q, k, v, _ = calls[0]
    for out in outs:
        torch.testing.assert_close(out, plain_attention(q, k, v, 2, skip_reshape=True), rtol=2e-2, atol=2e-2)


def test_comfyuis_attention_keeps_a_bucket_no_candidate_beats_by_the_margin():
    clock = FakeClock(1.99, 2.0)  # every candidate within the tie margin
    session = machine(clock)
    calls = same_shape()
    outs, counts = routed(session, AUTO, calls)
    assert counts["kernel"] == 0 and counts["declined"] == {Reason.MEASURED_SLOWER.value: 3}
    assert served_by(session) == {"ComfyUI": 3}
    q, k, v, _ = calls[0]
    assert all(torch.equal(out, plain_attention(q, k, v, 2, skip_reshape=True)) for out in outs)


@pytest.mark.parametrize("quantised_ms, exact_ms, winner", [
    (1.00, 1.02, "sdpa_cudnn"),      # a near tie between a quantised and an exact kernel goes to the exact one
    (0.90, 1.00, "sage2_fp8_sm90"),  # beyond the margin the quantised one wins
])
def test_a_near_tie_with_an_exact_kernel_goes_to_the_exact_kernel(quantised_ms, exact_ms, winner):
    clock = FakeClock(1.9, 2.0, per_kernel={"sage2_fp8_sm90": quantised_ms, "sdpa_cudnn": exact_ms})
    session = machine(clock)
    routed(session, AUTO, same_shape(2))
    assert served_by(session) == {winner: 2}


def test_a_candidate_that_fails_its_check_never_wins_even_where_fastest():
    sdpa = doubles.torch_sdpa_module(behave={"cudnn_attention": lambda q, k, v, **kw: doubles.noisy(q, k, v)})
    clock = FakeClock(1.9, 2.0, per_kernel={"sdpa_cudnn": 0.1, "kitchen_int8": 1.0})
    session = machine(clock, sdpa=sdpa)
    _, counts = routed(session, AUTO, same_shape())
    assert served_by(session) == {"kitchen_int8": 3}
    checks = {c["key"].split()[-1]: c["passed"] for c in payload(session)["devices"]["cpu"]["checks"]}
    assert checks["sdpa_cudnn"] is False and checks["kitchen_int8"] is True
    assert sdpa.calls.count("cudnn_attention") == 1, "a failed check is kept for the session"


def test_a_candidate_that_raises_never_wins_and_loses_its_bucket():
    def broken(q, k, v, **kwargs):
        raise RuntimeError("cuDNN Frontend error: [cudnn_frontend] Error: No valid engine configs for Matmul_")
    sdpa = doubles.torch_sdpa_module(behave={"flash_attention": broken})
    clock = FakeClock(1.9, 2.0, per_kernel={"sdpa_flash": 0.1, "sdpa_efficient": 1.0})
    session = machine(clock, sdpa=sdpa)
    _, counts = routed(session, AUTO, same_shape())
    assert served_by(session) == {"sdpa_efficient": 3}
    assert counts["faults"] == {Fault.OTHER.value: 1} and counts["declined"] == {}
    assert sdpa.calls.count("flash_attention") == 1, "a candidate that raised is not tried on its bucket again"


def test_when_every_candidate_fails_the_call_returns_comfyuis_result():
    def broken(q, k, v, **kwargs):
        raise RuntimeError("No execution plans support the graph.")
    sdpa = doubles.torch_sdpa_module(behave={name: broken for name in
                                             ("cudnn_attention", "flash_attention", "efficient_attention")})
    noisy_sage2 = sage2_with(doubles.noisy)
    session = machine(FakeClock(0.1, 2.0), sdpa=sdpa, sage2=noisy_sage2, kitchen=False)
    calls = same_shape(2)
    outs, counts = routed(session, AUTO, calls)
    q, k, v, _ = calls[0]
    assert all(torch.equal(out, plain_attention(q, k, v, 2, skip_reshape=True)) for out in outs)
    assert counts["kernel"] == 0 and sum(counts["declined"].values()) == 2
    assert noisy_sage2.calls == ["sageattn_qk_int8_pv_fp8_cuda_sm90"], "checked once, failed, kept off"


# -- exact --------------------------------------------------------------------------------------

def test_exact_never_routes_to_a_quantised_candidate():
    sage2 = doubles.sageattention2_module()
    clock = FakeClock(1.5, 2.0, per_kernel={"sage2_fp8_sm90": 0.1, "kitchen_int8": 0.1, "sdpa_efficient": 1.0})
    session = machine(clock, sage2=sage2)
    routed(session, Settings(kernel="exact", min_seq_len=1), same_shape())
    assert served_by(session) == {"sdpa_efficient": 3}
    assert sage2.calls == [] and clock.timed == ["comfy", *["kernel"] * 3] * timing.ROUNDS


def test_an_exact_candidate_is_held_to_exact_rounding():
    """Noise a quantised kernel may have (relative L2 about 0.05) fails an exact candidate's check."""
    def slightly_off(q, k, v, **kwargs):
        out = doubles.reference_attention(q, k, v)
        return out + torch.randn_like(out) * out.std() * 0.05
    sdpa = doubles.torch_sdpa_module(behave={"efficient_attention": lambda q, k, v, **kw: slightly_off(q, k, v)})
    kitchen = doubles.library(int8_attention=lambda q, k, v, *, scale=None, attn_mask=None: slightly_off(q, k, v),
                              int8_attention_is_available=doubles.int8_attention_is_available)
    session = machine(FakeClock(1.0, 2.0), sdpa=sdpa, kitchen=kitchen)
    routed(session, AUTO, same_shape(1, dtype=torch.float32))
    checks = {c["key"].split()[-1]: c for c in payload(session)["devices"]["cpu"]["checks"]}
    assert checks["sdpa_efficient"]["passed"] is False and checks["kitchen_int8"]["passed"] is True
    assert 0.02 < checks["sdpa_efficient"]["rel_l2"] < 0.1


def test_a_named_kernel_is_timed_against_comfyuis_attention_alone():
    clock = FakeClock(1.0, 2.0)
    session = machine(clock)
    routed(session, Settings(kernel="sdpa_cudnn", min_seq_len=1), same_shape(2))
    assert served_by(session) == {"sdpa_cudnn": 2} and clock.timed == ["comfy", "kernel"] * timing.ROUNDS


def test_always_runs_the_first_eligible_candidate_without_timing():
    clock = FakeClock(5.0, 1.0)
    session = machine(clock)
    _, counts = routed(session, Settings(min_seq_len=1, routing="always"), same_shape(2))
    assert served_by(session) == {"sage2_fp8_sm90": 2} and clock.timed == []


def test_a_masked_call_goes_to_the_candidates_that_take_masks():
    """cuDNN and flash are not handed masks; the memory-efficient backend and comfy-kitchen are."""
    q, k, v = hnd(n=64, d=64, dtype=BF16)
    mask = torch.zeros(64, 64, dtype=BF16)
    mask[:, ::3] = -1e4  # masks keys for every query, not all trailing: a real mask
    mask[0, 5] = -1e4
    clock = FakeClock(1.9, 2.0, per_kernel={"sdpa_cudnn": 0.1, "sdpa_flash": 0.1, "sdpa_efficient": 1.0})
    session = machine(clock, kitchen=False)
    outs, counts = routed(session, AUTO, [(q, k, v, {"mask": mask})] * 2)
    assert served_by(session) == {"sdpa_efficient": 2}
    torch.testing.assert_close(outs[1], plain_attention(q, k, v, 2, skip_reshape=True, mask=mask), rtol=2e-2,
                               atol=2e-2)


def test_grouped_query_calls_are_not_offered_to_cudnn_on_sm100():
    session = machine(capability=(10, 0))
    cudnn = session.knowledge.kernel("sdpa_cudnn", CPU).bound
    assert cudnn.backend.grouped_query is False
    q, _, _ = hnd(h=4, n=64, dtype=BF16)
    _, k, v = hnd(h=2, n=64, dtype=BF16, seed=1)
    from sage_attention_scope.patches.decide import decide
    from sage_attention_scope.patches.state.generation import Generation
    call = call_of((q, k, v, 4), {"skip_reshape": True, "enable_gqa": True})
    ruling = decide(call, (cudnn,), Settings(kernel="sdpa_cudnn", min_seq_len=1), session.knowledge, Generation())
    assert ruling.reason is Reason.GROUPED_QUERY
    on_sm90 = machine(capability=(9, 0)).knowledge.kernel("sdpa_cudnn", CPU).bound
    assert decide(call, (on_sm90,), Settings(kernel="sdpa_cudnn", min_seq_len=1), session.knowledge,
                  Generation()).reason is None


def test_status_names_each_buckets_winner_and_its_margin():
    clock = FakeClock(1.5, 2.0, per_kernel={"sdpa_cudnn": 1.0})
    session = machine(clock)
    routed(session, AUTO, same_shape(2))
    [bucket] = payload(session)["devices"]["cpu"]["buckets"]
    assert bucket["winner"] == "sdpa_cudnn" and bucket["margin"] == pytest.approx(2.0)
    assert bucket["candidates"]["sage2_fp8_sm90"] == 1.5 and bucket["comfy_ms"] == 2.0
    assert "sdpa_cudnn 2.00× ComfyUI's" in render(payload(session))


# -- the non-finite guard under auto (each kernel alone: test_every_candidate.py) ---------------

@pytest.mark.parametrize("kernel", ["sdpa_cudnn", "sdpa_efficient", "kitchen_int8", "sage2_fp8_sm90"])
def test_a_candidate_that_turns_non_finite_after_its_check_reruns_the_step(kernel):
    """The candidate measured routing chose among several, right on its checked first call, NaN after: the
    step runs again without it, and the latent is ComfyUI's own."""
    nan_later = doubles.nan_after_first_call()
    behave = {"sdpa_cudnn": "cudnn_attention", "sdpa_efficient": "efficient_attention"}
    sdpa = doubles.torch_sdpa_module(behave={behave[kernel]: lambda q, k, v, **kw: nan_later(q, k, v)}
                                     if kernel in behave else None)
    sage2 = None
    if kernel == "sage2_fp8_sm90":
        sage2 = sage2_with(nan_later)
    kitchen = None
    if kernel == "kitchen_int8":
        kitchen = doubles.library(int8_attention=lambda q, k, v, *, scale=None, attn_mask=None: nan_later(q, k, v),
                                  int8_attention_is_available=doubles.int8_attention_is_available)
    session = machine(FakeClock(3.0, 2.0, per_kernel={kernel: 0.5}), sdpa=sdpa, sage2=sage2, kitchen=kitchen)
    model = build(comfy.supported_models.Flux, TINY_FLUX)
    plain = sample(model, flux_conditioning(), steps=2)
    out = sample(apply_scope(model, AUTO, session), flux_conditioning(), steps=2)
    assert torch.equal(out, plain)
    assert last_generation(session, "cpu")["faults"] == {Fault.NON_FINITE.value: 1}


# -- no cost where nothing pays: the Scope steps aside ------------------------------------------

STEPS = 4
CALLS_PER_STEP = TINY_FLUX["depth"] + TINY_FLUX["depth_single_blocks"]


def scoped_flux(session, settings=AUTO):
    model = build(comfy.supported_models.Flux, TINY_FLUX)
    return model, apply_scope(model, settings, session)


def test_the_scope_steps_aside_from_the_second_step_when_every_call_keeps_comfyuis_attention():
    session = machine(FakeClock(3.0, 2.0))  # every candidate slower: ComfyUI's attention keeps every bucket
    model, scoped = scoped_flux(session)
    out = sample(scoped, flux_conditioning(), steps=STEPS)
    assert torch.equal(out, sample(model, flux_conditioning(), steps=STEPS))
    counts = last_generation(session, "cpu")
    assert counts["declined"] == {Reason.MEASURED_SLOWER.value: STEPS * CALLS_PER_STEP}
    assert counts["counted_from_routes"] == (STEPS - 1) * CALLS_PER_STEP
    assert "counted from the routes" in render(payload(session))


def _reached_router(scoped, steps, **sample_args):
    """Calls that reached the router, per model evaluation."""
    router, seen = router_of(scoped), []

    def wrapper(apply_model, args):
        before = router.generation.calls_seen
        out = apply_model(args["input"], args["timestep"], **args["c"])
        seen.append(router.generation.calls_seen - before)
        return out
    scoped.set_model_unet_function_wrapper(wrapper)
    sample(scoped, flux_conditioning(), steps=steps, **sample_args)
    return seen


def test_stepped_aside_evaluations_make_no_call_through_the_router():
    session = machine(FakeClock(3.0, 2.0))
    _, scoped = scoped_flux(session)
    assert _reached_router(scoped, STEPS) == [CALLS_PER_STEP] + [0] * (STEPS - 1)


def test_a_run_whose_calls_take_a_kernel_never_steps_aside():
    session = machine(FakeClock(1.0, 2.0))
    _, scoped = scoped_flux(session)
    assert _reached_router(scoped, STEPS) == [CALLS_PER_STEP] * STEPS
    assert last_generation(session, "cpu")["counted_from_routes"] == 0


def test_the_step_window_brings_the_scope_back():
    """Steps before the window keep ComfyUI's attention (aside after the first); the window's first step is
    routed again, its calls on the kernel."""
    session = machine(FakeClock(1.0, 2.0))
    _, scoped = scoped_flux(session, Settings(min_seq_len=1, start_percent=0.5))
    seen = _reached_router(scoped, 8)
    assert seen[0] == CALLS_PER_STEP and 0 in seen[:4] and seen[-1] == CALLS_PER_STEP
    counts = last_generation(session, "cpu")
    assert counts["kernel"] + sum(counts["declined"].values()) == 8 * CALLS_PER_STEP


def test_knowledge_written_mid_run_brings_the_scope_back(session):
    session = machine(FakeClock(3.0, 2.0))
    _, scoped = scoped_flux(session)
    from sage_attention_scope.patches.checks import CheckKey, CheckResult

    def learn(step, *args):
        if step == 1:  # another model learned something: what decide reads changed
            session.knowledge.record_verdict(CheckResult(CheckKey("cuda:7", "bfloat16", 64, "sdpa_flash"), True))
    seen = _reached_router(scoped, STEPS, callback=learn)
    assert seen == [CALLS_PER_STEP, 0, CALLS_PER_STEP, 0]
    assert sum(last_generation(session, "cpu")["declined"].values()) == STEPS * CALLS_PER_STEP


def test_an_out_of_memory_step_is_routed_and_the_steps_after_it_step_aside():
    def oom(q, k, v, tensor_layout="HND", is_causal=False, sm_scale=None, pv_accum_dtype="fp32+fp32", smooth_k=True):
        raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")
    session = machine(FakeClock(1.0, 2.0), sdpa=False, kitchen=False,
                      sage2=types.SimpleNamespace(**{**vars(doubles.sageattention2_module()),
                                                     "sageattn_qk_int8_pv_fp8_cuda_sm90": oom}))
    _, scoped = scoped_flux(session, Settings(kernel="sage2_fp8_sm90", min_seq_len=1))
    seen = _reached_router(scoped, STEPS)
    assert seen == [CALLS_PER_STEP, CALLS_PER_STEP, 0, 0]  # the OOM step had a fault; the next keeps ComfyUI's
    counts = last_generation(session, "cpu")
    assert counts["declined"] == {Reason.KERNEL_FAULT.value: 1, Reason.OOM_EARLIER.value: STEPS * CALLS_PER_STEP - 1}


def test_a_stepped_aside_evaluation_hands_its_calls_to_the_override_below_the_scope():
    below = []

    def other_pack(func, *args, **kwargs):
        below.append(1)
        return func(*args, **kwargs)
    session = machine(FakeClock(3.0, 2.0))
    model = build(comfy.supported_models.Flux, TINY_FLUX)
    model.model_options.setdefault("transformer_options", {})["optimized_attention_override"] = other_pack
    scoped = apply_scope(model, AUTO, session)
    sample(scoped, flux_conditioning(), steps=STEPS)
    assert len(below) >= STEPS * CALLS_PER_STEP  # every call of every step, stepped aside or not


# -- the step trial: the whole step has the last word ------------------------------------------

def test_kernels_that_win_per_call_but_lose_the_step_leave_it_to_comfyuis_attention():
    """A kernel can time faster alone than it runs inside a step (its host time in a host-bound step): the
    first evaluation with settled routes is timed, the next runs without the Scope, timed; the Scope clearly
    slower (a first pair far apart decides alone), it steps aside from evaluations of that shape for the
    session, this generation and the next."""
    steps = doubles.FakeStepClock(scope_ms=10.0, comfy_ms=7.0)
    session = machine(FakeClock(1.0, 2.0), step_clock=steps)
    model, scoped = scoped_flux(session)
    seen = _reached_router(scoped, STEPS)
    # step 1 checks and times the candidates; step 2 is timed with the Scope; step 3 without it; step 4 aside
    # (step 1 is timed too, and waited for its checks and timings: no trial from it)
    assert seen == [CALLS_PER_STEP, CALLS_PER_STEP, 0, 0] and steps.timed == ["scope", "scope", "comfy"]
    counts = last_generation(session, "cpu")
    assert counts["kernel"] == 2 * CALLS_PER_STEP
    assert counts["declined"] == {Reason.STEP_TRIAL.value: CALLS_PER_STEP, Reason.STEP_SLOWER.value: CALLS_PER_STEP}
    assert _reached_router(scoped, STEPS) == [0] * STEPS  # the next generation: aside from its first step
    assert steps.timed == ["scope", "scope", "comfy"]  # tried once a session
    assert torch.equal(sample(scoped, flux_conditioning(), steps=2), sample(model, flux_conditioning(), steps=2))
    text = render(payload(session))
    assert "without -> ComfyUI's attention (the Scope steps aside)" in text
    assert Reason.STEP_SLOWER.label in text


def test_kernels_that_win_the_step_keep_it_and_the_trial_costs_one_evaluation():
    steps = doubles.FakeStepClock(scope_ms=5.0, comfy_ms=9.0)
    session = machine(FakeClock(1.0, 2.0), step_clock=steps)
    _, scoped = scoped_flux(session)
    assert _reached_router(scoped, STEPS) == [CALLS_PER_STEP, CALLS_PER_STEP, 0, CALLS_PER_STEP]
    assert last_generation(session, "cpu")["declined"] == {Reason.STEP_TRIAL.value: CALLS_PER_STEP}
    assert _reached_router(scoped, STEPS) == [CALLS_PER_STEP] * STEPS and steps.timed == ["scope", "scope", "comfy"]
    assert "5.0 ms with the Scope, 9.0 ms without -> the Scope's routes" in render(payload(session))


def test_a_close_step_is_judged_on_the_medians_of_several_pairs():
    """Where the first pair is close, one sample of each says little (a small model's step varies by more than
    the margin): the trial takes its pairs in turns, and the medians decide. Here the one fast outlier of the
    Scope's side would have kept the Scope; the medians say ComfyUI's attention (the Scope steps aside)."""
    steps = doubles.FakeStepClock(scope_ms=[50.0, 8.0, 10.0, 10.2], comfy_ms=[9.0, 9.9, 9.8])
    session = machine(FakeClock(1.0, 2.0), step_clock=steps)
    _, scoped = scoped_flux(session)
    seen = _reached_router(scoped, 8)
    # evaluation 1 settles the routes (timed, waited: no sample); then scope, comfy in turns, three pairs
    assert seen == [CALLS_PER_STEP, CALLS_PER_STEP, 0, CALLS_PER_STEP, 0, CALLS_PER_STEP, 0, 0]
    assert steps.timed == ["scope"] + ["scope", "comfy"] * 3
    counts = last_generation(session, "cpu")
    assert counts["declined"] == {Reason.STEP_TRIAL.value: 3 * CALLS_PER_STEP, Reason.STEP_SLOWER.value: CALLS_PER_STEP}
    assert "a step 10.0 ms with the Scope, 9.8 ms without -> ComfyUI's attention (the Scope steps aside) " \
           "(medians of 3 each)" in render(payload(session))


def test_a_trial_a_generation_leaves_unfinished_goes_on_in_the_next():
    """One trial a shape for the session: a generation that ends before the trial's pairs are in (a few-step
    distilled model) leaves its samples to the next generation, which takes the turn where it stopped."""
    steps = doubles.FakeStepClock(scope_ms=[50.0, 10.0, 10.2, 10.1], comfy_ms=[9.8, 9.9, 9.7])
    session = machine(FakeClock(1.0, 2.0), step_clock=steps)
    _, scoped = scoped_flux(session)
    # evaluation 1 settles the routes (no sample); then scope, comfy, scope: the generation ends mid-trial
    assert _reached_router(scoped, 4) == [CALLS_PER_STEP, CALLS_PER_STEP, 0, CALLS_PER_STEP]
    assert steps.timed == ["scope", "scope", "comfy", "scope"]
    # the next generation: comfy (the pending turn), scope, comfy: three pairs, the medians say aside
    assert _reached_router(scoped, 4) == [0, CALLS_PER_STEP, 0, 0]
    assert steps.timed[4:] == ["comfy", "scope", "comfy"]
    assert "a step 10.1 ms with the Scope, 9.8 ms without -> ComfyUI's attention (the Scope steps aside) " \
           "(medians of 3 each)" in render(payload(session))


def test_routing_always_and_a_near_tie_of_the_step():
    """routing=always never times a step (the user chose the kernel); a step within the margin goes to
    ComfyUI's attention, as a near tie of a call does, once three pairs say so."""
    steps = doubles.FakeStepClock(scope_ms=9.0, comfy_ms=9.1)
    session = machine(FakeClock(1.0, 2.0), step_clock=steps)
    _, scoped = scoped_flux(session, Settings(routing="always", min_seq_len=1))
    assert _reached_router(scoped, STEPS) == [CALLS_PER_STEP] * STEPS and steps.timed == []
    session = machine(FakeClock(1.0, 2.0), step_clock=steps)
    _, scoped = scoped_flux(session)
    assert _reached_router(scoped, 8) == [CALLS_PER_STEP, CALLS_PER_STEP, 0, CALLS_PER_STEP, 0, CALLS_PER_STEP, 0, 0]


def test_a_step_verdict_holds_only_while_the_routes_it_timed_stand():
    """What decide reads changing (here a check another model recorded) times the step again."""
    steps = doubles.FakeStepClock(scope_ms=10.0, comfy_ms=7.0)
    session = machine(FakeClock(1.0, 2.0), step_clock=steps)
    _, scoped = scoped_flux(session)
    _reached_router(scoped, STEPS)
    from sage_attention_scope.patches.checks import CheckKey, CheckResult
    session.knowledge.record_verdict(CheckResult(CheckKey("cuda:7", "bfloat16", 64, "sdpa_flash"), True))
    assert _reached_router(scoped, STEPS) == [CALLS_PER_STEP, 0, 0, 0]
    assert steps.timed == ["scope", "scope", "comfy", "scope", "comfy"]
