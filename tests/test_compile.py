"""The scope under torch.compile: each attention call is one registered custom op whose run-time
implementation is the eager router, so a scoped block compiles as one graph and every call is
decided by the same ``decide`` as in eager mode, checked, counted and falls back the same way."""
from __future__ import annotations

import sys

import pytest
import torch

import comfy.supported_models

from sage_attention_scope.nodes.status import payload
from sage_attention_scope.patches import Reason, Settings, apply_scope, decide, router_of
from sas_harness.doubles import RecordingKernel, make_kernel, raising, registered
from sas_harness.models import TINY_FLUX, build, flux_conditioning, sample, tiny_flux
from sas_harness.run import attention, hnd, in_scope, last_generation

CPU = torch.device("cpu")  # the block tests run on the CPU wherever they are; ComfyUI's sampler test does not
TOKENS = 24


def cpu_flux():
    return build(comfy.supported_models.Flux, TINY_FLUX, device=CPU)


def _single_block_inputs(model):
    flux = model.model.diffusion_model
    g = torch.Generator().manual_seed(5)
    x = torch.randn(1, TOKENS, TINY_FLUX["hidden_size"], generator=g)
    vec = torch.randn(1, TINY_FLUX["hidden_size"], generator=g)
    pe = flux.pe_embedder(torch.zeros(1, TOKENS, 3))
    return flux.single_blocks[0], x, vec, pe


def _compiled_and_eager(scoped, backend="aot_eager", fullgraph=True):
    block, x, vec, pe = _single_block_inputs(scoped)
    options = scoped.model_options["transformer_options"]
    compiled = torch.compile(block, backend=backend, fullgraph=fullgraph)
    with torch.no_grad():
        eager = in_scope(scoped, lambda: block(x, vec=vec, pe=pe, transformer_options=options))
        traced = in_scope(scoped, lambda: compiled(x, vec=vec, pe=pe, transformer_options=options))
    return eager, traced


def test_a_scoped_block_compiles_as_one_graph_and_matches_eager(session):
    torch._dynamo.reset()
    kernel = RecordingKernel()
    with registered(session, make_kernel("double", kernel)):
        scoped = apply_scope(cpu_flux(), Settings(kernel="double", min_seq_len=TOKENS), session)
        eager, traced = _compiled_and_eager(scoped)  # fullgraph=True raises on any graph break
    torch.testing.assert_close(traced, eager, rtol=1e-5, atol=1e-5)
    assert len(kernel.calls) == 2  # eager, then the op at run time
    assert last_generation(session, "cpu")["kernel"] == 1


def test_a_second_copy_of_the_pack_in_the_process_leaves_the_first_ones_op_alone(session, monkeypatch):
    """ComfyUI loading another copy of the pack (a second folder in custom_nodes, or a test) defines
    that copy's op beside this one's: this copy's compiled calls still reach this copy's routers."""
    import importlib.util
    from sage_attention_scope.patches.extras import compiled
    pack_folder = compiled.__file__.rsplit("/patches/", 1)[0]
    spec = importlib.util.spec_from_file_location("second_copy", f"{pack_folder}/__init__.py",
                                                  submodule_search_locations=[pack_folder])
    second = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, "second_copy", second)
    spec.loader.exec_module(second)
    assert second.patches.extras.compiled.OP_NAME != compiled.OP_NAME
    test_a_scoped_block_compiles_as_one_graph_and_matches_eager(session)


def test_inside_the_op_a_failing_kernel_still_falls_back_and_is_counted(session):
    torch._dynamo.reset()
    failing = raising(lambda: RuntimeError("CUDA error: an illegal memory access"))
    with registered(session, make_kernel("double", RecordingKernel(failing))):
        scoped = apply_scope(cpu_flux(), Settings(kernel="double", min_seq_len=TOKENS, first_call_check=False),
                             session)
        eager, traced = _compiled_and_eager(scoped)
    torch.testing.assert_close(traced, eager, rtol=1e-5, atol=1e-5)
    gen = last_generation(session, "cpu")
    assert gen["faults"] == {"other": 1} and gen["declined"] == {Reason.KERNEL_FAULT.value: 1}


CALLS = [  # (what, q/k/v, keyword arguments): one call of each kind the router tells apart
    ("eligible", lambda: hnd(n=64), {}),
    ("too short", lambda: hnd(n=16), {}),
    ("head size", lambda: hnd(n=64, d=32), {}),
    ("dtype", lambda: hnd(n=64, dtype=torch.bfloat16), {}),
    ("opt-out", lambda: hnd(n=64), {"low_precision_attention": False}),
    ("mask", lambda: hnd(n=64), {"mask": torch.cat([torch.zeros(64, 60), torch.full((64, 4), -1e4)], 1)}),
    ("no-op mask", lambda: hnd(n=64), {"mask": torch.zeros(64, 64)}),
]


def test_eager_and_compiled_calls_get_the_same_reason_from_the_one_decide(session, monkeypatch):
    """Every call, eager or compiled, is decided once by ``decide.decide`` at run time, with the same
    result; the counters of the two runs are the same table."""
    seen = []
    real = decide.decide
    monkeypatch.setattr(decide, "decide", lambda call, *a: seen.append((r := real(call, *a)).reason) or r)
    from sage_attention_scope.patches import router as router_module
    monkeypatch.setattr(router_module, "decide", decide.decide)
    kernel = RecordingKernel()
    with registered(session, make_kernel("double", kernel, dtypes={torch.float32}, head_dims={64})):
        scoped = apply_scope(cpu_flux(), Settings(kernel="double", min_seq_len=32), session)
        inputs = [(make(), kwargs) for _, make, kwargs in CALLS]

        def run_all():
            return [attention(scoped, *qkv, 2, skip_reshape=True, **kwargs) for qkv, kwargs in inputs]
        torch._dynamo.reset()
        eager = in_scope(scoped, run_all)
        eager_counts, eager_reasons = last_generation(session, "cpu"), list(seen)
        seen.clear()
        traced = in_scope(scoped, torch.compile(run_all, backend="aot_eager", fullgraph=True))
    assert seen == eager_reasons and len(seen) == len(CALLS)
    assert last_generation(session, "cpu") == eager_counts
    assert eager_counts["declined"] == {r.value: 1 for r in (Reason.TOO_SHORT, Reason.HEAD_DIM, Reason.DTYPE,
                                                           Reason.LOW_PRECISION_OPT_OUT, Reason.MASK)}
    assert eager_counts["kernel"] == 2 and eager_counts["masks_dropped"] == 1
    for a, b in zip(eager, traced):
        torch.testing.assert_close(b, a, rtol=1e-5, atol=1e-5)


def test_comfyuis_torch_compile_wrapper_after_the_scope_samples(session):
    from comfy_api.torch_helpers import set_torch_compile_wrapper
    torch._dynamo.reset()
    model, cond = tiny_flux(), flux_conditioning()
    plain = sample(model, cond, steps=2)
    kernel = RecordingKernel()
    with registered(session, make_kernel("double", kernel)):
        scoped = apply_scope(model, Settings(kernel="double", min_seq_len=1), session)
        compiled = scoped.clone()
        set_torch_compile_wrapper(compiled, backend="aot_eager")
        out = sample(compiled, cond, steps=2)
    torch.testing.assert_close(out, plain, rtol=1e-4, atol=1e-4)
    assert router_of(compiled) is router_of(scoped)
    assert len(kernel.calls) == 4 and last_generation(session)["kernel"] == 4


@pytest.mark.parametrize("fullgraph", [True])
def test_a_call_outside_the_scope_compiles_and_runs_comfyuis_attention(session, fullgraph):
    torch._dynamo.reset()
    kernel = RecordingKernel()
    with registered(session, make_kernel("double", kernel)):
        scoped = apply_scope(cpu_flux(), Settings(kernel="double", min_seq_len=1), session)
        q, k, v = hnd(n=64)
        fn = torch.compile(lambda q, k, v: attention(scoped, q, k, v, 2, skip_reshape=True), backend="aot_eager",
                           fullgraph=fullgraph)
        out = fn(q, k, v)
    assert kernel.calls == []
    torch.testing.assert_close(out, attention(scoped, q, k, v, 2, skip_reshape=True), rtol=0, atol=0)
    assert payload(session)["devices"]["cpu"]["session"]["declined"] == {Reason.OUTSIDE_SCOPE.value: 2}
