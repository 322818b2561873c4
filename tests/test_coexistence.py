"""The Scope beside other attention overrides and newer ComfyUI: never silently replaced, never
silently composed, extra keyword arguments passed on, containers consumed once."""
from __future__ import annotations

import logging

import pytest
import torch

from sage_attention_scope.nodes.scope import scoped_model
from sage_attention_scope.nodes.status import payload, render
from sage_attention_scope.patches import Reason, router_of
from sas_harness import master_attention
from sas_harness.doubles import RecordingKernel, make_kernel, registered
from sas_harness.models import DEVICE, flux_conditioning, sample, tiny_flux
from sas_harness.run import attention, hnd, in_scope, last_generation

import comfy.ldm.modules.attention as comfy_attention

CALLS = 2  # tiny FLUX.1: one double- and one single-stream block


def set_model_optimized_attention(model, optimized_attention):
    """What ComfyUI master's ModelPatcher.set_model_optimized_attention does (core's "Model Attention
    Backend" node, KJNodes): an override that calls the chosen function, on the given clone."""
    def optimized_attention_override(_, *args, **kwargs):
        return optimized_attention(*args, **kwargs)
    transformer_options = model.model_options.setdefault("transformer_options", {})
    transformer_options["optimized_attention_override"] = optimized_attention_override
    return model


def other_node(model):
    return set_model_optimized_attention(model.clone(), comfy_attention.attention_pytorch)


def test_a_later_node_that_replaces_the_scope_is_said_every_run(session, caplog):
    caplog.set_level(logging.WARNING)
    kernel = RecordingKernel()
    with registered(session, make_kernel("double", kernel)):
        replaced = other_node(scoped_model(tiny_flux(), kernel="double", min_seq_len=1))
        for _ in range(2):
            sample(replaced, flux_conditioning())
    warnings = [r.getMessage() for r in caplog.records if "replaced by" in r.getMessage()]
    replaced_by = "replaced by set_model_optimized_attention: Sage Attention Scope inactive for this model"
    assert len(warnings) == 2 and replaced_by in warnings[0]
    assert kernel.calls == []
    assert f"model FLUX.1 (Flux): {replaced_by}" in render(payload(session))


def in_run(prompt_id: str, fn):
    """``fn()`` as ComfyUI runs a node of prompt ``prompt_id`` (what the Scope reads as the run)."""
    from comfy_execution.utils import CurrentNodeContext
    with CurrentNodeContext(prompt_id, "5"):
        return fn()


def test_a_run_after_the_replacing_node_is_removed_says_the_scope_served_it(session):
    """Run 1: the Scope, then a node that replaces its override. Run 2: that node removed; ComfyUI
    serves the Scope node from its cache (its model is the same scoped clone, the Scope does not run
    again). Each run's record says what happened in it, with its own counts."""
    with registered(session, make_kernel("double", RecordingKernel())):
        scoped = in_run("first", lambda: scoped_model(tiny_flux(), kernel="double", min_seq_len=1))
        in_run("first", lambda: sample(other_node(scoped), flux_conditioning()))
        first = payload(session, "first")
        in_run("second", lambda: sample(scoped, flux_conditioning()))
        second = payload(session, "second")
        in_run("third", lambda: sample(other_node(scoped), flux_conditioning()))
        third = payload(session, "third")
    [model] = first["run"]
    assert model["note"].startswith("replaced by set_model_optimized_attention") and model["devices"] == {}
    [model] = second["run"]
    assert model["note"] == "scoped" and model["devices"][DEVICE]["kernel"] == CALLS
    assert "model FLUX.1 (Flux): scoped" in render(second).split("Session")[0]  # This run
    assert [m["note"] for m in second["models"]] == ["scoped"]  # the session says the latest run's
    # a replaced run after a scoped one: its last generation has no calls, not the run before's
    assert third["devices"][DEVICE]["last_generation"]["kernel"] == 0
    assert third["devices"][DEVICE]["session"]["kernel"] == CALLS


def test_an_override_set_before_the_scope_serves_what_it_declines_and_the_status_names_it(session):
    seen = []

    def earlier(func, *args, **kwargs):
        seen.append(args[0].shape)
        return func(*args, **kwargs)
    model = tiny_flux()
    model.model_options.setdefault("transformer_options", {})["optimized_attention_override"] = earlier
    with registered(session, make_kernel("double", RecordingKernel())):
        sample(scoped_model(model, kernel="double", min_seq_len=10_000), flux_conditioning())
    assert len(seen) == CALLS
    name = "test_an_override_set_before_the_scope_serves_what_it_declines_and_the_status_names_it"  # what made it
    text = render(payload(session))
    assert f"model FLUX.1 (Flux): scoped; the calls it declines go to {name}, an override set before it" in text
    # counted as that override's, in the run and in the session
    assert text.count(f"{DEVICE}: 0 on the kernel, {CALLS} on {name}") == 2, text
    assert f"declined {CALLS}: {Reason.TOO_SHORT.label}" in text


def test_an_override_of_a_custom_node_is_named_by_its_maker_and_folder_never_by_its_path(session):
    """ComfyUI names a custom node's modules by their file path: KJNodes' sage attention override is
    "/.../custom_nodes/ComfyUI-KJNodes.nodes.model_optimization_nodes" +
    "PathchSageAttentionKJ.patch.<locals>.attention_override_sage"."""
    def attention_override_sage(func, *args, **kwargs):
        return func(*args, **kwargs)
    attention_override_sage.__module__ = "/home/u/ComfyUI/custom_nodes/ComfyUI-KJNodes.nodes.model_optimization_nodes"
    attention_override_sage.__qualname__ = "PathchSageAttentionKJ.patch.<locals>.attention_override_sage"
    with registered(session, make_kernel("double", RecordingKernel())):
        scoped = scoped_model(tiny_flux(), kernel="double", min_seq_len=1)
        replaced = scoped.clone()
        replaced.model_options["transformer_options"]["optimized_attention_override"] = attention_override_sage
        sample(replaced, flux_conditioning())
    text = render(payload(session))
    assert ("model FLUX.1 (Flux): replaced by PathchSageAttentionKJ.patch (ComfyUI-KJNodes): Sage Attention Scope "
            "inactive for this model") in text
    assert "custom_nodes" not in text and "<locals>" not in text


def test_an_override_that_wraps_the_scope_is_named_and_what_it_passes_on_is_counted(session):
    """As master's "Model Sparse Attention" does: it wraps whatever override was there, the Scope's."""
    with registered(session, make_kernel("double", RecordingKernel())):
        scoped = scoped_model(tiny_flux(), kernel="double", min_seq_len=1)
        below = router_of(scoped)
        wrapped = scoped.clone()

        def sparse_attention(func, *args, **kwargs):
            return below(func, *args, **kwargs)
        wrapped.model_options["transformer_options"]["optimized_attention_override"] = sparse_attention
        sample(wrapped, flux_conditioning())
    assert last_generation(session)["kernel"] == CALLS
    assert ("below test_an_override_that_wraps_the_scope_is_named_and_what_it_passes_on_is_counted, which wraps "
            "the Scope") in render(payload(session))


@pytest.mark.parametrize("order", ["scope, then TorchCompileModel", "TorchCompileModel, then scope"])
def test_comfyuis_torch_compile_in_either_order(session, order):
    from comfy_api.torch_helpers import set_torch_compile_wrapper
    torch._dynamo.reset()
    model, cond = tiny_flux(), flux_conditioning()
    plain = sample(model, cond)
    with registered(session, make_kernel("double", RecordingKernel())):
        if order.startswith("scope"):
            patched = scoped_model(model, kernel="double", min_seq_len=1).clone()
            set_torch_compile_wrapper(patched, backend="aot_eager")
        else:
            compiled = model.clone()
            set_torch_compile_wrapper(compiled, backend="aot_eager")
            patched = scoped_model(compiled, kernel="double", min_seq_len=1)
        out = sample(patched, cond)
    assert last_generation(session)["kernel"] == CALLS
    torch.testing.assert_close(out, plain, rtol=1e-4, atol=1e-4)


def test_keyword_arguments_of_newer_comfyui_pass_through_to_its_attention(session):
    """Whatever ComfyUI adds to the call reaches its own attention where the Scope declines, and never
    a kernel; an eligible call's kernel gets only what it takes."""
    received = []

    def comfy_func(q, k, v, heads, **kwargs):
        received.append(kwargs)
        return comfy_attention.attention_pytorch.__wrapped__(q, k, v, heads, **kwargs)
    kernel = RecordingKernel()
    extra = {"attn_precision": torch.float32, "a_future_argument": object(), "skip_reshape": True}
    with registered(session, make_kernel("double", kernel)):
        scoped = scoped_model(tiny_flux(), kernel="double", min_seq_len=32, first_call_check=False)
        router, options = router_of(scoped), scoped.model_options["transformer_options"]
        short, long = hnd(n=16), hnd(n=64)
        in_scope(scoped, lambda: [router(comfy_func, *qkv, 2, transformer_options=options, **extra)
                                  for qkv in (short, long)])
    [declined] = received
    assert declined["a_future_argument"] is extra["a_future_argument"] and declined["transformer_options"] is options
    assert len(kernel.calls) == 1 and last_generation(session, "cpu")["declined"] == {Reason.TOO_SHORT.value: 1}


@pytest.mark.parametrize("n, on_kernel", [(64, True), (16, False)], ids=["eligible", "declined"])
def test_containers_reach_the_kernel_without_a_copy_and_are_consumed_once(session, n, on_kernel):
    master_attention.CALLS.clear()
    kernel = RecordingKernel()
    with registered(session, make_kernel("double", kernel)):
        scoped = scoped_model(tiny_flux(), kernel="double", min_seq_len=32, first_call_check=False)
        options = scoped.model_options["transformer_options"]
        q, k, v = hnd(n=n)
        boxes = [master_attention.AttentionTensorContainer(t) for t in (q, k, v)]
        out = in_scope(scoped, lambda: master_attention.optimized_attention(
            *boxes, 2, skip_reshape=True, transformer_options=options, preferred_attention=object()))
    assert all(box.tensor is None for box in boxes)  # each taken once, by whoever ran the call
    if on_kernel:  # the kernel got the tensors themselves; ComfyUI's attention never ran
        [got] = kernel.calls
        assert all(got[name] is t for name, t in zip("qkv", (q, k, v))) and master_attention.CALLS == []
    else:  # ComfyUI's own path took them (after its wrapper's own take()), no kernel ran
        [got] = master_attention.CALLS
        assert all(a is b for a, b in zip(got, (q, k, v))) and kernel.calls == []
    torch.testing.assert_close(out, attention(scoped, q, k, v, 2, skip_reshape=True), rtol=1e-5, atol=1e-5)
