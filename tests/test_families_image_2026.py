"""The 2026 image DiTs beyond the generic per-family tests (tests/test_families.py runs those over
sas_harness/cases_image_2026.py's cases): which calls reach the Scope (ERNIE-Image's none), Krea 2's
text-fusion and joint calls, its reference images and a mask an attn1_patch adds, LongCat-Image's 512
padded text tokens and regional mask, JoyImage's reference images, Lens's and Mage-Flow's text masks,
head sizes, block positions, and which family Status names. Every family here is newer than ComfyUI
0.3.75: on it each test skips, naming the class it lacks."""
from __future__ import annotations

import dataclasses

import pytest
import torch

from sage_attention_scope.nodes.status import payload, render
from sage_attention_scope.patches import Reason, Settings, scope_for_family
from sas_harness.doubles import RecordingKernel, make_kernel, registered
from sas_harness.families import (CASES, SAGE, TEXT, model_of, routed_step,  # before cases_image_2026
                                  routing_table, sample_case)
from sas_harness.cases_image_2026 import (ERNIE_CASE, IMAGE_TOKENS, JOINT_TOKENS, KREA2_TEXT_FUSION_CALLS,
                                          TINY_ERNIE_IMAGE, TINY_KREA2, TINY_LENS, TINY_MAGE_FLOW,
                                          krea2_conditioning, lens_conditioning)
from sas_harness.models import text_conditioning
from sas_harness.run import last_generation

CASE = {c.family: c for c in CASES}
OPENING = ("Krea 2", "LongCat-Image", "JoyImage", "Lens", "Mage-Flow")
HEAD_SIZE = {"Krea 2": 128, "LongCat-Image": 128, "JoyImage": 128, "Lens": 64, "Mage-Flow": 128}
TOLERANCE = dict(rtol=1e-3, atol=1e-3)


def _routed(session, case, settings: Settings, **declared):
    """(plain output, scoped output, the kernel double, the counters) of one step of ``case``."""
    return (*routed_step(session, case, settings, **declared), last_generation(session))


def _recorded_calls(model, case) -> list[tuple[tuple, dict]]:
    """The (args, kwargs) of every attention call of one step that reaches an override, seen through
    ComfyUI's own hook on a clone of ``model`` (the way another node would see them); the
    transformer_options as they were at the call (the model goes on changing its own)."""
    seen = []

    def record(func, *args, **kwargs):
        seen.append((args, dict(kwargs, transformer_options=dict(kwargs.get("transformer_options") or {}))))
        return func(*args, **kwargs)
    clone = model.clone()
    clone.model_options.setdefault("transformer_options", {})["optimized_attention_override"] = record
    sample_case(clone, case)
    return seen


def _lengths(kernel: RecordingKernel, axis: str) -> list[int]:
    """The query ("q") or key ("k") length of each call the kernel received."""
    return [c[axis].shape[2 if c["layout"] == "HND" else 1] for c in kernel.calls]


# -- which calls reach the Scope --------------------------------------------------------------

@pytest.mark.parametrize("family", OPENING)
def test_every_attention_call_reaches_the_scope_and_none_opts_out_of_low_precision(session, family):
    case = CASE[family]
    calls = _recorded_calls(model_of(case), case)
    assert len(calls) == sum(case.per_step.values())  # each call of the table, none made around the hook
    assert [kwargs.get("low_precision_attention", True) for _, kwargs in calls] == [True] * len(calls)


def test_ernie_image_attention_never_reaches_the_scope_so_it_passes_through_by_name(session, monkeypatch,
                                                                                      caplog_sas):
    model = model_of(ERNIE_CASE)
    import comfy.ldm.ernie.model as ernie
    made, attention = [], ernie.optimized_attention  # ComfyUI's own attention, counted where the model calls it

    def counted(*args, **kwargs):
        made.append(kwargs)
        return attention(*args, **kwargs)
    monkeypatch.setattr(ernie, "optimized_attention", counted)
    assert _recorded_calls(model, ERNIE_CASE) == []  # no call offered to an override
    assert len(made) == TINY_ERNIE_IMAGE["num_layers"] and all("transformer_options" not in k for k in made)
    plain = sample_case(model, ERNIE_CASE)
    with registered(session, make_kernel("double", RecordingKernel())):
        passed, found = scope_for_family(model, Settings(kernel="double", min_seq_len=1), session)
    assert passed is model and not found.opens and found.family.name == "ERNIE-Image"
    assert found.message.startswith("ERNIE-Image is not supported: its attention calls ComfyUI's optimized_attention "
                                    "without the model's transformer_options")
    assert torch.equal(sample_case(passed, ERNIE_CASE), plain)
    said = [r.getMessage() for r in caplog_sas.records if "through unchanged" in r.getMessage()]
    assert len(said) == 1 and "ERNIE-Image is not supported" in said[0]
    assert "model ERNIE-Image (ErnieImage): passed through unchanged: ERNIE-Image is not supported" in render(
        payload(session))


# -- Krea 2 -------------------------------------------------------------------------------------

def test_krea2_text_fusion_calls_are_short_and_its_joint_calls_reach_the_kernel(session):
    case = CASE["Krea 2"]
    heads, head = TINY_KREA2["heads"], TINY_KREA2["features"] // TINY_KREA2["heads"]
    text_heads, layers = TINY_KREA2["txtheads"], TINY_KREA2["txtlayers"]
    calls = _recorded_calls(model_of(case), case)
    # (B, H, N, D): two layerwise calls, a text token's tapped layers attending to one another (the batch is
    # the tokens), two refiner calls over the text, then one joint call per block (its 1 key/value head
    # repeated to the query's 2)
    shapes = [tuple(tuple(t.shape) for t in args[:3]) for args, _ in calls]
    assert shapes == ([((TEXT, text_heads, layers, head),) * 3] * 2 + [((1, text_heads, TEXT, head),) * 3] * 2
                      + [((1, heads, JOINT_TOKENS, head),) * 3] * TINY_KREA2["layers"])
    assert all(kwargs.get("skip_reshape") and kwargs.get("mask") is None for _, kwargs in calls)
    # only the blocks say where they are
    assert [(k["transformer_options"].get("block_type"), k["transformer_options"].get("block_index"))
            for _, k in calls] == [(None, None)] * KREA2_TEXT_FUSION_CALLS + [("single", 0), ("single", 1)]
    plain, routed, kernel, counts = _routed(session, case, Settings(min_seq_len=case.min_seq_len))
    assert routing_table(counts) == case.per_step
    assert _lengths(kernel, "q") == _lengths(kernel, "k") == [JOINT_TOKENS] * TINY_KREA2["layers"]
    torch.testing.assert_close(routed, plain, **TOLERANCE)


def test_krea2_at_default_settings_runs_its_joint_calls_over_a_1024_token_image_on_the_kernel(session):
    case = dataclasses.replace(CASE["Krea 2"], latent_hw=(1, 64, 64))  # 32 x 32 patches: 1024 image tokens
    plain, routed, kernel, counts = _routed(session, case, Settings())
    # the automatic floor (a query of 1024, keys of 512) passes the joint calls, not the 5-token text's
    assert routing_table(counts) == {SAGE: TINY_KREA2["layers"], Reason.TOO_SHORT: KREA2_TEXT_FUSION_CALLS}
    assert _lengths(kernel, "q") == [TEXT + 1024] * TINY_KREA2["layers"]
    torch.testing.assert_close(routed, plain, **TOLERANCE)


REFERENCE = torch.randn(1, 16, 1, 8, 8, generator=torch.Generator().manual_seed(6))  # a reference's latent


@pytest.mark.parametrize("method, lengthened", [("index", True), ("index_timestep_zero", True), (None, False)])
def test_krea2_reference_images_lengthen_the_joint_calls_only_with_a_reference_method(session, method, lengthened):
    # The model appends a reference's 16 tokens to the image's only where a reference_latents_method
    # is given (ComfyUI's Krea 2 has no default); the threshold lies above the calls without them.
    extra = dict(reference_latents=[REFERENCE], **({"reference_latents_method": method} if method else {}))
    case = dataclasses.replace(CASE["Krea 2"], conditioning=lambda: krea2_conditioning(**extra),
                               min_seq_len=JOINT_TOKENS + IMAGE_TOKENS)
    plain, routed, kernel, counts = _routed(session, case, Settings(min_seq_len=case.min_seq_len))
    blocks, fusion = TINY_KREA2["layers"], KREA2_TEXT_FUSION_CALLS
    without = dataclasses.replace(case, conditioning=krea2_conditioning)
    unreferenced = sample_case(model_of(without), without)
    if lengthened:
        assert routing_table(counts) == {SAGE: blocks, Reason.TOO_SHORT: fusion}
        assert _lengths(kernel, "q") == [JOINT_TOKENS + IMAGE_TOKENS] * blocks
        assert not torch.allclose(unreferenced, plain)  # the reference was read
    else:  # ignored: the step that of no reference
        assert routing_table(counts) == {Reason.TOO_SHORT: blocks + fusion} and kernel.calls == []
        assert torch.equal(unreferenced, plain)
    torch.testing.assert_close(routed, plain, **TOLERANCE)


def _krea2_mask(masked, value):
    """An additive mask over the joint calls' keys, the same for every query, as a regional-prompting
    node's attn1_patch returns it: ``value`` on the keys ``masked``."""
    mask = torch.zeros(1, 1, 1, JOINT_TOKENS)
    mask[..., masked] = value
    return mask


@pytest.mark.parametrize("mask, sliced", [
    (_krea2_mask(slice(-3, None), float("-inf")), 3),  # the last 3 (image) keys for every query: sliced off
    (_krea2_mask(slice(2, 3), -1.0), None),             # a bias on one text key: a mask
    (_krea2_mask(slice(0, 0), 0.0), 0),                 # all zero: dropped
], ids=["trailing keys", "bias", "all zero"])
def test_krea2_a_mask_an_attn1_patch_adds_is_sliced_dropped_or_kept_on_sdpa(session, mask, sliced):
    case = CASE["Krea 2"]
    model = model_of(case)
    # The patch runs where the model says which block calls: the joint calls, not the text fusion's.
    model.set_model_attn1_patch(lambda q, k, v, **_: {"attn_mask": mask.to(q)})
    plain = sample_case(model, case)
    kernel = RecordingKernel()
    with registered(session, make_kernel("double", kernel)):
        scoped, _ = scope_for_family(model, Settings(kernel="double", min_seq_len=case.min_seq_len), session)
        routed = sample_case(scoped, case)
    counts, blocks = last_generation(session), TINY_KREA2["layers"]
    if sliced is None:
        assert routing_table(counts) == {Reason.MASK: blocks, Reason.TOO_SHORT: KREA2_TEXT_FUSION_CALLS}
        assert counts["masks_dropped"] == 0 and kernel.calls == []
    else:
        assert routing_table(counts) == case.per_step and counts["masks_dropped"] == blocks
        assert _lengths(kernel, "k") == [JOINT_TOKENS - sliced] * blocks
    torch.testing.assert_close(routed, plain, **TOLERANCE)


# -- LongCat-Image --------------------------------------------------------------------------------

def test_longcat_image_text_padding_mask_never_reaches_its_blocks(session):
    # Its tokenizer pads the prompt (to 512); the encoder's mask of that padding is dropped by the model
    # (a mask reaches FLUX.1's blocks only with attention_mask_img_shape): every text key is attended.
    case = dataclasses.replace(CASE["LongCat-Image"], conditioning=lambda: text_conditioning(
        attention_mask=torch.tensor([[1, 1, 1, 0, 0]])))
    plain, routed, kernel, counts = _routed(session, case, Settings(min_seq_len=case.min_seq_len))
    assert routing_table(counts) == case.per_step and counts["masks_dropped"] == 0
    assert _lengths(kernel, "k") == [JOINT_TOKENS] * case.per_step[SAGE]
    torch.testing.assert_close(routed, plain, **TOLERANCE)


@pytest.mark.parametrize("tokens, qualifies", [(TEXT, False), (512, True)], ids=["5 text tokens", "512"])
def test_longcat_image_512_padded_text_tokens_lift_its_joint_calls_over_the_default_floor(session, tokens, qualifies):
    # A 48 x 48 latent is 576 image tokens: under the 1024-token query floor alone, over it with the
    # 512 text tokens the tokenizer pads every prompt to.
    case = dataclasses.replace(CASE["LongCat-Image"], latent_hw=(48, 48),
                               conditioning=lambda: text_conditioning(tokens=tokens))
    plain, routed, kernel, counts = _routed(session, case, Settings())
    calls = case.per_step[SAGE]
    assert routing_table(counts) == ({SAGE: calls} if qualifies else {Reason.TOO_SHORT: calls})
    assert _lengths(kernel, "q") == ([512 + 576] * calls if qualifies else [])
    torch.testing.assert_close(routed, plain, **TOLERANCE)


@pytest.mark.parametrize("fill, expected, dropped", [
    (0.0, {SAGE: 2}, 2),              # an all-zero regional mask masks nothing: dropped
    (-10000.0, {Reason.MASK: 2}, 0),  # masks the last key for the text's queries alone: not key padding
])
def test_longcat_image_regional_masks_stay_on_sdpa_and_noop_ones_are_dropped(session, fill, expected, dropped):
    mask = torch.zeros(1, JOINT_TOKENS, JOINT_TOKENS)
    mask[:, :TEXT, -1] = fill  # the text rows only: not the same for every query
    case = dataclasses.replace(CASE["LongCat-Image"], conditioning=lambda: text_conditioning(
        attention_mask=mask, attention_mask_img_shape=(4, 4)))  # 4 x 4 image tokens: kept as it is
    plain, routed, _, counts = _routed(session, case, Settings(min_seq_len=case.min_seq_len))
    assert routing_table(counts) == expected and counts["masks_dropped"] == dropped
    torch.testing.assert_close(routed, plain, **TOLERANCE)


# -- JoyImage -------------------------------------------------------------------------------------

def test_joyimage_reference_images_lengthen_the_joint_calls(session):
    # Each reference image's tokens join the image's in every joint call (edit); the threshold lies
    # above the calls without one.
    threshold = JOINT_TOKENS + IMAGE_TOKENS
    case = dataclasses.replace(CASE["JoyImage"], min_seq_len=threshold,
                               conditioning=lambda: text_conditioning(reference_latents=[REFERENCE]))
    plain, routed, kernel, counts = _routed(session, case, Settings(min_seq_len=threshold))
    assert routing_table(counts) == {SAGE: CASE["JoyImage"].per_step[SAGE]}
    assert _lengths(kernel, "q") == [threshold] * len(kernel.calls)
    torch.testing.assert_close(routed, plain, **TOLERANCE)
    without = dataclasses.replace(case, conditioning=text_conditioning)
    _routed(session, without, Settings(min_seq_len=threshold))
    assert routing_table(last_generation(session)) == {Reason.TOO_SHORT: CASE["JoyImage"].per_step[SAGE]}


# -- the text masks of Lens and Mage-Flow -------------------------------------------------------------

@pytest.mark.parametrize("text_mask, left_out, copied", [
    ([1, 1, 1, 1, 1], 0, False),  # one prompt: masks nothing, dropped
    ([1, 1, 1, 0, 0], 2, False),  # padded: the text comes last, so its 2 padded keys are the last keys: sliced
    ([1, 0, 1, 1, 1], 1, True),   # a hole inside the text, the same for every query: the other keys gathered
], ids=["unpadded", "padded", "hole"])
def test_lens_text_mask_is_dropped_or_its_masked_keys_left_out(session, text_mask, left_out, copied):
    case = dataclasses.replace(CASE["Lens"], conditioning=lambda: lens_conditioning(torch.tensor([text_mask])))
    plain, routed, kernel, counts = _routed(session, case, Settings(min_seq_len=case.min_seq_len))
    blocks = TINY_LENS["num_layers"]
    assert routing_table(counts) == {SAGE: blocks} and counts["masks_dropped"] == blocks
    assert _lengths(kernel, "k") == [JOINT_TOKENS - left_out] * blocks and counts["copied"] == copied * blocks
    torch.testing.assert_close(routed, plain, **TOLERANCE)


def test_lens_empty_negative_prompt_leaves_the_image_tokens_alone(session):
    # An empty prompt encodes to no text tokens at all: each call is the 16 image tokens, its mask all zero.
    case = dataclasses.replace(CASE["Lens"], min_seq_len=IMAGE_TOKENS, conditioning=lambda: text_conditioning(
        tokens=0, dim=TINY_LENS["enc_hidden_dim"] * 2, attention_mask=torch.zeros(1, 0, dtype=torch.long)))
    plain, routed, kernel, counts = _routed(session, case, Settings(min_seq_len=IMAGE_TOKENS))
    blocks = TINY_LENS["num_layers"]
    assert routing_table(counts) == {SAGE: blocks} and counts["masks_dropped"] == blocks
    assert _lengths(kernel, "q") == _lengths(kernel, "k") == [IMAGE_TOKENS] * blocks
    torch.testing.assert_close(routed, plain, **TOLERANCE)


@pytest.mark.parametrize("text_mask, copied", [
    ([1, 1, 1, 1, 1], False),  # all zero: dropped
    ([1, 1, 1, 0, 0], True),   # padded keys before the image's, masked for every query: the other keys gathered
], ids=["unpadded", "padded"])
def test_mage_flow_text_mask_is_dropped_or_its_masked_keys_left_out(session, text_mask, copied):
    case = dataclasses.replace(CASE["Mage-Flow"], conditioning=lambda: text_conditioning(
        attention_mask=torch.tensor([text_mask])))
    plain, routed, _, counts = _routed(session, case, Settings(min_seq_len=case.min_seq_len))
    blocks = TINY_MAGE_FLOW["num_layers"]
    assert routing_table(counts) == {SAGE: blocks} and counts["masks_dropped"] == blocks
    assert counts["copied"] == copied * blocks
    torch.testing.assert_close(routed, plain, **TOLERANCE)


# -- head sizes and block positions ---------------------------------------------------------------

@pytest.mark.parametrize("family", OPENING)
@pytest.mark.parametrize("takes", [True, False], ids=["declared", "not declared"])
def test_head_size_qualifies_only_where_the_kernel_declares_it(session, family, takes):
    case, head = CASE[family], HEAD_SIZE[family]
    declared = frozenset({64, 128}) if takes else frozenset({64, 128}) - {head}  # SageAttention 3's sizes, or less
    plain, routed, kernel, counts = _routed(session, case, Settings(min_seq_len=case.min_seq_len),
                                            head_dims=declared)
    if takes:
        assert routing_table(counts) == case.per_step and {c["q"].shape[-1] for c in kernel.calls} == {head}
        torch.testing.assert_close(routed, plain, **TOLERANCE)
    else:  # declined for the head size alone, the short calls still short: the output that of no node
        short = {r: n for r, n in case.per_step.items() if r != SAGE}
        assert routing_table(counts) == {Reason.HEAD_DIM: case.per_step[SAGE], **short}
        assert kernel.calls == [] and torch.equal(routed, plain)


@pytest.mark.parametrize("family, expected, unplaced", [
    # 2 single blocks; the 4 text-fusion calls (short) say no block: counted as calls the window cannot place
    ("Krea 2", {Reason.OUTSIDE_BLOCKS: 1, SAGE: 1, Reason.TOO_SHORT: KREA2_TEXT_FUSION_CALLS}, KREA2_TEXT_FUSION_CALLS),
    ("LongCat-Image", {Reason.OUTSIDE_BLOCKS: 2}, 0),  # one double and one single block: each the first of its type
    ("JoyImage", {Reason.OUTSIDE_BLOCKS: 1, SAGE: 1}, 0),
    ("Lens", {Reason.OUTSIDE_BLOCKS: 1, SAGE: 1}, 0),
    ("Mage-Flow", {Reason.OUTSIDE_BLOCKS: 1, SAGE: 1}, 0),
])
def test_a_block_window_keeps_each_familys_first_block_on_sdpa(session, family, expected, unplaced):
    case = CASE[family]
    _, _, _, counts = _routed(session, case, Settings(min_seq_len=case.min_seq_len, first_blocks=1))
    assert routing_table(counts) == expected and counts["no_block_positions"] == unplaced


# -- recognition and Status -----------------------------------------------------------------------

@pytest.mark.parametrize("family, message", [
    ("Krea 2", "Krea 2 (Krea2)"),
    ("LongCat-Image", "LongCat-Image (LongCatImage)"),  # FLUX.1's diffusion model, its own config class
    ("JoyImage", "JoyImage (JoyImage)"),
    ("Lens", "Lens (Lens)"),
    ("Mage-Flow", "Mage-Flow (MageFlow)"),
])
def test_status_names_the_family_and_its_config_class(session, family, message):
    with registered(session, make_kernel("double", RecordingKernel())):
        _, found = scope_for_family(model_of(CASE[family]), Settings(kernel="double"), session)
    assert found.opens and found.message == message
    assert f"model {message}: scoped" in render(payload(session))
