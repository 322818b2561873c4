"""The image DiTs beyond the generic per-family tests (tests/test_families.py runs those over
sas_harness/cases_dit.py's cases too): FLUX.1 Kontext's reference tokens, Lumina 2's and
OmniGen2's head sizes, SD3's 4-D v, Cosmos Predict2's 512-token text, OmniGen2's reference
refiner, Lumina 2's integer caption mask, block positions, and which family Status names."""
from __future__ import annotations

import dataclasses

import pytest
import torch

import comfy.supported_models

from sage_attention_scope.nodes.status import payload, render
from sage_attention_scope.patches import Reason, Settings, backends, scope_for_family
from sas_harness.doubles import RecordingKernel, make_kernel, registered
from sas_harness.families import (CASES, FLUX_TOKENS, SAGE, TEXT, model_of, routed_step,  # before cases_dit
                                  routing_table, sample_case)
from sas_harness.cases_dit import (CHROMA_RADIANCE_CASE, FLUX_KONTEXT_CASE, IMAGE_TOKENS, KONTEXT_TOKENS, SD3_CASE,
                                   SD3_TOKENS, TINY_CHROMA, TINY_CHROMA_RADIANCE, TINY_COSMOS_PREDICT2, TINY_HIDREAM,
                                   TINY_LUMINA2, TINY_OMNIGEN2, TINY_SD3, omnigen2_conditioning)
from sas_harness.models import TINY_FLUX, TINY_Z_IMAGE, build, flux_conditioning, text_conditioning
from sas_harness.run import call_of, last_generation

CASE = {c.family: c for c in CASES}


_routed = routed_step  # (plain, routed, kernel double) of one step of a case


# -- FLUX.1 Kontext ---------------------------------------------------------------------------

def test_flux_kontext_reference_tokens_lengthen_the_joint_calls_which_reach_the_kernel(session):
    case = FLUX_KONTEXT_CASE  # the threshold lies above FLUX.1's own text + image tokens
    assert KONTEXT_TOKENS > FLUX_TOKENS
    plain, routed, kernel = _routed(session, case, Settings(min_seq_len=KONTEXT_TOKENS))
    assert routing_table(last_generation(session)) == case.per_step
    heads, head_dim = TINY_FLUX["num_heads"], TINY_FLUX["hidden_size"] // TINY_FLUX["num_heads"]
    # every joint call, double- and single-stream, holds text + image + reference tokens
    assert [tuple(c["q"].shape) for c in kernel.calls] == [(1, heads, KONTEXT_TOKENS, head_dim)] * len(kernel.calls)
    assert len(kernel.calls) == case.per_step[SAGE]
    torch.testing.assert_close(routed, plain, rtol=1e-3, atol=1e-3)
    # the reference reached the model (without it the step differs), and without it the same
    # threshold keeps FLUX.1's shorter calls on SDPA
    without = dataclasses.replace(case, conditioning=flux_conditioning)
    assert not torch.allclose(sample_case(model_of(without), without), plain)
    _routed(session, without, Settings(min_seq_len=KONTEXT_TOKENS))
    assert routing_table(last_generation(session)) == {Reason.TOO_SHORT: case.per_step[SAGE]}


# -- head sizes 96 and 120 --------------------------------------------------------------------

def _head_dims(name):
    return backends.REGISTRY[name].head_dims


@pytest.mark.parametrize("family, head_dim", [("Lumina 2", 96), ("Omnigen2", 120)])
@pytest.mark.parametrize("head_dims, takes", [
    (_head_dims("sage2_fp16_cuda"), {96, 120}),  # SageAttention 2: up to 128, padded
    (_head_dims("sage1_triton"), {96}),          # SageAttention 1: 64, 96 and 128
    (frozenset({64, 128}), set()),               # SageAttention 3's sizes
], ids=["sage2", "sage1", "64-and-128"])
def test_head_sizes_96_and_120_qualify_only_where_the_kernel_declares_them(session, family, head_dim, head_dims,
                                                                           takes):
    case = CASE[family]
    plain, routed, kernel = _routed(session, case, Settings(min_seq_len=case.min_seq_len), head_dims=head_dims)
    table = routing_table(last_generation(session))
    if head_dim in takes:
        assert table == case.per_step
        assert {c["q"].shape[-1] for c in kernel.calls} == {head_dim}
        torch.testing.assert_close(routed, plain, rtol=1e-3, atol=1e-3)
    else:  # the calls long enough to qualify are declined for their head size alone, run as without the node
        assert table == {Reason.HEAD_DIM: case.per_step[SAGE], Reason.TOO_SHORT: case.per_step[Reason.TOO_SHORT]}
        assert kernel.calls == []
        assert torch.equal(routed, plain)


# -- SD3's 4-D v ------------------------------------------------------------------------------

def _recorded_calls(model, case) -> list[tuple[tuple, dict]]:
    """The (args, kwargs) of every attention call ``case`` makes, seen through ComfyUI's own
    override hook on a clone of ``model`` (the way another node would see them)."""
    seen = []

    def record(func, *args, **kwargs):
        seen.append((args, kwargs))
        return func(*args, **kwargs)
    clone = model.clone()
    clone.model_options.setdefault("transformer_options", {})["optimized_attention_override"] = record
    sample_case(clone, case)
    return seen


def test_sd3_hands_v_in_four_dimensions_and_its_calls_reach_the_kernel(session):
    case = SD3_CASE
    model = model_of(case)
    heads, head_dim = TINY_SD3["depth"], 64  # MMDiT: depth heads of 64
    calls = _recorded_calls(model, case)
    # q and k (B, N, H*D), v (B, N, H, D): the joint calls over text + image, SD3.5 Medium's
    # image-only call in block 0 between them
    assert [tuple(t.shape for t in args[:3]) for args, _ in calls] == [
        ((1, n, heads * head_dim), (1, n, heads * head_dim), (1, n, heads, head_dim))
        for n in (SD3_TOKENS, IMAGE_TOKENS, SD3_TOKENS)]
    facts = [call_of(args, kwargs) for args, kwargs in calls]
    assert {(f.layout_problem(), f.head_dim, f.q_len) for f in facts} == {
        (None, head_dim, SD3_TOKENS), (None, head_dim, IMAGE_TOKENS)}
    assert all(f.v.data_ptr() == args[2].data_ptr() for f, (args, _) in zip(facts, calls))  # flattened: a view
    # scoped: recognised, every call on the kernel, the output that of no node within tolerance
    plain, routed, kernel = _routed(session, case, Settings(min_seq_len=case.min_seq_len))
    assert routing_table(last_generation(session)) == case.per_step == {SAGE: len(calls)}
    assert len(kernel.calls) == len(calls) and all(c["v"].shape == c["q"].shape for c in kernel.calls)
    torch.testing.assert_close(routed, plain, rtol=1e-4, atol=1e-4)


# -- the text and references of Cosmos Predict2 and OmniGen2 -------------------------------------

def test_cosmos_predict2_cross_attention_to_its_512_token_text_qualifies_at_the_default_threshold(session):
    # ComfyUI's Cosmos T5 tokenizer pads to 512 tokens; a 64x64 latent makes 1024 image tokens,
    # the default query threshold, so both calls of each block qualify at default settings.
    case = dataclasses.replace(CASE["Cosmos Predict2"], latent_hw=(1, 64, 64),
                               conditioning=lambda: text_conditioning(tokens=512))
    plain, routed, kernel = _routed(session, case, Settings())
    blocks = TINY_COSMOS_PREDICT2["num_blocks"]
    assert routing_table(last_generation(session)) == {SAGE: 2 * blocks}
    assert [(c["q"].shape[-2], c["k"].shape[-2]) for c in kernel.calls] == [(1024, 1024), (1024, 512)] * blocks
    torch.testing.assert_close(routed, plain, rtol=1e-3, atol=1e-3)


def test_omnigen2_reference_images_add_refiner_calls_and_lengthen_the_main_ones(session):
    reference = torch.randn(1, 16, 8, 8, generator=torch.Generator().manual_seed(6))
    case = dataclasses.replace(CASE["Omnigen2"], conditioning=lambda: omnigen2_conditioning(
        reference_latents=[reference]))
    plain, routed, kernel = _routed(session, case, Settings(min_seq_len=case.min_seq_len))
    refiners, layers = TINY_OMNIGEN2["num_refiner_layers"], TINY_OMNIGEN2["num_layers"]
    # noise refiner (16 image tokens), reference refiner (16 reference tokens), main layers over
    # text + reference + image; the context refiner's 5 text tokens are short
    assert routing_table(last_generation(session)) == {SAGE: 2 * refiners + layers, Reason.TOO_SHORT: refiners}
    assert [c["q"].shape[-2] for c in kernel.calls] == (
        [IMAGE_TOKENS] * refiners + [IMAGE_TOKENS] * refiners + [TEXT + 2 * IMAGE_TOKENS] * layers)
    torch.testing.assert_close(routed, plain, rtol=1e-3, atol=1e-3)


# -- Lumina 2's caption mask ------------------------------------------------------------------

def _lumina2_drops_its_caption_mask() -> bool:
    """ComfyUI 0.33's NextDiT sets the caption mask to None before its layers ("cap_mask = None  # TODO?")."""
    import inspect

    import comfy.ldm.lumina.model
    return "cap_mask = None" in inspect.getsource(comfy.ldm.lumina.model.NextDiT.patchify_and_embed)


def _comfyui_attends_with_sdpa() -> bool:
    import comfy.ldm.modules.attention as comfy_attention
    return comfy_attention.optimized_attention_masked.__name__ == "attention_pytorch"


@pytest.mark.skipif(_comfyui_attends_with_sdpa(), reason="ComfyUI's SDPA attention (the default on CUDA) raises on "
                    "Lumina 2's own int64 caption mask, with or without the node")
def test_lumina2_integer_caption_mask_keeps_the_context_refiner_on_sdpa(session):
    # A text-encoder mask with zeros reaches the context refiner as int64 (1 = keep), positional;
    # with the threshold at the text's length, only the mask keeps those calls off the kernel,
    # even a kernel that takes masks as SDPA does (boolean or additive). ComfyUI 0.33 drops the
    # caption mask before the layers: its context refiner attends over the whole text, unmasked.
    mask = torch.tensor([[1, 1, 1, 0, 0]])
    case = dataclasses.replace(CASE["Lumina 2"], conditioning=lambda: text_conditioning(attention_mask=mask))
    plain, routed, kernel = _routed(session, case, Settings(min_seq_len=TEXT), masks=True)
    refiners, layers = TINY_LUMINA2["n_refiner_layers"], TINY_LUMINA2["n_layers"]
    if _lumina2_drops_its_caption_mask():
        assert routing_table(last_generation(session)) == {SAGE: 2 * refiners + layers}
        assert sum(c["q"].shape[-2] == TEXT for c in kernel.calls) == refiners
    else:
        assert routing_table(last_generation(session)) == {SAGE: refiners + layers, Reason.MASK: refiners}
        assert TEXT not in {c["q"].shape[-2] for c in kernel.calls}
    torch.testing.assert_close(routed, plain, rtol=1e-3, atol=1e-3)


# -- block positions --------------------------------------------------------------------------

@pytest.mark.parametrize("family, positioned", [("Chroma", True), ("HiDream", False)])
def test_a_block_window_applies_where_the_model_says_which_block_calls(session, family, positioned):
    # Chroma sets block_type/index/total_blocks as FLUX.1 does; HiDream sets none: its calls run on
    # the kernel and are counted as calls the window could not place.
    case = CASE[family]
    _routed(session, case, Settings(min_seq_len=case.min_seq_len, first_blocks=1))
    counts, calls = last_generation(session), case.per_step[SAGE]
    if positioned:  # one block of each type: each the first of its type
        assert routing_table(counts) == {Reason.OUTSIDE_BLOCKS: calls} and counts["no_block_positions"] == 0
    else:
        assert routing_table(counts) == {SAGE: calls} and counts["no_block_positions"] == calls


# -- recognition and Status -------------------------------------------------------------------

def test_chroma_radiance_is_chroma_and_routes_as_its_structure_says(session):
    case = CHROMA_RADIANCE_CASE  # pixel space: 64x64 pixels in 16x16 patches, the same 16 image tokens
    plain, routed, kernel = _routed(session, case, Settings(min_seq_len=case.min_seq_len))
    assert routing_table(last_generation(session)) == case.per_step
    assert len(kernel.calls) == case.per_step[SAGE]
    torch.testing.assert_close(routed, plain, rtol=1e-3, atol=1e-3)


@pytest.mark.parametrize("config_class, config, message", [
    ("Flux", TINY_FLUX, "FLUX.1 (Flux)"),
    ("Chroma", TINY_CHROMA, "Chroma (Chroma)"),
    ("ChromaRadiance", TINY_CHROMA_RADIANCE, "Chroma (ChromaRadiance)"),
    ("Lumina2", TINY_LUMINA2, "Lumina 2 (Lumina2)"),
    ("ZImage", TINY_Z_IMAGE, "Z-Image (ZImage)"),  # a Lumina2 subclass with the same diffusion model
    ("SD3", TINY_SD3, "SD3 (SD3)"),
    ("HiDream", TINY_HIDREAM, "HiDream (HiDream)"),
    ("CosmosT2IPredict2", TINY_COSMOS_PREDICT2, "Cosmos Predict2 (CosmosT2IPredict2)"),
    ("CosmosI2VPredict2", dict(TINY_COSMOS_PREDICT2, in_channels=17), "Cosmos Predict2 (CosmosI2VPredict2)"),
    ("Omnigen2", TINY_OMNIGEN2, "Omnigen2 (Omnigen2)"),
])
def test_status_names_the_family_and_its_config_class(session, config_class, config, message):
    with registered(session, make_kernel("double", RecordingKernel())):
        _, found = scope_for_family(build(getattr(comfy.supported_models, config_class), config),
                                    Settings(kernel="double"), session)
    assert found.opens and found.message == message
    assert f"model {message}: scoped" in render(payload(session))
