"""The scope under torch.compile: the kernel is one registered custom op, so a scoped block
compiles as one graph and the op still routes, checks, counts and falls back at run time."""
from __future__ import annotations

import torch

from sage_attention_scope.patches import Reason, Settings, apply_scope, router_of
from sage_attention_scope.patches.compiled import OP
from sas_doubles import RecordingKernel, make_kernel, raising, registered
import comfy.supported_models

from sas_models import TINY_FLUX, build, flux_conditioning, sample, tiny_flux
from sas_scope import in_scope, last_generation as _last_generation

CPU = torch.device("cpu")  # the block tests run on the CPU wherever they are; ComfyUI's sampler test does not


def cpu_flux():
    return build(comfy.supported_models.Flux, TINY_FLUX, device=CPU)


def last_generation(device="cpu"):
    return _last_generation(device)

TOKENS = 24


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


def test_the_kernel_is_a_registered_custom_op():
    namespace, name = OP.split("::")
    assert hasattr(getattr(torch.ops, namespace), name)


def test_a_scoped_block_compiles_as_one_graph_and_matches_eager():
    torch._dynamo.reset()
    kernel = RecordingKernel()
    with registered(make_kernel("double", kernel)):
        scoped = apply_scope(cpu_flux(), Settings(kernel="double", min_seq_len=TOKENS))
        eager, traced = _compiled_and_eager(scoped)  # fullgraph=True raises on any graph break
    torch.testing.assert_close(traced, eager, rtol=1e-5, atol=1e-5)
    assert len(kernel.calls) == 2, last_generation()  # eager, then the op at run time
    assert last_generation()["sage"] == 1


def test_inside_the_op_a_failing_kernel_still_falls_back_and_is_counted():
    torch._dynamo.reset()
    failing = raising(lambda: RuntimeError("CUDA error: an illegal memory access"))
    with registered(make_kernel("double", RecordingKernel(failing))):
        scoped = apply_scope(cpu_flux(), Settings(kernel="double", min_seq_len=TOKENS, first_call_check=False))
        eager, traced = _compiled_and_eager(scoped)
    torch.testing.assert_close(traced, eager, rtol=1e-5, atol=1e-5)
    assert last_generation()["faults"] == {"other": 1} and last_generation()["sdpa"] == {
        Reason.KERNEL_FAULT.value: 1}


def test_calls_the_rules_keep_on_sdpa_are_compiled_as_comfyuis_attention():
    torch._dynamo.reset()
    kernel = RecordingKernel()
    with registered(make_kernel("double", kernel)):
        scoped = apply_scope(cpu_flux(), Settings(kernel="double", min_seq_len=TOKENS + 1))
        eager, traced = _compiled_and_eager(scoped, fullgraph=False)  # ComfyUI's CPU attention may break
    assert torch.equal(traced, eager) or torch.allclose(traced, eager, atol=1e-6)
    assert kernel.calls == []


def test_comfyuis_torch_compile_wrapper_after_the_scope_samples():
    from comfy_api.torch_helpers import set_torch_compile_wrapper
    torch._dynamo.reset()
    model, cond = tiny_flux(), flux_conditioning()
    plain = sample(model, cond, steps=2)
    kernel = RecordingKernel()
    with registered(make_kernel("double", kernel)):
        scoped = apply_scope(model, Settings(kernel="double", min_seq_len=1))
        compiled = scoped.clone()
        set_torch_compile_wrapper(compiled, backend="aot_eager")
        out = sample(compiled, cond, steps=2)
    torch.testing.assert_close(out, plain, rtol=1e-4, atol=1e-4)
    assert router_of(compiled) is router_of(scoped)
    assert len(kernel.calls) == 4 and _last_generation()["sage"] == 4
