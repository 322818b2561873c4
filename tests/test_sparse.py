"""Sparse attention (the node's ``sparse`` input): comfy-kitchen's Sol-Attn on the long self-attention calls,
gated on the model's own activations. The sparse kernel here is comfy-kitchen's own eager reference on the
CPU (the real library, not a double); the dense candidate is the named double of the other tests (real
attention). q/k with positional structure (nearby tokens alike, as trained video models attend) pass the
gate; random q/k (attention spread over every key) fail it and stay dense."""
from __future__ import annotations

import dataclasses
import logging

import pytest
import torch

import comfy.ldm.modules.attention as comfy_attention
import comfy.supported_models

from sage_attention_scope.nodes.status import payload, render
from sage_attention_scope.patches import Session, Settings, apply_scope, backends, families, router_of
from sage_attention_scope.patches.backends.kitchen import SOL_ATTN, text_blocks
from sage_attention_scope.patches.settings import problem
from sas_harness import doubles
from sas_harness.doubles import FakeClock, RecordingKernel, make_kernel, registered
from sas_harness.models import TINY_FLUX, TINY_SDXL, build, flux_conditioning, sample
from sas_harness.run import in_scope, last_generation, plain_attention

try:
    import comfy_kitchen
except ImportError:  # ComfyUI 0.3.75 runs without it
    comfy_kitchen = None
HAS_SOL_ATTN = comfy_kitchen is not None and hasattr(comfy_kitchen, "sol_attn")
NEEDS_SOL_ATTN = pytest.mark.skipif(not HAS_SOL_ATTN, reason="this environment's comfy-kitchen has no sol_attn "
                                                             "(0.2.40 adds it; ComfyUI 0.33 pins 0.2.31)")
BF16 = torch.bfloat16
TOKENS = 512  # 8 of sol_attn's 64-token blocks; the tests set sparse_min_tokens below it
SPARSE = dict(kernel="double", routing="always", min_seq_len=64, sparse="sol-attn", sparse_min_tokens=256)


def sol_attn_on_cpu(module=None) -> doubles.KernelDouble:
    """The pack's Sol-Attn declaration bound on the CPU, where comfy-kitchen runs its eager reference (its
    availability function says False there: it speaks of the fused kernels); ``module``: a double of its
    library in place of the session's comfy-kitchen."""
    return doubles.kernel_double(dataclasses.replace(backends.REGISTRY[SOL_ATTN], available=None), module,
                                 devices={"cpu"})


@pytest.fixture
def machine():
    """A session whose dense candidate is the double and whose sparse kernel is comfy-kitchen's own."""
    session = Session(store=None, clock=FakeClock())
    doubles.add_kernel(session.knowledge, sol_attn_on_cpu())
    kernel = RecordingKernel()
    with registered(session, make_kernel("double", kernel)):
        yield session, kernel


def structured(n=TOKENS, heads=2, d=128, seed=0):
    """q, k, v (B, H, N, D) in bf16 whose attention is local: q and k share a smooth positional feature."""
    g = torch.Generator().manual_seed(seed)
    angles = torch.arange(n, dtype=torch.float32)[:, None] * (torch.randn(d // 2, generator=g) * 0.05)[None]
    position = torch.cat([angles.cos(), angles.sin()], -1)  # about 90% of the mass in the top 10% of keys
    q, k = (position + 0.3 * torch.randn(1, heads, n, d, generator=g) for _ in range(2))
    v = torch.randn(1, heads, n, d, generator=g)
    return tuple(t.to(BF16) for t in (q, k, v))


def spread(n=TOKENS, heads=2, d=128, seed=0):
    """q, k, v drawn at random: attention spread over every key, where a sparse kernel is far from dense."""
    g = torch.Generator().manual_seed(seed)
    return tuple(torch.randn(1, heads, n, d, generator=g).to(BF16) for _ in range(3))


def block(index, total=4, kind="double"):
    return {"block_type": kind, "block_index": index, "total_blocks": total}


def scoped(model, session, **settings):
    """``model`` scoped as the node scopes it (its family recognised), with the sparse settings."""
    return apply_scope(model, Settings(**{**SPARSE, **settings}), session, families.recognise(model).family)


def scoped_flux(session, **settings):
    return scoped(build(comfy.supported_models.Flux, TINY_FLUX), session, **settings)


def in_sparse_window(scoped, calls, text_tokens=0):
    """``calls`` ((q, k, v, keyword arguments) each) in one generation, in a step past sparse_start_percent
    (as the sparse tier marks it) of a forward whose context has ``text_tokens`` tokens (as the
    diffusion-model wrapper reads it); their outputs."""
    router = router_of(scoped)

    def run():
        router.generation.in_sparse_steps = True
        router.generation.text_tokens = text_tokens
        return [attention_in_block(scoped, q, k, v, **kw) for q, k, v, kw in calls]
    return in_scope(scoped, run)


def attention_in_block(scoped, q, k, v, block_options=None, **kwargs):
    """One call of ComfyUI's attention from the block ``block_options`` says (FLUX's own options keys)."""
    options = {**scoped.model_options["transformer_options"], **(block_options or block(1))}
    return comfy_attention.optimized_attention(q, k, v, q.shape[1], skip_reshape=True, transformer_options=options,
                                               **kwargs)


def rel_l2(out, ref):
    return float((out.float() - ref.float()).norm() / ref.float().norm())


def sparse_counts(session):
    return last_generation(session, "cpu").get("sparse", {"calls": 0, "dense": {}})


@NEEDS_SOL_ATTN
def test_structured_activations_pass_the_gate_and_run_sparse(machine):
    session, dense = machine
    q, k, v = structured()
    outs = in_sparse_window(scoped_flux(session), [(q, k, v, {})] * 3)
    reference = plain_attention(q, k, v, q.shape[1], skip_reshape=True)
    assert all(rel_l2(out, reference) < 0.05 for out in outs)
    assert not torch.equal(outs[1], reference)  # sparse ran: not the dense result
    assert sparse_counts(session) == {"calls": 3, "dense": {}} and dense.calls == []
    (gate,) = [c for c in session.knowledge.snapshot()["cpu"]["checks"] if c.gated]
    assert gate.passed and gate.rel_l2 < 0.05 and gate.key.kernel == f"{SOL_ATTN} tau 1"
    text = render(payload(session))
    assert "sparse" in text and "tau 1" in text


@NEEDS_SOL_ATTN
def test_spread_activations_fail_the_gate_and_that_kind_stays_dense_for_the_session(machine, caplog):
    session, dense = machine
    q, k, v = spread()
    with caplog.at_level(logging.WARNING):
        outs = in_sparse_window(scoped_flux(session), [(q, k, v, {})] * 3)
    reference = plain_attention(q, k, v, q.shape[1], skip_reshape=True)
    torch.testing.assert_close(outs[0], reference)  # the gated call returns the dense result
    assert len(dense.calls) == 2  # the next calls go to the fastest dense candidate
    assert sparse_counts(session) == {"calls": 0, "dense": {"sparse_gate": 2}}
    (gate,) = [c for c in session.knowledge.snapshot()["cpu"]["checks"] if c.gated]
    assert not gate.passed and gate.rel_l2 > 0.3
    assert "Sparse attention gate FAILED" in caplog.text and "run dense" in caplog.text
    assert "sparse_gate" in str(payload(session)) and "FAILED" in render(payload(session))


@NEEDS_SOL_ATTN
def test_an_open_gate_runs_sparse_on_any_activations_and_a_kind_is_gated_once(machine):
    session, dense = machine
    q, k, v = spread()
    in_sparse_window(scoped_flux(session, sparse_gate=1.0), [(q, k, v, {})] * 2 + [(q, k, v, {"block_options":
                                                                                             block(2, kind="single")})])
    assert sparse_counts(session)["calls"] == 3 and dense.calls == []
    gates = [c for c in session.knowledge.snapshot()["cpu"]["checks"] if c.gated]
    assert sorted(g.key.keys for g in gates) == ["double 512", "single 512"]  # per block type and key length
    assert all(g.passed for g in gates)


@NEEDS_SOL_ATTN
def test_the_text_tokens_of_a_joint_sequence_stay_exact(machine):
    """FLUX puts its text first: those query rows attend every key exactly, while the image rows are sparse."""
    session, _ = machine
    q, k, v = spread()
    text = 128  # two blocks
    (out,) = in_sparse_window(scoped_flux(session, sparse_gate=1.0), [(q, k, v, {})], text_tokens=text)
    reference = plain_attention(q, k, v, q.shape[1], skip_reshape=True)  # (B, N, H*D)
    assert rel_l2(out[:, :text], reference[:, :text]) < 0.01
    assert rel_l2(out[:, text:], reference[:, text:]) > 0.1
    assert text_blocks("first", 100, 512) == [0, 2] and text_blocks("last", 100, 512) == [6, 8]
    assert text_blocks("none", 100, 512) is None and text_blocks("first", 0, 512) is None


@NEEDS_SOL_ATTN
@pytest.mark.parametrize("case, reason", [
    ("mask", "mask"), ("head size 64", "head_dim"), ("cross-attention", "sparse_cross"),
    ("short", "sparse_short"), ("first block", "sparse_first_block"), ("before start", "sparse_before_start")])
def test_calls_sparse_cannot_take_run_dense_with_their_reason(machine, case, reason):
    session, dense = machine
    q, k, v = structured()
    kwargs = {}
    if case == "mask":
        kwargs["mask"] = torch.randn(TOKENS, TOKENS).to(BF16)
    elif case == "head size 64":
        q, k, v = structured(d=64)
    elif case == "cross-attention":
        k, v = k[:, :, :300], v[:, :, :300]
    elif case == "short":
        q, k, v = structured(n=192)
    elif case == "first block":
        kwargs["block_options"] = block(0)
    scoped = scoped_flux(session)
    if case == "before start":
        in_scope(scoped, lambda: attention_in_block(scoped, q, k, v))
    else:
        in_sparse_window(scoped, [(q, k, v, kwargs)])
    assert sparse_counts(session) == {"calls": 0, "dense": {reason: 1}}


@NEEDS_SOL_ATTN
def test_a_family_that_does_not_say_where_its_text_sits_stays_dense(machine):
    session, dense = machine
    sdxl = scoped(build(comfy.supported_models.SDXL, TINY_SDXL), session)
    q, k, v = structured()
    in_sparse_window(sdxl, [(q, k, v, {})])
    assert sparse_counts(session) == {"calls": 0, "dense": {"sparse_undeclared": 1}}


def test_without_sol_attn_the_calls_run_dense_and_the_log_names_the_version_that_has_it(caplog):
    """A comfy-kitchen without sol_attn (ComfyUI 0.33 pins 0.2.31): its library double here."""
    old_kitchen = doubles.library(int8_attention=doubles.int8_attention,
                                  int8_attention_is_available=doubles.int8_attention_is_available)
    session = Session(store=None, clock=FakeClock(), finder=backends.Finder(lambda name: old_kitchen))
    doubles.add_kernel(session.knowledge, sol_attn_on_cpu())
    kernel = RecordingKernel()
    with registered(session, make_kernel("double", kernel)), caplog.at_level(logging.WARNING):
        q, k, v = structured()
        in_sparse_window(scoped_flux(session), [(q, k, v, {})] * 2)
    assert sparse_counts(session) == {"calls": 0, "dense": {"sparse_unavailable": 2}}
    assert len(kernel.calls) == 2 and "0.2.40" in caplog.text and caplog.text.count("sparse sol-attn asked") == 1


@NEEDS_SOL_ATTN
def test_measured_routing_takes_sparse_only_where_it_is_faster_than_the_best_dense_candidate():
    for sparse_ms, expected in ((0.5, "sparse"), (1.5, "dense")):
        session = Session(store=None, clock=FakeClock(kernel_ms=1.0, comfy_ms=2.0,
                                                      per_kernel={f"{SOL_ATTN} tau 1": sparse_ms}))
        doubles.add_kernel(session.knowledge, sol_attn_on_cpu())
        kernel = RecordingKernel()
        with registered(session, make_kernel("double", kernel)):
            q, k, v = structured()
            in_sparse_window(scoped_flux(session, routing="measured"), [(q, k, v, {})] * 3)
        ran_sparse = sparse_counts(session)["calls"]
        assert (ran_sparse == 3) == (expected == "sparse") and (len(kernel.calls) >= 2) == (expected == "dense")


@NEEDS_SOL_ATTN
def test_a_sparse_kernel_that_returns_nan_fails_its_gate(machine):
    """The non-finite check holds for the sparse candidate too: a NaN output is never returned."""
    session, dense = machine

    def sol_attn_nan(q, k, v, tau=1.0, scale=None, sink_blocks=None, sink_q=None, key_bias=None, topk_ratio=0.0,
                     tail=True, block_len=None, coarse_gate=None, token_aug=0):
        return torch.full_like(q, float("nan"))
    doubles.add_kernel(session.knowledge, sol_attn_on_cpu(doubles.library(sol_attn=sol_attn_nan)))
    q, k, v = structured()
    outs = in_sparse_window(scoped_flux(session, sparse_gate=1.0), [(q, k, v, {})] * 2)
    assert all(bool(torch.isfinite(out).all()) for out in outs)
    assert sparse_counts(session) == {"calls": 0, "dense": {"sparse_gate": 1}}
    assert last_generation(session, "cpu")["faults"] == {"non_finite": 1}


@NEEDS_SOL_ATTN
def test_the_schedule_keeps_the_first_steps_dense_and_sparse_after_start_percent(machine):
    """A tiny FLUX.1 with 128-wide heads in bf16 sampled four steps: before sparse_start_percent its calls are
    dense; after it the calls past each block type's first block run sparse (gate open: random weights)."""
    session, _ = machine
    config = dict(TINY_FLUX, hidden_size=256, num_heads=2, axes_dim=[16, 56, 56], depth=2, depth_single_blocks=2)
    model = build(comfy.supported_models.Flux, config, dtype=BF16)
    flux = scoped(model, session, sparse_min_tokens=64, sparse_gate=1.0, sparse_start_percent=0.5)
    sample(flux, flux_conditioning(), latent_hw=(16, 16), steps=4)
    counts = sparse_counts(session)
    # 4 calls a step (2 double-stream, 2 single-stream): the steps before 50% dense, and in the others the
    # first block of each type
    before, window_steps = counts["dense"]["sparse_before_start"], 4 - counts["dense"]["sparse_before_start"] // 4
    assert before % 4 == 0 and before >= 4 and window_steps >= 1
    assert counts["dense"]["sparse_first_block"] == 2 * window_steps and counts["calls"] == 2 * window_steps


def test_sparse_off_and_the_scope_off_are_bit_identical_to_no_node(machine):
    session, _ = machine
    model, cond = build(comfy.supported_models.Flux, TINY_FLUX), flux_conditioning()
    plain = sample(model, cond, steps=2)
    off = sample(scoped(model, session, enabled=False), cond, steps=2)
    assert torch.equal(plain, off)


def test_sparse_inputs_are_checked_with_one_clear_error_each():
    assert problem("sparse", "sol-attn") is None and "sparse must be one of off, sol-attn" in problem("sparse", "x")
    assert "sparse_tau must be a number from 0.05 to 4.0" in problem("sparse_tau", 0)
    assert "sparse_gate must be a number from 0.0 to 1.0" in problem("sparse_gate", 2.0)
    assert "sparse_min_tokens must be a whole number" in problem("sparse_min_tokens", 1.5)
    with pytest.raises(ValueError, match="sparse_topk"):
        Settings(sparse_topk=-0.1)
    assert Settings(sparse_topk=0.1).sparse_density() == "top-k 0.1" and Settings().sparse_density() == "tau 1"
    assert not Settings().sparse_on and not Settings(sparse="sol-attn", enabled=False).sparse_on
