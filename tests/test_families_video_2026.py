"""Kandinsky 5, CogVideoX, SeedVR2 and MiniMax H3 beyond the generic per-family tests: what each joint
call covers, the I2V / inpainting / keyframe inputs through their own conditioning, the text mask that
never reaches Kandinsky's attention, head sizes a kernel does not take, SeedVR2's calls that cannot
reach the scope (declined by name), MiniMax H3's refiner that never does, and which family the status
names. All of them need a ComfyUI newer than 0.3.75: on 0.3.75 each test skips, naming the class."""
from __future__ import annotations

import dataclasses

import pytest
import torch

import comfy.supported_models

from sage_attention_scope.nodes.status import payload, render
from sage_attention_scope.patches import Reason, Settings, families, scope_for_family
from sage_attention_scope.patches.override_hooks import OVERRIDE_KEY
# sas_harness.families first: it imports the case modules, which build on it
from sas_harness.families import CASES, SAGE, TEXT, Case, model_of, needs_class, routing_table, sample_case
from sas_harness.cases_video_2026 import (COG_15_JOINT, COG_JOINT, COG_TEXT, K5_LATENT, K5_TOKENS,
                                          MINIMAX_H3_CASE, MINIMAX_JOINT, MINIMAX_LATENT, TINY_COGVIDEOX,
                                          TINY_COGVIDEOX_I2V, TINY_COGVIDEOX_INPAINT, TINY_KANDINSKY5,
                                          TINY_KANDINSKY5_IMAGE, TINY_MINIMAX_H3, cogvideox_conditioning,
                                          kandinsky5_conditioning, kandinsky5_table, minimax_h3_rope)
from sas_harness.doubles import RecordingKernel, make_kernel, registered
from sas_harness.models import build, sample, text_conditioning
from sas_harness.run import last_generation

TOLERANCE = dict(rtol=1e-3, atol=1e-3)


def _case(config_class) -> Case:
    return next(c for c in CASES if c.config_class == config_class)


def _keys(kernel: RecordingKernel) -> list[int]:
    """The key length of each call the kernel received."""
    return [c["k"].shape[2 if c["layout"] == "HND" else 1] for c in kernel.calls]


def _routed(session, model, case, min_seq_len=None, **kernel_options):
    """(plain output, scoped output, the kernel double, the counters) of one step of ``case`` on ``model``."""
    plain = sample_case(model, case)
    kernel = RecordingKernel()
    with registered(session, make_kernel("double", kernel, **kernel_options)):
        settings = Settings(kernel="double", min_seq_len=case.min_seq_len if min_seq_len is None else min_seq_len)
        scoped, _ = scope_for_family(model, settings, session)
        routed = sample_case(scoped, case)
    return plain, routed, kernel, last_generation(session)


# -- Kandinsky 5 ------------------------------------------------------------------------------------

def _kandinsky5_i2v_conditioning():
    """What Kandinsky5ImageToVideo adds for a start image: its latent replaces the first latent frame
    (time_dim_replace) and concat_mask marks that frame as given (0), the others as generated (1)."""
    mask = torch.ones(1, 1, *K5_LATENT)
    mask[:, :, 0] = 0.0
    start = torch.randn(1, 16, 1, *K5_LATENT[1:], generator=torch.Generator().manual_seed(6))
    return kandinsky5_conditioning(time_dim_replace=start, concat_mask=mask)


def test_kandinsky5_i2v_start_image_routes_as_t2v(session):
    """The start image changes the latent's first frame and the mask channel, not the tokens: the same
    calls as T2V (text blocks and cross-attention short, visual self-attention on the kernel)."""
    t2v = _case("Kandinsky5")
    i2v = dataclasses.replace(t2v, conditioning=_kandinsky5_i2v_conditioning)
    model = model_of(i2v)
    assert not torch.allclose(sample_case(model, i2v), sample_case(model, t2v))  # the start image took effect
    plain, routed, kernel, counts = _routed(session, model, i2v)
    assert routing_table(counts) == kandinsky5_table(TINY_KANDINSKY5)
    assert _keys(kernel) == [K5_TOKENS] * TINY_KANDINSKY5["num_visual_blocks"]
    torch.testing.assert_close(routed, plain, **TOLERANCE)


def test_kandinsky5_text_mask_never_reaches_attention(session):
    """ComfyUI hands Kandinsky 5 the text encoder's attention_mask as a model input the model ignores:
    a prompt of 3 tokens padded to 5 attends over all 5 keys, nothing masked, nothing sliced. At a
    threshold of 1 every call runs on the kernel, the prompt's 5 keys in each text and cross call."""
    case = dataclasses.replace(_case("Kandinsky5"), conditioning=lambda: kandinsky5_conditioning(
        attention_mask=torch.tensor([[1, 1, 1, 0, 0]])))
    plain, routed, kernel, counts = _routed(session, model_of(case), case, min_seq_len=1)
    text, visual = TINY_KANDINSKY5["num_text_blocks"], TINY_KANDINSKY5["num_visual_blocks"]
    assert routing_table(counts) == {SAGE: text + 2 * visual}
    assert counts["masks_dropped"] == 0
    assert _keys(kernel) == [TEXT] * text + [K5_TOKENS, TEXT] * visual  # text blocks, then self, cross a block
    torch.testing.assert_close(routed, plain, **TOLERANCE)


@pytest.mark.parametrize("config_class, head_dims, route", [
    ("Kandinsky5", {128}, Reason.HEAD_DIM),        # Video Lite: head size 64
    ("Kandinsky5", {64, 128}, SAGE),
    ("Kandinsky5Image", {128}, SAGE),              # Image Lite (and Video Pro): 128
    ("Kandinsky5Image", {64}, Reason.HEAD_DIM),
    ("CogVideoX_T2V", {128}, Reason.HEAD_DIM),     # CogVideoX: 64 at every size
    ("CogVideoX_T2V", {64}, SAGE),
])
def test_head_sizes_a_kernel_does_not_take_stay_on_sdpa(session, config_class, head_dims, route):
    """A kernel declared for ``head_dims`` only: the calls eligible at the case's threshold go to it
    where their head size is one of them, else stay on SDPA (``head_dim``); the short ones stay short."""
    case = _case(config_class)
    plain, routed, kernel, counts = _routed(session, model_of(case), case, head_dims=head_dims)
    expected = {(route if r == SAGE else r): n for r, n in case.per_step.items()}
    assert routing_table(counts) == expected
    assert len(kernel.calls) == (case.per_step[SAGE] if route == SAGE else 0)
    torch.testing.assert_close(routed, plain, **TOLERANCE)


# -- CogVideoX --------------------------------------------------------------------------------------

@pytest.mark.parametrize("config_class, joint", [
    ("CogVideoX_T2V", COG_JOINT), ("CogVideoX_I2V", COG_JOINT), ("CogVideoX_Inpaint", COG_15_JOINT),
])
def test_cogvideox_joint_call_covers_the_padded_text_and_the_video(session, config_class, joint):
    """Each block's one call is over the 226 text tokens (the prompt and T5's padding, attended as
    trained: no mask to slice it) followed by the video tokens, as queries and as keys."""
    case = _case(config_class)
    plain, routed, kernel, counts = _routed(session, model_of(case), case)
    assert routing_table(counts) == case.per_step and counts["masks_dropped"] == 0
    assert _keys(kernel) == [joint] * case.per_step[SAGE]
    assert all(c["q"].shape == c["k"].shape for c in kernel.calls)  # self-attention over the joint sequence
    torch.testing.assert_close(routed, plain, **TOLERANCE)


@pytest.mark.parametrize("config_class", ["CogVideoX_I2V", "CogVideoX_Inpaint"])
def test_cogvideox_image_and_inpainting_latents_go_in_through_their_conditioning(config_class):
    """The cases' concat_latent_image reaches the model (concat_cond): the output differs from the
    zeros concat_cond uses without one, so the I2V and Inpaint cases are not T2V in disguise."""
    case = _case(config_class)
    model = model_of(case)
    without = dataclasses.replace(case, conditioning=cogvideox_conditioning)
    assert not torch.allclose(sample_case(model, case), sample_case(model, without))


def test_cogvideox_15_i2v_with_its_ofs_embedding_routes_one_joint_call_a_block(session):
    """CogVideoX 1.5 I2V: 1.5's patch of 2 frames (two latent frames, one token row) and the OFS
    embedding (ofs 2.0 by default) beside the time embedding; the same single joint call a block."""
    needs_class("CogVideoX_I2V")
    config = dict(TINY_COGVIDEOX, in_channels=32, patch_size_t=2, ofs_embed_dim=TINY_COGVIDEOX["time_embed_dim"])
    case = dataclasses.replace(_case("CogVideoX_I2V"), unet_config=config, min_seq_len=COG_15_JOINT)
    plain, routed, kernel, counts = _routed(session, model_of(case), case)
    assert routing_table(counts) == {SAGE: config["num_layers"]}
    assert _keys(kernel) == [COG_15_JOINT] * config["num_layers"]
    torch.testing.assert_close(routed, plain, **TOLERANCE)


# -- SeedVR2: declined by name ------------------------------------------------------------------------

# model_detection's SeedVR2 3B config, shrunk: head size 128 (2 heads), two blocks (both with separate
# video and text weights, as the 3B's first 10), the text width (5120) shrunk to 32.
TINY_SEEDVR2 = dict(image_model="seedvr2", vid_dim=256, heads=2, head_dim=128, num_layers=2, norm_eps=1e-5,
                    mlp_type="swiglu", vid_out_norm=True, txt_in_dim=32)
SEEDVR2_LATENT = (1, 16, 16)  # one frame (an image to upscale): 8 x 8 tokens, one window


def _seedvr2_conditioning():
    """What SeedVR2Conditioning hands the sampler: the 58-token positive text the checkpoint stores,
    and the low-resolution input's latent with a ones mask channel (``condition``)."""
    g = torch.Generator().manual_seed(7)
    condition = torch.cat([torch.randn(1, 16, *SEEDVR2_LATENT, generator=g), torch.ones(1, 1, *SEEDVR2_LATENT)], 1)
    return text_conditioning(tokens=58, dim=TINY_SEEDVR2["txt_in_dim"], condition=condition)


def _seedvr2():
    needs_class("SeedVR2")
    return build(comfy.supported_models.SeedVR2, TINY_SEEDVR2)


def test_seedvr2_is_declined_by_name_and_passes_through_unchanged(session):
    model = _seedvr2()
    found = families.recognise(model)
    assert found.family is families.REGISTRY["SeedVR2"] and not found.opens
    assert found.message == f"SeedVR2 is not supported: {found.family.why_not}"
    plain = sample(model, _seedvr2_conditioning(), latent_hw=SEEDVR2_LATENT)
    kernel = RecordingKernel()
    with registered(session, make_kernel("double", kernel)):
        passed, found = scope_for_family(model, Settings(kernel="double", min_seq_len=1), session)
        assert passed is model
        assert torch.equal(sample(passed, _seedvr2_conditioning(), latent_hw=SEEDVR2_LATENT), plain)
    assert kernel.calls == [] and payload(session)["generations"] == 0
    assert "model SeedVR2 (SeedVR2): passed through unchanged: SeedVR2 is not supported" in render(payload(session))


def test_seedvr2_attention_never_asks_an_override(session):
    """Why it is declined: an override put where the scope puts its router (the model's
    transformer_options) is never asked, since seedvr/attention.py calls optimized_attention per
    window without them. Were ComfyUI to pass them, this fails and the family should open."""
    model = _seedvr2()
    asked = []

    def override(func, *args, **kwargs):
        asked.append(args[0].shape)
        return func(*args, **kwargs)
    watched = model.clone()
    watched.model_options.setdefault("transformer_options", {})[OVERRIDE_KEY] = override
    out = sample(watched, _seedvr2_conditioning(), latent_hw=SEEDVR2_LATENT)
    assert asked == []
    assert torch.equal(out, sample(model, _seedvr2_conditioning(), latent_hw=SEEDVR2_LATENT))


# -- MiniMax H3 ---------------------------------------------------------------------------------------

def _minimax_h3(case=MINIMAX_H3_CASE):
    model = model_of(case)
    minimax_h3_rope(model)  # what families.Case's ``prepare`` does, where it has one
    return model


def test_minimax_h3_one_step_is_one_joint_call_a_block_and_the_refiner_never_reaches_the_scope(session):
    """Each block attends once over the packed text | stereo audio | video rows (57); the token
    refiner's two blocks run in extra_conds without transformer_options: not counted, not on the kernel."""
    plain, routed, kernel, counts = _routed(session, _minimax_h3(), MINIMAX_H3_CASE)
    assert routing_table(counts) == {SAGE: TINY_MINIMAX_H3["num_layers"]}
    assert _keys(kernel) == [MINIMAX_JOINT] * TINY_MINIMAX_H3["num_layers"]
    torch.testing.assert_close(routed, plain, **TOLERANCE)


def test_minimax_h3_first_frame_keyframe_adds_its_rows_to_the_joint_call(session):
    """fl2va (MiniMaxH3ImageToVideo with a first frame): the frame's latent packs 4 x 4 condition rows
    after the text, in the same single call a block."""
    g = torch.Generator().manual_seed(8)
    keyframe = {"resolved_frame_index": 0, "latent": torch.randn(1, 24, 1, *MINIMAX_LATENT[1:], generator=g)}
    joint = MINIMAX_JOINT + 4 * 4
    case = dataclasses.replace(MINIMAX_H3_CASE, min_seq_len=joint,
                               conditioning=lambda: text_conditioning(minimax_keyframes=[keyframe]))
    model = _minimax_h3(case)
    plain, routed, kernel, counts = _routed(session, model, case)
    assert routing_table(counts) == {SAGE: TINY_MINIMAX_H3["num_layers"]}
    assert _keys(kernel) == [joint] * TINY_MINIMAX_H3["num_layers"]
    torch.testing.assert_close(routed, plain, **TOLERANCE)


# -- which family the status names ----------------------------------------------------------------------

MODELS = [
    ("Kandinsky5", TINY_KANDINSKY5, "Kandinsky 5"), ("Kandinsky5Image", TINY_KANDINSKY5_IMAGE, "Kandinsky 5 Image"),
    ("CogVideoX_T2V", TINY_COGVIDEOX, "CogVideoX"), ("CogVideoX_I2V", TINY_COGVIDEOX_I2V, "CogVideoX"),
    ("CogVideoX_Inpaint", TINY_COGVIDEOX_INPAINT, "CogVideoX"), ("MiniMaxH3", TINY_MINIMAX_H3, "MiniMax H3"),
]


@pytest.mark.parametrize("config_class, config, family", MODELS, ids=[name for name, _, _ in MODELS])
def test_status_names_the_family_of_each_config_class(session, config_class, config, family):
    needs_class(config_class)
    model = build(getattr(comfy.supported_models, config_class), config)
    with registered(session, make_kernel("double", RecordingKernel())):
        scoped, found = scope_for_family(model, Settings(kernel="double"), session)
    assert scoped is not model and found.family is families.REGISTRY[family]
    assert f"model {family} ({config_class}): scoped" in render(payload(session))


def test_cogvideox_tokenizer_pads_every_prompt_to_the_cases_text_length():
    """CogVideoX's cases give the model 226 text tokens because ComfyUI's tokenizer makes every prompt 226."""
    needs_class("CogVideoX_T2V")
    import comfy.text_encoders.cogvideo
    tokenizer = comfy.text_encoders.cogvideo.CogVideoXT5Tokenizer()
    for prompt in ("a cat", "a red fox running through deep snow at dawn, cinematic"):
        assert [len(batch) for batch in tokenizer.tokenize_with_weights(prompt)] == [COG_TEXT]
