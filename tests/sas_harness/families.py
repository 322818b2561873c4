"""Tiny random-weight models of each family and the expected routing of one step.

The expected tables are derived from each tiny model's structure (written out below), not from
a run: how many attention calls each layer kind makes per step, how many tokens each sees, and
so which reason each gets at the case's threshold. Shared by tests/test_families.py,
tests/test_fault_matrix.py and bench/fault_matrix.py.
"""
from __future__ import annotations

import dataclasses
from typing import Callable

import pytest
import torch

import comfy.supported_models

from sage_attention_scope.patches import Reason
from sage_attention_scope.patches.families import REGISTRY
from .models import (FLUX2_MIN_TEXT_TOKENS, TINY_FLUX, TINY_FLUX2, TINY_LTXAV, TINY_LTXV, TINY_QWEN_IMAGE, TINY_SDXL,
                        TINY_Z_IMAGE, LTXAV_23, LTXAV_AUDIO_BINS, LTXAV_AUDIO_CHANNELS, build,
                        flat_latent, flux_conditioning, sample, text_conditioning)

TEXT = 5  # text tokens in every tiny conditioning
SAGE = "kernel"


@dataclasses.dataclass(frozen=True)
class Case:
    family: str
    config_class: str            # attribute of comfy.supported_models
    unet_config: dict
    conditioning: Callable[[], list]
    latent_hw: tuple
    channels: int
    min_seq_len: int
    per_step: dict               # SAGE or Reason -> calls in one step (cfg 1: one forward)
    latent: Callable[[], object] | None = None  # replaces the zero latent of latent_hw x channels
    prepare: Callable[[object], None] | None = None  # fills, in the built ModelPatcher, what a checkpoint
    # carries beside the parameters ``build`` draws (a buffer the model leaves uninitialised)


def _patches(h, w, patch):
    return (h // patch) * (w // patch)


FLUX_TOKENS = _patches(8, 8, TINY_FLUX["patch_size"]) + TEXT
FLUX2_TOKENS = _patches(4, 4, TINY_FLUX2["patch_size"]) + FLUX2_MIN_TEXT_TOKENS
QWEN_TOKENS = _patches(8, 8, TINY_QWEN_IMAGE["patch_size"]) + TEXT
Z_IMAGE_IMAGE_TOKENS = _patches(8, 8, TINY_Z_IMAGE["patch_size"])
LTXV_TOKENS = 2 * 4 * 4  # frames x h x w, patch size 1
LTXAV_AUDIO_TOKENS = 10  # audio latent frames (one token each)
# LTX-2's video latent: 2 x 16 x 16 = 512 tokens (patch size 1), so that its self-attention has long keys
# (decide.SHORT_KEYS) as its cross-attention to the 1024 text keys does: one first-call check for both
LTXAV_VIDEO_FHW = (2, 16, 16)
LTXAV_VIDEO_TOKENS = 2 * 16 * 16
# TINY_UNET at a 16x16 latent: level 0 (16x16 = 256 tokens) has a transformer block in input
# block 1 and output blocks 2 and 3 (transformer_depth_output [_, _, 1, 1] at that level), level 1
# (8x8 = 64 tokens) in input block 2, the middle block and output blocks 0 and 1. Every block
# makes one self-attention call and one cross-attention call to the 77-token text.
UNET_LEVEL0_BLOCKS, UNET_LEVEL1_BLOCKS = 3, 4
UNET_THRESHOLD = 78  # above the 77 text tokens and the 64 level-1 tokens, below level 0's 256

CASES = [
    Case("FLUX.1", "Flux", TINY_FLUX, flux_conditioning, (8, 8), 16, FLUX_TOKENS,
         # one joint call per double-stream and per single-stream block
         {SAGE: TINY_FLUX["depth"] + TINY_FLUX["depth_single_blocks"]}),
    Case("FLUX.2", "Flux2", TINY_FLUX2,
         lambda: text_conditioning(guidance=3.5, pooled_output=torch.zeros(1, 32)), (4, 4), 128, FLUX2_TOKENS,
         {SAGE: TINY_FLUX2["depth"] + TINY_FLUX2["depth_single_blocks"]}),
    Case("Qwen-Image", "QwenImage", TINY_QWEN_IMAGE, text_conditioning, (1, 8, 8), 16, QWEN_TOKENS,
         # one joint call per transformer block
         {SAGE: TINY_QWEN_IMAGE["num_layers"]}),
    Case("Z-Image", "ZImage", TINY_Z_IMAGE,
         # a boolean mask: ComfyUI 0.3.75 hands a long one to SDPA, which CUDA's SDPA rejects
         lambda: text_conditioning(attention_mask=torch.tensor([[True, True, True, False, False]])), (8, 8), 16,
         Z_IMAGE_IMAGE_TOKENS,
         # noise refiner over the image tokens and main layers over text + image qualify; the
         # context refiner sees the 5 text tokens alone (and their mask, which masks)
         {SAGE: TINY_Z_IMAGE["n_refiner_layers"] + TINY_Z_IMAGE["n_layers"],
          Reason.TOO_SHORT: TINY_Z_IMAGE["n_refiner_layers"]}),
    Case("LTX-Video", "LTXV", TINY_LTXV,
         lambda: text_conditioning(attention_mask=torch.ones(1, TEXT), frame_rate=25), (2, 4, 4), 128, LTXV_TOKENS,
         # per block: video self-attention qualifies; cross-attention to 5 text tokens is short
         {SAGE: TINY_LTXV["num_layers"], Reason.TOO_SHORT: TINY_LTXV["num_layers"]}),
    # LTX-2 and LTX-2.3, as ComfyUI 0.33's text encoder hands them the prompt (5 tokens, unprocessed:
    # the model's connectors extend it to LTXAV_TEXT_KEYS = 1024 before the steps, without the scope).
    # Per block six calls: video self-attention (512 tokens) and the video's cross-attention to the
    # 1024 text keys qualify; audio self-attention (10 tokens), the audio's cross-attention to the
    # text (10 queries), audio-to-video (10 keys) and video-to-audio (10 queries) are short.
    Case("LTX-2", "LTXAV", TINY_LTXAV,
         lambda: text_conditioning(dim=TINY_LTXAV["caption_channels"], unprocessed_ltxav_embeds=True, frame_rate=25),
         LTXAV_VIDEO_FHW, 128, LTXAV_VIDEO_TOKENS,
         {SAGE: 2 * TINY_LTXAV["num_layers"], Reason.TOO_SHORT: 4 * TINY_LTXAV["num_layers"]},
         latent=lambda: ltxav_latent(LTXAV_VIDEO_FHW, LTXAV_AUDIO_TOKENS)),
    Case("LTX-2", "LTXAV", LTXAV_23,  # the text as its dual projection gives it: video then audio widths
         lambda: text_conditioning(dim=LTXAV_23["cross_attention_dim"] + LTXAV_23["audio_cross_attention_dim"],
                                   unprocessed_ltxav_embeds=True, frame_rate=25),
         LTXAV_VIDEO_FHW, 128, LTXAV_VIDEO_TOKENS,
         {SAGE: 2 * LTXAV_23["num_layers"], Reason.TOO_SHORT: 4 * LTXAV_23["num_layers"]},
         latent=lambda: ltxav_latent(LTXAV_VIDEO_FHW, LTXAV_AUDIO_TOKENS)),
    Case("SDXL", "SDXL", TINY_SDXL,
         lambda: text_conditioning(tokens=77, pooled_output=torch.zeros(1, 32), width=128, height=128), (16, 16), 4,
         UNET_THRESHOLD,
         {SAGE: UNET_LEVEL0_BLOCKS,
          Reason.TOO_SHORT: UNET_LEVEL1_BLOCKS + (UNET_LEVEL0_BLOCKS + UNET_LEVEL1_BLOCKS)}),
]


@dataclasses.dataclass(frozen=True)
class RealWidths:
    """A family at its released checkpoint's widths, fewer blocks (benchmarks on the GPU)."""
    config: dict
    conditioning: Callable[[], list]
    latent_hw: tuple             # a 1024-pixel-class image (LTX: 1248x704, 121 or 97 frames)
    channels: int
    latent: Callable[[], object] | None = None


# Real widths (ComfyUI's model_detection values for the released checkpoints), fewer blocks.
REAL_WIDTHS = {
    "FLUX.1": RealWidths(
        dict(TINY_FLUX, vec_in_dim=768, context_in_dim=4096, hidden_size=3072, mlp_ratio=4.0, num_heads=24,
             depth=1, depth_single_blocks=1, axes_dim=[16, 56, 56]),
        lambda: text_conditioning(tokens=512, dim=4096, pooled_output=torch.zeros(1, 768), guidance=3.5),
        (128, 128), 16),
    "FLUX.2": RealWidths(
        dict(TINY_FLUX2, context_in_dim=15360, hidden_size=6144, num_heads=48, depth=1, depth_single_blocks=1,
             axes_dim=[32, 32, 32, 32]),
        lambda: text_conditioning(tokens=512, dim=15360, guidance=4.0, pooled_output=torch.zeros(1, 768)),
        (64, 64), 128),
    "Qwen-Image": RealWidths(
        dict(TINY_QWEN_IMAGE, num_layers=1, attention_head_dim=128, num_attention_heads=24, joint_attention_dim=3584,
             axes_dims_rope=(16, 56, 56)),
        lambda: text_conditioning(tokens=256, dim=3584), (1, 166, 166), 16),
    "Z-Image": RealWidths(
        dict(TINY_Z_IMAGE, dim=3840, n_layers=1, n_refiner_layers=1, n_heads=30, n_kv_heads=30, multiple_of=256,
             cap_feat_dim=2560, axes_dims=[32, 48, 48], axes_lens=[1536, 512, 512]),
        lambda: text_conditioning(tokens=256, dim=2560, attention_mask=torch.ones(1, 256, dtype=torch.long)),
        (128, 128), 16),
    "LTX-Video": RealWidths(
        dict(TINY_LTXV, cross_attention_dim=2048, attention_head_dim=64, num_attention_heads=32, caption_channels=4096,
             num_layers=1),
        lambda: text_conditioning(tokens=128, dim=4096, attention_mask=torch.ones(1, 128), frame_rate=25),
        (13, 16, 24), 128),
    # LTX-2 19B's widths at 1248x704, 121 frames: a 16 x 22 x 39 video latent (13728 tokens) and,
    # at about 25 audio latent frames a second, 121 audio tokens.
    "LTX-2": RealWidths(  # ComfyUI 0.33's text path: the prompt unprocessed, the model's connectors pad it to 1024
        dict(TINY_LTXAV, cross_attention_dim=4096, audio_cross_attention_dim=2048, num_attention_heads=32,
             audio_num_attention_heads=32, caption_channels=3840, connector_num_attention_heads=30,
             connector_attention_head_dim=128, num_layers=1),
        lambda: text_conditioning(tokens=128, dim=3840, unprocessed_ltxav_embeds=True, frame_rate=25),
        (16, 22, 39), 128, lambda: ltxav_latent((16, 22, 39), 121)),
    "SDXL": RealWidths(
        dict(TINY_SDXL, model_channels=320, channel_mult=[1, 2, 4], num_res_blocks=[1, 1, 1],
             transformer_depth=[0, 1, 1], transformer_depth_output=[0, 0, 1, 1, 1, 1], transformer_depth_middle=1,
             context_dim=2048, adm_in_channels=2816),
        lambda: text_conditioning(tokens=77, dim=2048, pooled_output=torch.zeros(1, 1280), width=1024, height=1024),
        (128, 128), 4),
}


# The released checkpoints' depth, for per-step figures at full depth (``--depth full``).
FULL_DEPTH = {
    "FLUX.1": dict(depth=19, depth_single_blocks=38),
    "FLUX.2": dict(depth=8, depth_single_blocks=48),
    "Qwen-Image": dict(num_layers=60),
    "Z-Image": dict(n_layers=30, n_refiner_layers=2),
    "LTX-Video": dict(num_layers=28),
    "LTX-2": dict(num_layers=48),
    "SDXL": dict(num_res_blocks=[2, 2, 2], transformer_depth=[0, 0, 2, 2, 10, 10], transformer_depth_middle=10,
                 transformer_depth_output=[0, 0, 0, 2, 2, 2, 10, 10, 10]),
}
# Latents of a 1024² and a 2048² image per family (FLUX.2: 16x down, patch 1; Qwen-Image: one frame).
SIZES = {
    "FLUX.1": {1024: (128, 128), 2048: (256, 256)}, "FLUX.2": {1024: (64, 64), 2048: (128, 128)},
    "Qwen-Image": {1024: (1, 128, 128), 2048: (1, 256, 256)}, "Z-Image": {1024: (128, 128), 2048: (256, 256)},
    "SDXL": {1024: (128, 128), 2048: (256, 256)},
}


# Benchmark models that are a family's other checkpoint: name -> (family, its config class, what its
# tiny config (--small) changes in the family's: here the 5B's 48 latent channels).
BENCH_MODELS = {"Wan 2.2 5B": ("Wan", "WAN22_T2V", dict(in_dim=48, out_dim=48))}


def bench_model(name: str, size: int | None, depth: str, small: bool, dtype, device):
    """(model, conditioning, latent_hw, channels, latent) for a benchmark of a family (or a model of
    BENCH_MODELS): the tiny test config (``small``) or the released widths at ``depth`` ("full", or
    a number of blocks as in REAL_WIDTHS), at ``size`` where it has sizes (else its own latent)."""
    family, config_class, tiny = BENCH_MODELS.get(name, (name, None, {}))
    case = next(c for c in CASES if c.family == family)
    w = widths(case, small) if small or name == family else REAL_WIDTHS[name]
    if small and tiny:
        w = dataclasses.replace(w, config=dict(w.config, **tiny), channels=tiny.get("out_dim", w.channels))
    config = dict(w.config, **(FULL_DEPTH.get(name, {}) if depth == "full" and not small else {}))
    latent_hw = w.latent_hw if small or size is None else SIZES.get(name, {}).get(size, w.latent_hw)
    model = build(getattr(comfy.supported_models, config_class or case.config_class), config, dtype=dtype,
                  device=device, std=0.2 if small else 0.02)
    if case.prepare is not None:
        case.prepare(model)
    return model, w.conditioning, latent_hw, w.channels, w.latent


def ltxav_latent(video_fhw, audio_frames):
    """Video and audio latents nested the way LTXVConcatAVLatent hands them to the sampler."""
    import comfy.nested_tensor
    return comfy.nested_tensor.NestedTensor((
        torch.zeros(1, TINY_LTXAV["in_channels"], *video_fhw),
        torch.zeros(1, LTXAV_AUDIO_CHANNELS, audio_frames, LTXAV_AUDIO_BINS)))


from .cases_dit import DIT_CASES, DIT_FULL_DEPTH, DIT_SIZES, DIT_WIDTHS  # noqa: E402 - they build on Case
from .cases_video import VIDEO_CASES, VIDEO_FULL_DEPTH, VIDEO_SIZES, VIDEO_WIDTHS  # noqa: E402

from . import cases_image_2026, cases_pixel_and_omni, cases_video_2026  # noqa: E402

CASES += VIDEO_CASES + DIT_CASES
REAL_WIDTHS.update(VIDEO_WIDTHS, **DIT_WIDTHS)
FULL_DEPTH.update(VIDEO_FULL_DEPTH, **DIT_FULL_DEPTH)
SIZES.update(VIDEO_SIZES, **DIT_SIZES)
for _group in (cases_image_2026, cases_pixel_and_omni, cases_video_2026):  # families of ComfyUI after 0.3.75
    CASES += _group.CASES
    REAL_WIDTHS.update(_group.WIDTHS)
    FULL_DEPTH.update(_group.FULL_DEPTH)
    SIZES.update(_group.SIZES)


# The ComfyUI releases the suite runs on (scripts/test.sh, scripts/test-comfyui-0.33.sh; .ci/run runs both).
TEST_HOSTS = ("0.3.75", "0.33.0")


def release(text: str) -> tuple[int, ...]:
    """A ComfyUI version ("0.33.0") as numbers to compare."""
    return tuple(int(part) for part in text.split(".")[:3])


def release_adding(name: str) -> str | None:
    """The ComfyUI release that added ``name`` (a comfy.supported_models class, or a diffusion model's
    "module.Class"), as the families that serve it declare it (patches/families); None where none names it."""
    serving = [family for family in REGISTRY.values()
               if name in family.config_classes or name in family.diffusion_models
               or any(name in names for names in family.added_in.values())]
    return min((family.release_with(name) for family in serving), key=release, default=None)


def oldest_comfyui(family: str) -> str:
    """The ComfyUI release that added ``family`` (a family name): its declaration's ``comfyui``."""
    return REGISTRY[family].comfyui


def lacking_class(config_class: str) -> str | None:
    """Why this ComfyUI cannot build a comfy.supported_models.``config_class`` model: the release that added
    the class; None where this ComfyUI has it."""
    if hasattr(comfy.supported_models, config_class):
        return None
    added = release_adding(config_class)
    if added is None:
        return (f"this ComfyUI lacks comfy.supported_models.{config_class}, and no family declares the release "
                f"that added it")
    return f"needs ComfyUI {added} or newer: comfy.supported_models.{config_class} was added there"


def lacking(case: Case) -> str | None:
    """Why this ComfyUI cannot build ``case`` (the class it lacks and the release that added it), or None."""
    return lacking_class(case.config_class)


def needs_class(config_class: str):
    """comfy.supported_models.``config_class``; where this ComfyUI lacks it, the test skips naming the release
    that added it."""
    why = lacking_class(config_class)
    if why:
        pytest.skip(why)
    return getattr(comfy.supported_models, config_class)


def widths(case: Case, small: bool) -> RealWidths:
    """The benchmarks' model: the tiny test config (``small``) or the released widths."""
    if small:
        return RealWidths(case.unet_config, case.conditioning, case.latent_hw, case.channels, case.latent)
    return REAL_WIDTHS[case.family]


def model_of(case: Case):
    model = build(needs_class(case.config_class), case.unet_config)
    if case.prepare is not None:
        case.prepare(model)
    return model


def sample_case(model, case: Case, **kwargs):
    """The sampled latent; a nested one (LTX-2's video + audio) flattened into one tensor."""
    return flat_latent(sample(model, case.conditioning(), latent_hw=case.latent_hw, channels=case.channels,
                              latent=case.latent() if case.latent else None, **kwargs))


def routed_step(session, case: Case, settings=None, **declared):
    """(plain output, scoped output, the kernel double) of one step of ``case``, unscoped and then scoped
    with ``settings`` (the case's threshold by default) on a kernel double of the ``declared`` head sizes,
    masks...; the family the Scope recognised must be the case's."""
    from sage_attention_scope.patches import Settings, scope_for_family
    from .doubles import RecordingKernel, make_kernel, registered
    model = model_of(case)
    plain = sample_case(model, case)
    assert torch.isfinite(plain).all()  # else no comparison with it means anything
    kernel = RecordingKernel()
    settings = settings or Settings(min_seq_len=case.min_seq_len)
    with registered(session, make_kernel("double", kernel, **declared)):
        scoped, found = scope_for_family(model, dataclasses.replace(settings, kernel="double"), session)
        assert found.opens and found.family.name == case.family
        routed = sample_case(scoped, case)
    return plain, routed, kernel


def routing_table(counts: dict) -> dict:
    table = {Reason(r): n for r, n in counts["declined"].items()}
    if counts["kernel"]:
        table[SAGE] = counts["kernel"]
    return table


