"""Wan and the HunyuanVideo family beyond the generic per-family tests: HunyuanVideo's text mask,
Wan's short CLIP cross-attention under the automatic floor, the routing of Wan 2.1 14B's real call
shapes, the Wan calls that never reach the scope, the calls of newer ComfyUI's Wan models over their
own inputs and their CLIP calls made with low_precision_attention=False, and which family the status
names."""
from __future__ import annotations

import dataclasses
import inspect

import pytest
import torch

import comfy.supported_models

from sage_attention_scope.nodes.status import payload, render
from sage_attention_scope.patches import Reason, Settings, families, scope_for_family
from sage_attention_scope.patches.call import Call
from sage_attention_scope.patches.backends import Bound
from sage_attention_scope.patches.decide import bucket_key, decide
from sage_attention_scope.patches.state.generation import Generation
from sage_attention_scope.patches.state.knowledge import Knowledge
from sage_attention_scope.patches.timing import Decision
from sas_harness.doubles import CrossoverClock, RecordingKernel, make_kernel, registered
from sas_harness.families import CASES, SAGE, model_of, needs_class, routed_step, routing_table, sample_case
from sas_harness.cases_video import (ANIMATE2_FRAME, ANIMATE2_LATENT, CLIP_PAST_THRESHOLD, HV_JOINT, HV_PADDING,
                                     REFINER_CALLS, SCAIL_TOKENS, TINY_HUNYUAN_IMAGE_21,
                                     TINY_HUNYUAN_VIDEO, TINY_HUNYUAN_VIDEO_15, TINY_WAN, TINY_WAN_ANIMATE2,
                                     TINY_WAN_CAUSAL_AR, TINY_WAN_DANCER, TINY_WAN_FLOW_RVS, TINY_WAN_I2V,
                                     TINY_WAN_SCAIL, TINY_WAN_SCAIL2, TINY_WAN_VACE, WAN_CLIP, WAN_LATENT, WAN_TEXT,
                                     clip_vision, hunyuan_text_last, hunyuan_video_conditioning, joint_blocks,
                                     text_mask, wan_clip_opts_out, wan_conditioning, wan_tokens)
from sas_harness.models import build, sample
from sas_harness.run import call_of, last_generation

TOLERANCE = dict(rtol=1e-3, atol=1e-3)


def _case(config_class):
    return next(c for c in CASES if c.config_class == config_class)


def _keys(kernel: RecordingKernel) -> list[int]:
    """The key length of each call the kernel received."""
    return [c["k"].shape[2 if c["layout"] == "HND" else 1] for c in kernel.calls]


# -- HunyuanVideo's text mask -------------------------------------------------------------------

def _hunyuan_video_under(session, mask):
    """(plain output, scoped output, the kernel double, the counters) of one step of the tiny
    HunyuanVideo whose text carries ``mask``."""
    case = dataclasses.replace(_case("HunyuanVideo"), conditioning=lambda: hunyuan_video_conditioning(
        attention_mask=mask))
    plain, routed, kernel = routed_step(session, case)
    return plain, routed, kernel, last_generation(session)


@pytest.mark.parametrize("padding", [HV_PADDING, 0], ids=["padded prompt", "unpadded prompt"])
def test_hunyuan_video_text_padding_mask_is_sliced_off_and_the_joint_calls_qualify(session, padding):
    """A 5-token prompt padded to 8: the joint calls' mask masks its 3 padded keys for every query.
    Where the text comes last (ComfyUI up to 0.12) those are the last keys: sliced off, the calls
    run on the kernel without them. Where it comes first (0.18 on) they lie between the text and the
    image: the kept keys are gathered (a copy) and the calls run on the kernel too. Unpadded, the mask
    is all zero: dropped."""
    plain, routed, kernel, counts = _hunyuan_video_under(session, text_mask(padding=padding))
    joint = joint_blocks(TINY_HUNYUAN_VIDEO)
    # the two refiner calls over the 8 text tokens are short, whatever the mask
    assert routing_table(counts) == {SAGE: joint, Reason.TOO_SHORT: REFINER_CALLS}
    assert counts["masks_dropped"] == joint and _keys(kernel) == [HV_JOINT - padding] * joint
    assert counts["copied"] == (joint if padding and not hunyuan_text_last() else 0)
    torch.testing.assert_close(routed, plain, **TOLERANCE)


def test_where_the_sparse_tier_places_hunyuan_videos_text_is_where_this_comfyui_puts_it(session):
    """The sparse kernel keeps HunyuanVideo's text rows exact as sinks, at the place the family reads
    from the ComfyUI running. That place, seen through the real model: the padded text keys come
    trailing (sliced off, nothing copied) exactly where the text comes last."""
    _, _, _, counts = _hunyuan_video_under(session, text_mask(padding=HV_PADDING))
    padded_keys_trailing = counts["copied"] == 0
    placed = families.REGISTRY["HunyuanVideo"].text_position()
    assert counts["masks_dropped"] == joint_blocks(TINY_HUNYUAN_VIDEO)  # every joint call had the padding
    assert placed in (families.TEXT_FIRST, families.TEXT_LAST)
    assert (placed == families.TEXT_LAST) == padded_keys_trailing


def test_hunyuan_video_a_hole_in_the_text_mask_is_left_out_by_gathering_the_other_keys(session):
    """A text token masked inside the prompt: the same key masked for every query, not trailing: the
    joint calls get the other keys gathered (a copy) and run on the kernel."""
    plain, routed, kernel, counts = _hunyuan_video_under(session, torch.tensor([[1, 1, 0, 1, 1, 1, 1, 1]]))
    joint = joint_blocks(TINY_HUNYUAN_VIDEO)
    assert routing_table(counts) == {SAGE: joint, Reason.TOO_SHORT: REFINER_CALLS}
    assert counts["masks_dropped"] == counts["copied"] == joint and _keys(kernel) == [HV_JOINT - 1] * joint
    torch.testing.assert_close(routed, plain, **TOLERANCE)


@pytest.mark.parametrize("mask", [
    torch.tensor([[0.0, 0.0, -1.0, 0.0, 0.0, 0.0, 0.0, 0.0]]),  # a float mask: HunyuanVideo adds it as a bias
], ids=["bias"])
def test_hunyuan_video_masks_that_are_not_key_padding_stay_on_sdpa(session, mask):
    plain, routed, kernel, counts = _hunyuan_video_under(session, mask)
    assert routing_table(counts) == {Reason.MASK: joint_blocks(TINY_HUNYUAN_VIDEO), Reason.TOO_SHORT: REFINER_CALLS}
    assert counts["masks_dropped"] == 0
    assert kernel.calls == []
    assert torch.equal(routed, plain)  # every call ran ComfyUI's own attention


# -- Wan's CLIP cross-attention under the automatic floor ----------------------------------------

LAYERS = TINY_WAN["num_layers"]  # each makes three calls: self-attention, then CLIP and text cross-attention


@pytest.mark.parametrize("latent, clip_tokens, expected, keys_on_kernel", [
    # 1024 video tokens: self-attention (1024 keys) and the text (512 keys) pass the floor (query
    # 1024, key 512) and are measured (the kernel wins on the tests' clock); the 257 CLIP keys do not
    ((4, 32, 32), WAN_CLIP, {SAGE: 2 * LAYERS, Reason.TOO_SHORT: LAYERS}, {1024, WAN_TEXT}),
    # first-last-frame: 514 CLIP keys (two images) pass the floor as well
    ((4, 32, 32), 514, {SAGE: 3 * LAYERS}, {1024, 514, WAN_TEXT}),
    # 960 video tokens: every query is under the floor
    ((4, 30, 32), WAN_CLIP, {Reason.TOO_SHORT: 3 * LAYERS}, set()),
], ids=["i2v", "flf2v", "i2v under the floor"])
def test_wan_i2v_clip_cross_attention_is_short_under_the_automatic_floor(session, latent, clip_tokens, expected,
                                                                         keys_on_kernel):
    config = dict(TINY_WAN_I2V, **({"flf_pos_embed_token_number": 514} if clip_tokens == 514 else {}))
    model = build(comfy.supported_models.WAN21_I2V, config)

    def cond():
        return wan_conditioning(clip_vision_output=clip_vision(clip_tokens),
                                concat_latent_image=torch.zeros(1, 16, *latent))
    plain = sample(model, cond(), latent_hw=latent)
    kernel = RecordingKernel()
    with registered(session, make_kernel("double", kernel)):
        scoped, _ = scope_for_family(model, Settings(kernel="double"), session)  # min_seq_len 0: the floor
        routed = sample(scoped, cond(), latent_hw=latent)
    if clip_tokens == 514 and wan_clip_opts_out():  # the 514-key calls pass the floor, then opt out
        expected, keys_on_kernel = {SAGE: 2 * LAYERS, Reason.LOW_PRECISION_OPT_OUT: LAYERS}, keys_on_kernel - {514}
    counts = last_generation(session)
    assert routing_table(counts) == expected
    assert set(_keys(kernel)) == keys_on_kernel
    if Reason.TOO_SHORT in expected:
        assert f"declined {expected[Reason.TOO_SHORT]}: {Reason.TOO_SHORT.label}" in render(payload(session))
    torch.testing.assert_close(routed, plain, **TOLERANCE)


# -- Wan 2.1 14B's real call shapes, decided with no model ----------------------------------------

WAN_14B_TOKENS, WAN_14B_DIM, WAN_14B_HEADS = 21 * 30 * 52, 5120, 40  # 832x480, 81 frames: latent 21 x 60 x 104


def _wan_14b_call(keys: int) -> Call:
    """A call as ComfyUI hands Wan's attention to the override: (B, N, heads x 128), bf16. decide()
    reads shapes only, so q/k/v are one row expanded, not 335 MB."""
    def tokens(n):
        return torch.empty(1, 1, WAN_14B_DIM, dtype=torch.bfloat16).expand(1, n, WAN_14B_DIM)
    return call_of((tokens(WAN_14B_TOKENS), tokens(keys), tokens(keys), WAN_14B_HEADS), {})


def _measured(calls, double, clock) -> Knowledge:
    """What the pack knows once measured routing has timed these calls' shape buckets on ``clock``."""
    knowledge = Knowledge()
    for call in calls:
        key = bucket_key(call, double.backend)
        knowledge.record_decision(Decision(key, clock("kernel", None, call.device, key),
                                           clock("comfy", None, call.device, key)))
    return knowledge


def _rule(call, double, settings, knowledge):
    """What ``decide`` rules for ``call`` with ``double`` the one candidate: a Reason, or None (the kernel)."""
    return decide(call, (Bound(double.backend, double.function, "test double"),), settings, knowledge,
                  Generation()).reason


@pytest.mark.parametrize("keys, route", [
    (WAN_14B_TOKENS, None),          # self-attention: measured, the kernel faster -> the kernel
    (WAN_TEXT, Reason.MEASURED_SLOWER),  # the text: 512 keys are not under the floor -> measured: 32k x 512
                                         # is far less work than the crossover -> SDPA
    (WAN_CLIP, Reason.TOO_SHORT),    # the CLIP image: 257 keys are -> SDPA, never timed
], ids=["self-attention", "text cross-attention", "CLIP cross-attention"])
def test_wan_14b_calls_route_as_measured_above_the_floor(keys, route):
    double = make_kernel("double", RecordingKernel())
    call = _wan_14b_call(keys)
    assert call.head_dim == 128 and call.q_len == 32760 and call.kv_len == keys
    known = _measured([call], double, CrossoverClock(12288))  # the H200: the kernel pays from 12k-token self-attention
    assert _rule(call, double, Settings(), known) == route


def test_wan_14b_text_cross_attention_goes_where_its_bucket_was_measured():
    """The 512-key call has no rule of its own: SDPA where its bucket measured SDPA faster, and
    TOO_SHORT only under a min_seq_len above 512. The 257-key call stays short whatever was measured."""
    double = make_kernel("double", RecordingKernel())
    text, clip = _wan_14b_call(WAN_TEXT), _wan_14b_call(WAN_CLIP)
    sdpa_faster = _measured([text, clip], double, CrossoverClock(12288))
    assert _rule(text, double, Settings(), sdpa_faster) is Reason.MEASURED_SLOWER
    assert _rule(text, double, Settings(min_seq_len=1024), sdpa_faster) is Reason.TOO_SHORT
    kernel_faster = _measured([clip], double, CrossoverClock(1))
    assert _rule(clip, double, Settings(), kernel_faster) is Reason.TOO_SHORT
    assert _rule(text, double, Settings(), Knowledge()) is None  # not measured yet: the router times it


# -- Wan calls made without transformer_options ---------------------------------------------------

def _s2v_blocks_pass_transformer_options() -> bool:
    """ComfyUI 0.3.75's S2V block loop drops transformer_options; 0.8 and later pass them."""
    import comfy.ldm.wan.model
    source = inspect.getsource(comfy.ldm.wan.model.WanModel_S2V.forward_orig)
    return "context=context, transformer_options=transformer_options)" in source


def _s2v_conditioning():
    g = torch.Generator().manual_seed(4)
    return wan_conditioning(audio_embed=torch.randn(1, 25, 1024, 4 * 2, generator=g),  # 4 audio frames a latent frame
                            reference_latents=[torch.randn(1, 16, 1, 8, 8, generator=g)])


def test_wan_s2v_calls_made_without_transformer_options_never_reach_the_scope(session):
    model = build(comfy.supported_models.WAN22_S2V, dict(TINY_WAN, model_type="s2v"))
    plain = sample(model, _s2v_conditioning(), latent_hw=(2, 8, 8))
    kernel = RecordingKernel()
    with registered(session, make_kernel("double", kernel)):
        # min_seq_len 1: every call that reached the scope would run on the kernel
        scoped, found = scope_for_family(model, Settings(kernel="double", min_seq_len=1), session)
        assert found.family.name == "Wan"
        routed = sample(scoped, _s2v_conditioning(), latent_hw=(2, 8, 8))
    assert payload(session)["generations"] == 1
    if _s2v_blocks_pass_transformer_options():
        # newer ComfyUI: the blocks' self- and text cross-attention reach it; the audio injector does not
        assert routing_table(last_generation(session)) == {SAGE: 2 * LAYERS}
        torch.testing.assert_close(routed, plain, **TOLERANCE)
    else:
        # 0.3.75: the blocks and the audio injector run ComfyUI's own attention; nothing is counted
        counted = payload(session)["devices"].get("cpu", {}).get("last_generation", {"kernel": 0, "declined_total": 0})
        assert counted["kernel"] == counted["declined_total"] == 0 and kernel.calls == []
        assert torch.equal(routed, plain)


def test_wan_humo_audio_cross_attention_is_short(session):
    """HuMo adds, per block, each latent frame's tokens (16 here) attending to its 16 audio tokens."""
    model = build(comfy.supported_models.WAN21_HuMo, dict(TINY_WAN, model_type="humo"))
    cond = lambda: wan_conditioning(audio_embed=torch.randn(1, 2, 8, 5, 1280,  # noqa: E731
                                                            generator=torch.Generator().manual_seed(4)))
    latent = (2, 8, 8)  # 32 video tokens, 16 a frame
    plain = sample(model, cond(), latent_hw=latent)
    with registered(session, make_kernel("double", RecordingKernel())):
        scoped, _ = scope_for_family(model, Settings(kernel="double", min_seq_len=wan_tokens(latent)), session)
        routed = sample(scoped, cond(), latent_hw=latent)
    assert routing_table(last_generation(session)) == {SAGE: 2 * LAYERS, Reason.TOO_SHORT: LAYERS}
    torch.testing.assert_close(routed, plain, **TOLERANCE)


# -- Wan models of newer ComfyUI (0.33 read; absent from 0.3.75), over their own inputs --------------

def _lengths(kernel: RecordingKernel) -> list[tuple[int, int]]:
    """(query, key) lengths of each call the kernel received, in order (NHD: the sequence is axis 1)."""
    return [(c["q"].shape[1], c["k"].shape[1]) for c in kernel.calls]


VIDEO = wan_tokens(WAN_LATENT)  # 512
A2_POSE = (ANIMATE2_LATENT[0] - 1) * ANIMATE2_FRAME   # Animate 2's pose video: 2 frames of 576 tokens
A2_GEN = ANIMATE2_LATENT[0] * ANIMATE2_FRAME          # its generation: the reference slot and 2 frames
# Each block's calls on the kernel, in the order the block makes them, at the case's threshold (512).
NEWER_WAN_CALLS = {
    "WAN21_CausalAR_T2V": [(VIDEO, VIDEO), (VIDEO, WAN_TEXT)],
    "WAN21_FlowRVS": [(VIDEO, VIDEO), (VIDEO, WAN_TEXT)],
    # the reference frame, the video and the half-size pose video in one sequence; the CLIP call is short
    "WAN21_SCAIL": [(SCAIL_TOKENS, SCAIL_TOKENS), (SCAIL_TOKENS, WAN_TEXT)],
    "WAN21_SCAIL2": [(SCAIL_TOKENS, SCAIL_TOKENS), (SCAIL_TOKENS, WAN_TEXT)],
    # the 514-key CLIP call (first frame + reference) reaches the kernel only where it is not opted out
    "WAN22_WanDancer": [(VIDEO, VIDEO)] + ([(VIDEO, 2 * WAN_CLIP)] if CLIP_PAST_THRESHOLD == SAGE else [])
                       + [(VIDEO, WAN_TEXT)],
    # the pose branch (self-attention, the text), then one call per generated frame: frame 0 (the
    # reference's slot) against the generation's tokens, frames 1 and 2 also against one pose frame
    "WAN_Animate2": [(A2_POSE, A2_POSE), (A2_POSE, WAN_TEXT), (ANIMATE2_FRAME, A2_GEN),
                     (ANIMATE2_FRAME, A2_GEN + ANIMATE2_FRAME), (ANIMATE2_FRAME, A2_GEN + ANIMATE2_FRAME),
                     (A2_GEN, WAN_TEXT)],
}


@pytest.mark.parametrize("config_class", list(NEWER_WAN_CALLS))
def test_newer_wan_models_attend_over_their_own_inputs(session, config_class):
    """One step of each case: its table, and the lengths of the calls the kernel got, which its inputs
    (reference frame, pose video, music, CLIP images) make what they are."""
    case = _case(config_class)
    model = model_of(case)
    plain = sample_case(model, case)
    kernel = RecordingKernel()
    with registered(session, make_kernel("double", kernel)):
        scoped, found = scope_for_family(model, Settings(kernel="double", min_seq_len=case.min_seq_len), session)
        assert found.family.name == "Wan"
        routed = sample_case(scoped, case)
    assert routing_table(last_generation(session)) == case.per_step
    assert _lengths(kernel) == NEWER_WAN_CALLS[config_class] * LAYERS
    torch.testing.assert_close(routed, plain, **TOLERANCE)


CLIP_CALLS = {"WAN21_I2V": 1, "WAN21_SCAIL": 1, "WAN21_SCAIL2": 1, "WAN22_WanDancer": 1,
              "WAN_Animate2": 2}  # per block (Animate 2: the pose branch's and the generation's)


@pytest.mark.parametrize("config_class", list(CLIP_CALLS))
def test_wan_clip_cross_attention_past_the_threshold_stays_on_sdpa_where_comfyui_opts_it_out(session,
                                                                                             config_class):
    """At a threshold of 1 every counted call passes it: the CLIP calls (257 keys, WanDancer 514) then
    stay on SDPA where this ComfyUI makes them with low_precision_attention=False (0.33), and run on
    the kernel where it does not (0.3.75, which has I2V only of these); every other call qualifies."""
    case = _case(config_class)
    model = model_of(case)
    plain = sample_case(model, case)
    with registered(session, make_kernel("double", RecordingKernel())):
        scoped, _ = scope_for_family(model, Settings(kernel="double", min_seq_len=1), session)
        routed = sample_case(scoped, case)
    clip, calls = CLIP_CALLS[config_class] * LAYERS, sum(case.per_step.values())
    expected = {SAGE: calls} if CLIP_PAST_THRESHOLD == SAGE else {SAGE: calls - clip, CLIP_PAST_THRESHOLD: clip}
    assert routing_table(last_generation(session)) == expected
    torch.testing.assert_close(routed, plain, **TOLERANCE)


@pytest.mark.parametrize("config_class, tokens", [("WAN21_I2V", wan_tokens(WAN_LATENT)), ("WAN21_SCAIL", SCAIL_TOKENS),
                                                  ("WAN21_SCAIL2", SCAIL_TOKENS)])
def test_wan_without_a_clip_image_makes_its_clip_call_over_the_text(session, config_class, tokens):
    """Without clip_vision_output an image-taking model's CLIP call gets the whole text as its keys
    (context_img_len None): 512, past the threshold. ComfyUI 0.3.75 routes it as the text call; 0.33
    makes it with low_precision_attention=False."""
    case = _case(config_class)
    with_clip = case.conditioning

    def cond():
        text, extras = with_clip()[0]
        return [[text, {k: v for k, v in extras.items() if k != "clip_vision_output"}]]
    model = model_of(case)
    case = dataclasses.replace(case, conditioning=cond)
    plain = sample_case(model, case)
    kernel = RecordingKernel()
    with registered(session, make_kernel("double", kernel)):
        scoped, _ = scope_for_family(model, Settings(kernel="double", min_seq_len=case.min_seq_len), session)
        routed = sample_case(scoped, case)
    # per block: self-attention, the CLIP call over the text, the text
    expected = {SAGE: 3 * LAYERS} if CLIP_PAST_THRESHOLD == SAGE else {SAGE: 2 * LAYERS, CLIP_PAST_THRESHOLD: LAYERS}
    assert routing_table(last_generation(session)) == expected
    assert set(_keys(kernel)) == {tokens, WAN_TEXT}
    torch.testing.assert_close(routed, plain, **TOLERANCE)


def test_wan_dancer_music_runs_outside_the_scope(session):
    """The music changes the output (its encoder and its injector after block 0 ran), yet the scoped
    step counts only the blocks' calls: the music's carry no transformer_options."""
    case = _case("WAN22_WanDancer")

    def without_music():
        text, extras = case.conditioning()[0]
        return [[text, {k: v for k, v in extras.items() if k != "audio_embed"}]]
    model = model_of(case)
    plain = sample_case(model, case)
    assert not torch.allclose(plain, sample_case(model, dataclasses.replace(case, conditioning=without_music)))
    with registered(session, make_kernel("double", RecordingKernel())):
        scoped, _ = scope_for_family(model, Settings(kernel="double", min_seq_len=1), session)
        routed = sample_case(scoped, case)
    # at a threshold of 1 the music encoder (5 tokens) and injector (1 key) would have been counted
    assert sum(routing_table(last_generation(session)).values()) == 3 * LAYERS
    torch.testing.assert_close(routed, plain, **TOLERANCE)


def _sample_ar_video(model, case):
    """One step per latent frame under SamplerARVideo's sampler (frame by frame), as SamplerCustom
    runs it: for each frame its denoising call, then one at sigma 0 that fills the KV cache."""
    import comfy.sample
    import comfy.samplers
    latent = torch.zeros(1, case.channels, *case.latent_hw)
    sigmas = comfy.samplers.calculate_sigmas(model.get_model_object("model_sampling"), "simple", 1)
    sampler = comfy.samplers.ksampler("ar_video", {"num_frame_per_block": 1})
    return comfy.sample.sample_custom(model, comfy.sample.prepare_noise(latent, 0), 1.0, sampler, sigmas,
                                      case.conditioning(), case.conditioning(), latent, seed=0, disable_pbar=True)


def test_wan_causal_ar_under_its_ar_video_sampler_never_reaches_the_scope(session):
    """SamplerARVideo denoises frame by frame against a KV cache; the model's forward_block calls the
    blocks without transformer_options, so no call is offered to the scope and nothing changes. (Under
    an ordinary sampler the same model routes as the case says: test_families.)"""
    case = _case("WAN21_CausalAR_T2V")
    model = model_of(case)
    diffusion_model, frames = model.model.diffusion_model, []

    def forward_block(*args, **kwargs):  # notes which frame each AR forward denoises, then runs it
        frames.append(kwargs["start_frame"])
        return type(diffusion_model).forward_block(diffusion_model, *args, **kwargs)
    diffusion_model.forward_block = forward_block
    plain = _sample_ar_video(model, case)
    assert frames == [0, 0, 1, 1]  # the AR path ran: per latent frame, its step and the cache fill
    kernel = RecordingKernel()
    with registered(session, make_kernel("double", kernel)):
        scoped, _ = scope_for_family(model, Settings(kernel="double", min_seq_len=1), session)
        routed = _sample_ar_video(scoped, case)
    assert frames == [0, 0, 1, 1] * 2
    assert payload(session)["generations"] == 1
    counted = payload(session)["devices"].get("cpu", {}).get("last_generation", {"kernel": 0, "declined_total": 0})
    assert counted["kernel"] == counted["declined_total"] == 0 and kernel.calls == []
    assert torch.equal(routed, plain)


# -- which family the status names -----------------------------------------------------------------

# Wan classes of newer ComfyUI, absent from 0.3.75: a model each of its own (FlowRVS a plain WanModel).
NEWER_WAN = [("WAN21_CausalAR_T2V", TINY_WAN_CAUSAL_AR), ("WAN21_FlowRVS", TINY_WAN_FLOW_RVS),
             ("WAN21_SCAIL", TINY_WAN_SCAIL), ("WAN21_SCAIL2", TINY_WAN_SCAIL2), ("WAN22_WanDancer", TINY_WAN_DANCER),
             ("WAN_Animate2", TINY_WAN_ANIMATE2)]


HUNYUAN_MODELS = [
    ("HunyuanVideo", TINY_HUNYUAN_VIDEO, "HunyuanVideo"),
    ("HunyuanVideoI2V", dict(TINY_HUNYUAN_VIDEO, in_channels=33), "HunyuanVideo"),
    ("HunyuanVideoSkyreelsI2V", dict(TINY_HUNYUAN_VIDEO, in_channels=32), "HunyuanVideo"),
    ("HunyuanVideo15", TINY_HUNYUAN_VIDEO_15, "HunyuanVideo 1.5"),
    ("HunyuanVideo15_SR_Distilled", dict(TINY_HUNYUAN_VIDEO_15, in_channels=98), "HunyuanVideo 1.5"),
    ("HunyuanImage21", TINY_HUNYUAN_IMAGE_21, "HunyuanImage 2.1"),
    ("HunyuanImage21Refiner", dict(TINY_HUNYUAN_VIDEO, in_channels=128, out_channels=64, vec_in_dim=None,
                                   patch_size=[1, 1, 1]), "HunyuanImage 2.1"),
]
WAN_MODELS = [(name, config, "Wan") for name, config in [
    ("WAN21_T2V", TINY_WAN), ("WAN21_I2V", TINY_WAN_I2V), ("WAN21_FunControl2V", dict(TINY_WAN_I2V, in_dim=48)),
    ("WAN21_Camera", dict(TINY_WAN, model_type="camera", in_dim=32)),
    ("WAN22_Camera", dict(TINY_WAN, model_type="camera_2.2", in_dim=36)), ("WAN21_Vace", TINY_WAN_VACE),
    ("WAN21_HuMo", dict(TINY_WAN, model_type="humo")), ("WAN22_S2V", dict(TINY_WAN, model_type="s2v")),
    ("WAN22_Animate", dict(TINY_WAN_I2V, model_type="animate", num_layers=5)),
    ("WAN22_T2V", dict(TINY_WAN, in_dim=48, out_dim=48)),
] + NEWER_WAN]


@pytest.mark.parametrize("config_class, config, family", HUNYUAN_MODELS + WAN_MODELS,
                         ids=[name for name, _, _ in HUNYUAN_MODELS + WAN_MODELS])
def test_status_names_the_family_of_each_config_class(session, config_class, config, family):
    model = build(needs_class(config_class), config)
    with registered(session, make_kernel("double", RecordingKernel())):
        scoped, found = scope_for_family(model, Settings(kernel="double"), session)
    assert scoped is not model and found.family is families.REGISTRY[family]
    assert f"model {family} ({config_class}): scoped" in render(payload(session))
