"""LTX-2 and LTX-2.3 (LTXAV) beyond the generic per-family tests, as ComfyUI 0.33 builds them: the text
each block attends to (the prompt plus the connectors' registers), the guide-mask calls ComfyUI makes
with low_precision_attention=False, and a perturbed (STG) pass that skips a block's self-attention.
ComfyUI 0.3.75 has no LTXAV: those tests skip there, naming the class. LTX-Video's guide calls run on
both hosts (0.3.75 makes no guide mask)."""
from __future__ import annotations

import dataclasses

import pytest
import torch

import comfy.ldm.lightricks.model
import comfy.nested_tensor

from sage_attention_scope.patches import Reason, Settings, scope_for_family
from sas_harness.doubles import RecordingKernel, make_kernel, registered
from sas_harness.families import (CASES, LTXAV_AUDIO_TOKENS, LTXAV_VIDEO_TOKENS, SAGE, model_of,
                                  routed_step, routing_table, sample_case)
from sas_harness.models import LTXAV_SCALE_FACTORS, LTXAV_TEXT_KEYS, flat_latent, sample
from sas_harness.run import last_generation

TOLERANCE = dict(rtol=1e-3, atol=1e-3)
LTX_CASES = [c for c in CASES if c.family == "LTX-2"]
IDS = ["LTX-2.3" if c.unet_config.get("caption_proj_before_connector") else "LTX-2" for c in LTX_CASES]
# Whether this ComfyUI turns a guide's strength into an attention mask (0.33; 0.3.75 only noises it less)
GUIDE_MASKS = hasattr(comfy.ldm.lightricks.model, "GuideAttentionMask")


def _routed(session, case, model, cond, latent, min_seq_len, **extra):
    """(plain output, scoped output, the kernel double, the counters) of one step."""
    plain = flat_latent(sample(model, cond, latent=latent, **extra))
    kernel = RecordingKernel()
    with registered(session, make_kernel("double", kernel)):
        scoped, found = scope_for_family(model, Settings(kernel="double", min_seq_len=min_seq_len), session)
        assert found.family.name == case.family
        routed = flat_latent(sample(scoped, cond, latent=latent, **extra))
    return plain, routed, kernel, last_generation(session)


def _lengths(kernel):
    """(query, key) lengths of each call the kernel received (NHD: the sequence is axis 1)."""
    return [(c["q"].shape[1], c["k"].shape[1]) for c in kernel.calls]


@pytest.mark.parametrize("case", LTX_CASES, ids=IDS)
def test_the_video_attends_to_the_prompt_and_the_connectors_registers(session, case):
    """The 5-token prompt goes through the model's connectors before the steps (their calls carry
    no transformer_options: never counted); each block's video cross-attention then sees 1024 keys."""
    plain, routed, kernel = routed_step(session, case)
    assert routing_table(last_generation(session)) == case.per_step
    # per block, in the order the block makes them: video self-attention, then the text
    blocks = case.unet_config["num_layers"]
    video = LTXAV_VIDEO_TOKENS
    assert _lengths(kernel) == [(video, video), (video, LTXAV_TEXT_KEYS)] * blocks
    torch.testing.assert_close(routed, plain, **TOLERANCE)


def _guided(case, strength):
    """(conditioning, latent, noise mask, the guide's tokens) after ComfyUI's own LTXVAddGuide steps: one
    guide frame the size of the case's frames appended to its video latent, the guide's keyframe
    positions in the conditioning and, where this ComfyUI has them, its attention entry. For LTX-2 the
    latent and its noise mask are then nested with the audio, as LTXVConcatAVLatent does."""
    nodes_lt = pytest.importorskip("comfy_extras.nodes_lt", reason="ComfyUI's LTX nodes (they need PyAV)")
    _, h, w = case.latent_hw
    video = torch.zeros(1, case.channels, *case.latent_hw)
    guide = torch.randn(1, case.channels, 1, h, w, generator=torch.Generator().manual_seed(5))
    cond = case.conditioning()
    positive, _, video, video_mask = nodes_lt.LTXVAddGuide.append_keyframe(
        cond, cond, 0, video, nodes_lt.get_noise_mask({"samples": video}), guide, strength, LTXAV_SCALE_FACTORS)
    if hasattr(nodes_lt, "_append_guide_attention_entry"):
        positive, _ = nodes_lt._append_guide_attention_entry(positive, positive, h * w, [1, h, w], strength=strength)
    if case.family != "LTX-2":
        return positive, video, video_mask, h * w
    audio = torch.zeros(1, 8, LTXAV_AUDIO_TOKENS, 16)
    return (positive, comfy.nested_tensor.NestedTensor((video, audio)),
            comfy.nested_tensor.NestedTensor((video_mask, torch.ones_like(audio))), h * w)


@pytest.mark.parametrize("case", LTX_CASES, ids=IDS)
@pytest.mark.parametrize("strength", [1.0, 0.5])
def test_guide_mask_calls_stay_on_sdpa_as_comfyui_opts_them_out(session, case, strength):
    """A guide at strength 1 adds 256 tokens to the video and nothing else. At 0.5 each block's video
    self-attention becomes two calls under a bias mask, both made with low_precision_attention=False:
    the 512 noisy queries against all 768 keys, then the 256 guide queries against them."""
    model = model_of(case)
    positive, latent, noise_mask, guide = _guided(case, strength)
    plain, routed, kernel, counts = _routed(session, case, model, positive, latent, guide, noise_mask=noise_mask)
    blocks, video = case.unet_config["num_layers"], LTXAV_VIDEO_TOKENS + guide
    # at a threshold of 256 tokens (the guide's): the audio's 10 tokens keep its four calls short
    short = {Reason.TOO_SHORT: 4 * blocks}
    if strength == 1.0:  # no mask: one self-attention call over the 768 video tokens, then the text
        assert routing_table(counts) == {SAGE: 2 * blocks, **short}
        assert _lengths(kernel) == [(video, video), (video, LTXAV_TEXT_KEYS)] * blocks
    else:
        assert routing_table(counts) == {Reason.LOW_PRECISION_OPT_OUT: 2 * blocks, SAGE: blocks, **short}
        assert _lengths(kernel) == [(video, LTXAV_TEXT_KEYS)] * blocks
    torch.testing.assert_close(routed, plain, **TOLERANCE)


@pytest.mark.parametrize("strength", [1.0, 0.5])
def test_ltx_video_guide_mask_calls_stay_on_sdpa_where_comfyui_opts_them_out(session, strength):
    """LTX-Video's blocks take guides the same way: a guide frame adds 16 tokens to the 32; at 0.5, on a
    ComfyUI that makes guide masks, the block's self-attention is the two opted-out calls (32 noisy
    queries, then the 16 guide queries, against all 48 keys); on 0.3.75 it stays one call."""
    case = next(c for c in CASES if c.family == "LTX-Video")
    model = model_of(case)
    positive, latent, noise_mask, guide = _guided(case, strength)
    plain, routed, kernel, counts = _routed(session, case, model, positive, latent, guide, noise_mask=noise_mask)
    blocks, video = case.unet_config["num_layers"], case.min_seq_len + guide
    short = {Reason.TOO_SHORT: blocks}  # the cross-attention to the 5 text tokens
    if strength == 1.0 or not GUIDE_MASKS:
        assert routing_table(counts) == {SAGE: blocks, **short}
        assert _lengths(kernel) == [(video, video)] * blocks
    else:
        assert routing_table(counts) == {Reason.LOW_PRECISION_OPT_OUT: 2 * blocks, **short}
        assert kernel.calls == []
    torch.testing.assert_close(routed, plain, **TOLERANCE)


@pytest.mark.parametrize("case", LTX_CASES, ids=IDS)
def test_a_perturbed_pass_skips_the_self_attention_of_its_blocks(session, case):
    """LTXVSpatioTemporalGuidance's extra pass sets stg_self_attn_blocks: in those blocks both
    self-attentions (video and audio: each module called without a context) become the value
    pass-through and make no call; the rest routes as the case."""
    model = model_of(case).clone()
    model.model_options["transformer_options"]["stg_self_attn_blocks"] = (0,)
    # block 0 loses its video self-attention (qualifying) and its audio self-attention (short)
    perturbed = dataclasses.replace(case, per_step={SAGE: case.per_step[SAGE] - 1,
                                                    Reason.TOO_SHORT: case.per_step[Reason.TOO_SHORT] - 1})
    plain = sample_case(model, perturbed)
    with registered(session, make_kernel("double", RecordingKernel())):
        scoped, _ = scope_for_family(model, Settings(kernel="double", min_seq_len=case.min_seq_len), session)
        routed = sample_case(scoped, perturbed)
    assert routing_table(last_generation(session)) == perturbed.per_step
    torch.testing.assert_close(routed, plain, **TOLERANCE)
