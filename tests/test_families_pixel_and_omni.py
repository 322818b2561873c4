"""HiDream-O1, PixelDiT, PiD, Z-Image pixel space, Boogu, Anima and Ideogram 4 beyond the generic per-family tests
(tests/test_families.py runs sas_harness/cases_pixel_and_omni.py's cases too): which family Status names where a
config class subclasses another family's, head sizes 72, 120 and 256 against each kernel's sizes, grouped-query calls
handed to the kernel as copies, the text masks ComfyUI drops, keeps or cannot take, and the calls that never reach the
scope. Every family here is newer than ComfyUI 0.3.75, where these tests skip, naming the class."""
from __future__ import annotations

import dataclasses

import pytest
import torch

import comfy.supported_models

from sage_attention_scope.nodes.status import payload, render
from sage_attention_scope.patches import Reason, Settings, backends, families, scope_for_family
from sas_harness import doubles
from sas_harness.doubles import RecordingKernel, make_kernel, registered
from sas_harness.families import (CASES, SAGE, TEXT, model_of, needs_class, routed_step,  # before the cases below
                                  routing_table, sample_case)
from sas_harness.cases_dit import TINY_OMNIGEN2
from sas_harness.cases_pixel_and_omni import (ANIMA_IMAGE, ANIMA_TEXT_KEYS, BOOGU_IMAGE, HIDREAM_O1_KEYS,
                                              HIDREAM_O1_QUERY, IDEOGRAM4_IMAGE, PIXEL_PATCHES, TINY_ANIMA, TINY_BOOGU,
                                              TINY_HIDREAM_O1, TINY_IDEOGRAM4, TINY_PID, TINY_PIXELDIT,
                                              TINY_Z_IMAGE_PIXEL, anima_conditioning, hidream_o1_conditioning,
                                              pid_conditioning)
from sas_harness.models import TINY_Z_IMAGE, build, text_conditioning
from sas_harness.run import last_generation
from sas_harness import z_image_control

CASE = {c.family: c for c in CASES}
TOLERANCE = dict(rtol=1e-3, atol=1e-3)
HIDREAM_O1_LAYERS = TINY_HIDREAM_O1["text_config_overrides"]["num_hidden_layers"]


_routed = routed_step  # (plain, routed, kernel double) of one step of a case, at its threshold by default


def _lengths(kernel: RecordingKernel) -> list[tuple[int, int]]:
    """(query, key) tokens of each call the kernel received (in either layout)."""
    return [(c["q"].shape[2 if c["layout"] == "HND" else 1], c["k"].shape[2 if c["layout"] == "HND" else 1])
            for c in kernel.calls]


# -- which family a subclass's config is named as -------------------------------------------------

@pytest.mark.parametrize("config_class, config, parent, message", [
    ("ZImagePixelSpace", TINY_Z_IMAGE_PIXEL, "ZImage", "Z-Image pixel space (ZImagePixelSpace)"),
    ("Boogu", TINY_BOOGU, "Omnigen2", "Boogu (Boogu)"),
    ("PiD", TINY_PID, "PixelDiTT2I", "PiD (PiD)"),
    # the parents keep their own family
    ("ZImage", TINY_Z_IMAGE, None, "Z-Image (ZImage)"),
    ("Omnigen2", TINY_OMNIGEN2, None, "Omnigen2 (Omnigen2)"),
    ("PixelDiTT2I", TINY_PIXELDIT, None, "PixelDiT (PixelDiTT2I)"),
])
def test_a_subclass_config_is_named_as_its_own_family_not_its_parents(session, config_class, config, parent, message):
    supported = needs_class(config_class)
    if parent:  # the parent's class, which another family claims, is on the config's MRO: the subclass comes first
        assert issubclass(supported, getattr(comfy.supported_models, parent))
        claimed = {cls for family in families.REGISTRY.values() for cls in family.config_classes}
        assert parent in claimed
    with registered(session, make_kernel("double", RecordingKernel())):
        _, found = scope_for_family(build(supported, config), Settings(kernel="double"), session)
    assert found.opens and found.message == message
    assert f"model {message}: scoped" in render(payload(session))


# -- head sizes 64 and 72 (PixelDiT, PiD), 120 (Boogu), 256 (Ideogram 4) ----------------------------

# family -> (head size, calls of one step at that size), at a threshold of the fewest tokens a call of theirs has
# (PixelDiT's pixel blocks: the 16 patches); Boogu's context refiner (5 text tokens) stays short.
HEAD_SIZES = {
    "PixelDiT": [(64, TINY_PIXELDIT["patch_depth"]), (72, TINY_PIXELDIT["pixel_depth"])],
    "PiD": [(64, TINY_PID["patch_depth"]), (72, TINY_PID["pixel_depth"])],
    "Boogu": [(120, TINY_BOOGU["num_refiner_layers"] + 2 * TINY_BOOGU["num_double_stream_layers"]
               + TINY_BOOGU["num_layers"])],
    "Ideogram 4": [(256, TINY_IDEOGRAM4["num_layers"])],
}
THRESHOLD = {"PixelDiT": PIXEL_PATCHES, "PiD": PIXEL_PATCHES, "Boogu": BOOGU_IMAGE,
             "Ideogram 4": TEXT + IDEOGRAM4_IMAGE}
SHORT = {"Boogu": TINY_BOOGU["num_refiner_layers"]}


@pytest.mark.parametrize("family", sorted(HEAD_SIZES))
@pytest.mark.parametrize("kernel", ["sage2_fp16_cuda", "sage1_triton", "sage3_fp4", "kitchen_int8"])
def test_head_sizes_qualify_only_where_the_kernel_declares_them(session, family, kernel):
    # SageAttention 2: 1 to 128 (padded); 1: 64, 96, 128; 3: 64, 128; comfy-kitchen's int8: 1 to 256
    case, head_dims = CASE[family], backends.REGISTRY[kernel].head_dims
    plain, routed, double = _routed(session, case, Settings(min_seq_len=THRESHOLD[family]), head_dims=head_dims)
    taken = sum(calls for size, calls in HEAD_SIZES[family] if size in head_dims)
    left = sum(calls for size, calls in HEAD_SIZES[family] if size not in head_dims)
    expected = {Reason.TOO_SHORT: SHORT[family]} if family in SHORT else {}
    expected.update({SAGE: taken} if taken else {})
    expected.update({Reason.HEAD_DIM: left} if left else {})
    assert routing_table(last_generation(session)) == expected
    assert {c["q"].shape[-1] for c in double.calls} == {size for size, _ in HEAD_SIZES[family] if size in head_dims}
    torch.testing.assert_close(routed, plain, **TOLERANCE)


# -- grouped-query attention (HiDream-O1, Boogu on ComfyUI 0.33) -----------------------------------

@pytest.mark.parametrize("family, heads, kv_heads", [
    ("HiDream-O1", TINY_HIDREAM_O1["text_config_overrides"]["num_attention_heads"],
     TINY_HIDREAM_O1["text_config_overrides"]["num_key_value_heads"]),
    ("Boogu", TINY_BOOGU["num_attention_heads"], TINY_BOOGU["num_kv_heads"]),
])
def test_grouped_query_calls_reach_the_kernel_with_k_and_v_repeated_to_the_query_heads(session, family, heads,
                                                                                       kv_heads):
    assert kv_heads < heads  # the model hands its key/value heads over grouped (enable_gqa)
    case = CASE[family]
    plain, routed, kernel = _routed(session, case)
    counts = last_generation(session)
    assert routing_table(counts) == case.per_step
    assert counts["copied"] == case.per_step[SAGE]  # every call the kernel ran got copies of k and v
    heads_axis = {"HND": 1, "NHD": 2}
    assert {(c["q"].shape[heads_axis[c["layout"]]], c["k"].shape[heads_axis[c["layout"]]]) for c in kernel.calls} == {
        (heads, heads)}
    torch.testing.assert_close(routed, plain, **TOLERANCE)


# -- HiDream-O1: the prompt's causal half, the KV cache, reference images --------------------------

@pytest.mark.parametrize("steps", [1, 2], ids=["one step", "two steps (the second from the KV cache)"])
def test_hidream_o1_offers_one_call_a_layer_the_generated_tokens_to_every_key(session, steps):
    # At a threshold of 1 any call offered would be counted: the prompt's causal calls (14 tokens) are not, as
    # they go to PyTorch SDPA itself. A fresh model runs the first forward in full and caches the prompt's keys
    # and values; the second forward feeds the generated tokens alone, the same call.
    case = CASE["HiDream-O1"]
    model = model_of(case)
    kernel = RecordingKernel()
    with registered(session, make_kernel("double", kernel)):
        scoped, _ = scope_for_family(model, Settings(kernel="double", min_seq_len=1), session)
        routed = sample_case(scoped, case, steps=steps)
    assert routing_table(last_generation(session)) == {SAGE: steps * HIDREAM_O1_LAYERS}
    assert _lengths(kernel) == [(HIDREAM_O1_QUERY, HIDREAM_O1_KEYS)] * (steps * HIDREAM_O1_LAYERS)
    plain = sample_case(model_of(case), case, steps=steps)  # the same weights, never scoped
    torch.testing.assert_close(routed, plain, **TOLERANCE)


def test_hidream_o1_reference_images_lengthen_the_calls_and_the_vision_tower_never_reaches_the_scope(session):
    # A 64² reference for a 128² image: its pixels, resized to fit 128², add 4 x 4 patches to the generated tokens;
    # its Qwen3-VL view (384² in 16-pixel patches, 24 x 24 = 576 vision-tower tokens, merged 2 x 2 into 144) joins
    # the prompt between two markers. The vision tower's calls (576 tokens) would count at a threshold of 1.
    reference = torch.rand(1, 64, 64, 3, generator=torch.Generator().manual_seed(7))
    case = dataclasses.replace(CASE["HiDream-O1"],
                               conditioning=lambda: hidream_o1_conditioning(reference_latents=[reference]))
    plain, routed, kernel = _routed(session, case, Settings(min_seq_len=1))
    assert routing_table(last_generation(session)) == {SAGE: HIDREAM_O1_LAYERS}
    assert _lengths(kernel) == [(HIDREAM_O1_QUERY + 16, HIDREAM_O1_KEYS + 16 + 144 + 2)] * HIDREAM_O1_LAYERS
    torch.testing.assert_close(routed, plain, **TOLERANCE)


# -- Anima: the LLM adapter ----------------------------------------------------------------------

def test_anima_adapter_calls_never_reach_the_scope_and_its_text_is_padded_to_512(session):
    # At a threshold of 1 the adapter's 6 blocks (12 calls over the 5 tokens) would count were they offered: they
    # call SDPA itself.
    case = CASE["Anima"]
    plain, routed, kernel = _routed(session, case, Settings(min_seq_len=1))
    blocks = TINY_ANIMA["num_blocks"]
    assert routing_table(last_generation(session)) == {SAGE: 2 * blocks}
    assert _lengths(kernel) == [(ANIMA_IMAGE, ANIMA_IMAGE), (ANIMA_IMAGE, ANIMA_TEXT_KEYS)] * blocks
    torch.testing.assert_close(routed, plain, **TOLERANCE)
    # the adapter ran: without the T5 ids the text reaches the blocks as it is (5 keys) and the step differs
    without = dataclasses.replace(case, conditioning=lambda: anima_conditioning(t5_ids=False))
    assert not torch.allclose(sample_case(model_of(without), without), plain)


# -- PiD: PixelDiT's calls -------------------------------------------------------------------------

def test_pid_makes_pixeldits_calls_its_latent_branch_attends_to_nothing(session):
    _, _, pixeldit = _routed(session, CASE["PixelDiT"], Settings(min_seq_len=1))
    plain, routed, pid = _routed(session, CASE["PiD"], Settings(min_seq_len=1))
    assert routing_table(last_generation(session)) == {SAGE: TINY_PID["patch_depth"] + TINY_PID["pixel_depth"]}
    shapes = [(TEXT + PIXEL_PATCHES, TEXT + PIXEL_PATCHES)] * TINY_PID["patch_depth"] + [
        (PIXEL_PATCHES, PIXEL_PATCHES)] * TINY_PID["pixel_depth"]
    assert _lengths(pid) == _lengths(pixeldit) == shapes
    torch.testing.assert_close(routed, plain, **TOLERANCE)
    # the latent reached the model: another latent, another step
    other = dataclasses.replace(CASE["PiD"], conditioning=lambda: pid_conditioning(lq_hw=(3, 3)))
    assert not torch.allclose(sample_case(model_of(other), other), plain)


# -- text masks ------------------------------------------------------------------------------------

PADDED = [[1, 1, 1, 0, 0]]  # a 3-token prompt padded to 5


@pytest.mark.parametrize("family", ["PixelDiT", "Z-Image pixel space"])
def test_a_text_mask_never_reaches_attention(session, family):
    # PixelDiT's blocks are handed no mask; NextDiT's patchify_and_embed drops the caption's. The step under a
    # mask with padding is the unmasked step, and routes as it.
    case = CASE[family]
    masked = dataclasses.replace(case, conditioning=lambda: text_conditioning(attention_mask=torch.tensor(PADDED)))
    plain, routed, _ = _routed(session, masked)
    counts = last_generation(session)
    assert routing_table(counts) == case.per_step and counts["masks_dropped"] == 0
    assert torch.equal(plain, sample_case(model_of(case), case))
    torch.testing.assert_close(routed, plain, **TOLERANCE)


@pytest.mark.parametrize("text_mask, route", [(PADDED, Reason.MASK), ([[1] * TEXT], SAGE)],
                         ids=["padded prompt", "unpadded prompt"])
def test_ideogram4_text_padding_becomes_a_block_diagonal_mask_kept_on_sdpa(session, text_mask, route):
    # Padded text tokens attend only to each other, every other token to all but them: the queries differ, so the
    # mask is no key padding to slice off. An all-ones mask is dropped before the model (model_base.Ideogram4).
    mask = torch.tensor(text_mask)
    case = dataclasses.replace(CASE["Ideogram 4"], conditioning=lambda: text_conditioning(
        dim=TINY_IDEOGRAM4["llm_features_dim"], attention_mask=mask))
    plain, routed, kernel = _routed(session, case)
    counts = last_generation(session)
    assert routing_table(counts) == {route: TINY_IDEOGRAM4["num_layers"]} and counts["masks_dropped"] == 0
    torch.testing.assert_close(routed, plain, **TOLERANCE)
    unmasked = sample_case(model_of(CASE["Ideogram 4"]), CASE["Ideogram 4"])
    assert torch.equal(plain, unmasked) == (route == SAGE)  # the padding mask reached attention


def test_ideogram4_block_diagonal_mask_goes_to_a_kernel_that_takes_masks(session):
    # comfy-kitchen's int8 kernel (here its CPU stand-in) takes head size 256 and SDPA's masks: the padded calls
    # run on it, handed the whole (1, 1, 21, 21) additive mask, and give SDPA's result.
    seen = []

    def int8_attention(q, k, v, *, scale=None, attn_mask=None):
        seen.append(attn_mask)
        return doubles.int8_attention(q, k, v, scale=scale, attn_mask=attn_mask)
    kitchen = doubles.kernel_double(dataclasses.replace(backends.REGISTRY["kitchen_int8"], name="double"),
                                    doubles.library(int8_attention=int8_attention,
                                                    int8_attention_is_available=doubles.int8_attention_is_available))
    mask = torch.tensor(PADDED)
    case = dataclasses.replace(CASE["Ideogram 4"], conditioning=lambda: text_conditioning(
        dim=TINY_IDEOGRAM4["llm_features_dim"], attention_mask=mask))
    model = model_of(case)
    plain = sample_case(model, case)
    with registered(session, kitchen):
        scoped, _ = scope_for_family(model, Settings(kernel="double", min_seq_len=case.min_seq_len), session)
        routed = sample_case(scoped, case)
    assert routing_table(last_generation(session)) == {SAGE: TINY_IDEOGRAM4["num_layers"]}
    tokens = TEXT + IDEOGRAM4_IMAGE
    assert [tuple(m.shape) for m in seen] == [(1, 1, tokens, tokens)] * TINY_IDEOGRAM4["num_layers"]
    torch.testing.assert_close(routed, plain, **TOLERANCE)


def test_boogu_cannot_take_a_text_mask_that_masks_with_or_without_the_node(session):
    # model_base takes num_tokens (3) from the mask, and the model builds its RoPE for 3 text tokens of the 5 it
    # is handed: ComfyUI 0.33 raises in the context refiner, scoped or not.
    case = dataclasses.replace(CASE["Boogu"], conditioning=lambda: text_conditioning(
        attention_mask=torch.tensor(PADDED)))
    model = model_of(case)
    expected = f"{3 + BOOGU_IMAGE}.*{TEXT + BOOGU_IMAGE}"  # 19 rotary positions for 21 tokens
    with pytest.raises(RuntimeError, match=expected):
        sample_case(model, case)
    with registered(session, make_kernel("double", RecordingKernel())):
        scoped, _ = scope_for_family(model, Settings(kernel="double", min_seq_len=1), session)
        with pytest.raises(RuntimeError, match=expected):
            sample_case(scoped, case)


# -- Z-Image pixel space: control blocks ---------------------------------------------------------

def test_z_image_pixel_space_control_blocks_never_reach_the_scope(session):
    needs_class("ZImagePixelSpace")
    case = CASE["Z-Image pixel space"]
    plain, routed = z_image_control.with_and_without_scope(session, model_of(case), TINY_Z_IMAGE_PIXEL,
                                                           lambda model: sample_case(model, case), 1)
    # at a threshold of 1 every offered call counts: the control blocks' (one a main layer) are not among them
    calls = TINY_Z_IMAGE_PIXEL["n_layers"] + 2 * TINY_Z_IMAGE_PIXEL["n_refiner_layers"]
    assert routing_table(last_generation(session)) == {SAGE: calls}
    torch.testing.assert_close(routed, plain, **TOLERANCE)
