"""The attention calls of each family's tiny model, as the user guide's call table shows them.

Each case of families.CASES runs one step through the Scope on a kernel double with every length let
through (min_seq_len 1: a tiny model's calls are all short), so that a call stays on SDPA only for what
it is (a mask the kernel cannot take, the model's opt-out, ...). The run reads back each call's query
and key tokens and head size: the kernel double records the calls it ran; an override set on the model
before the Scope (as another node's would be) receives every call the Scope declines, and the Status
counters say why. The kinds declared here name those calls by their tokens in the tiny model and give
their tokens at the family's usual size, where the automatic floor (``Settings.floors``) decides what
the tiny run cannot: a call under it stays on SDPA (``too_short``) whatever else it is.

A run's call that no kind names, or a kind no call of the run has, is an error: the declarations follow
the models as this ComfyUI builds them. scripts/write_docs.py writes the table; tests/test_call_sites.py
holds it against a run of each case.
"""
from __future__ import annotations

import collections
import dataclasses
import re
from typing import Optional

from sage_attention_scope.patches import Reason
from .families import (CASES, FLUX2_TOKENS, FLUX_TOKENS, LTXAV_AUDIO_TOKENS, LTXAV_VIDEO_TOKENS, LTXV_TOKENS,
                       QWEN_TOKENS, TEXT, Case, lacking, model_of, sample_case)  # first: it loads the cases modules
from . import cases_image_2026 as image_2026
from . import cases_pixel_and_omni as pixel_and_omni
from . import cases_video as video
from . import cases_video_2026 as video_2026
from .cases_dit import CHROMA_TOKENS, HIDREAM_TOKENS, IMAGE_TOKENS, SD3_TOKENS
from .models import FLUX2_MIN_TEXT_TOKENS, LTXAV_TEXT_KEYS

OVERRIDE_OPTION = "optimized_attention_override"  # ComfyUI's transformer_options key for an attention override


@dataclasses.dataclass(frozen=True)
class CallKind:
    """One kind of attention call a case's model makes."""
    name: str
    tiny: tuple[int, int]   # (query, key) tokens in the case's tiny model: how the run's calls are told apart
    usual: tuple[int, int]  # (query, key) tokens at the family's usual size


@dataclasses.dataclass(frozen=True)
class Sites:
    size: str                       # the usual size the kinds' tokens are counted at
    kinds: tuple[CallKind, ...]
    head_sizes: tuple[tuple[int, int], ...] = ()  # (tiny, released) where the tiny model's head size is not the
    #                                               released one (most keep it)

    def released_head_size(self, tiny: int) -> int:
        for small, released in self.head_sizes:
            if small == tiny:
                return released
        return tiny


@dataclasses.dataclass(frozen=True)
class Row:
    """One line of the call table, as one ComfyUI saw it for one model class."""
    family: str
    model: str      # the case's comfy.supported_models class
    call: str
    tokens: str
    route: str
    why: str


# -- the usual sizes ------------------------------------------------------------------------------
IMAGE_1024 = 64 * 64  # a 1024² image: 8x down in 2 x 2 patches, 16x down in 1, or 16-pixel patches
PROMPT = 128          # a prompt's tokens where the text encoder does not pad it
WAN_VIDEO = video.wan_tokens((21, 60, 104))  # 832x480, 81 frames
WAN_FRAME = video.wan_tokens((1, 60, 104))
WAN_SIZE = "832×480, 81 frames"
SCAIL = video.wan_tokens((22, 60, 104)) + video.wan_tokens((21, 30, 52))  # reference + video, pose at half size
UMT5, CLIP, TWO_CLIPS = video.WAN_TEXT, video.WAN_CLIP, 2 * video.WAN_CLIP
LTX2_VIDEO, LTX2_AUDIO = 16 * 22 * 39, 121  # 1248x704, 121 frames: the video latent, an audio token a frame
HV_VIDEO, HV_TEXT, HV_PROMPT = 19 * 30 * 53, 256, 40  # 848x480, 73 frames; the LLaMA text padded to 256
HV15_VIDEO, GLYPHS = 31 * 30 * 53, 64  # 480p, 121 frames; byT5 glyph tokens
K5_VIDEO = 31 * 32 * 48                # 768x512, 121 frames
COG_VIDEO, COG_15_VIDEO, COG_TEXT = 13 * 30 * 45, 7 * 30 * 45, video_2026.COG_TEXT  # 720x480, 49 frames
MINIMAX_VIDEO, MINIMAX_AUDIO = 37 * 24 * 42, 2 * 207  # 1344x768, 124 frames; two rows an audio frame
HIDREAM_O1_PATCHES, HIDREAM_O1_TEXT = 64 * 64, 3 + 100 + 5 + 2  # 2048² in 32-pixel patches; a 100-word prompt
PID_PATCHES = 128 * 128  # 2048² in 16-pixel patches


def _text_and_image(text: int, image: int = IMAGE_1024) -> tuple[int, int]:
    return text + image, text + image


def _joint(tiny: int, usual_text: int, name="joint attention, text + image tokens") -> CallKind:
    return CallKind(name, (tiny, tiny), _text_and_image(usual_text))


def _lumina_like(text_tokens: int, text: int, name_of_text: str) -> tuple[CallKind, ...]:
    """The NextDiT layers (Lumina 2, Z-Image, OmniGen2): text refiner, image refiner, then both."""
    return (CallKind(f"context-refiner layers: the {name_of_text} alone", (text_tokens, text_tokens), (text, text)),
            CallKind("noise-refiner layers: the image tokens", (IMAGE_TOKENS, IMAGE_TOKENS), (IMAGE_1024, IMAGE_1024)),
            CallKind("main layers: joint text + image attention", (text_tokens + IMAGE_TOKENS,) * 2,
                     _text_and_image(text)))


def _wan(self_tiny: int, text_tiny: int, video_tokens: int = WAN_VIDEO, clip_keys: Optional[int] = None,
         self_name: str = "video self-attention") -> tuple[CallKind, ...]:
    """A Wan block: self-attention, the text cross-attention and, where the model takes an image, the CLIP one."""
    kinds = (CallKind(self_name, (self_tiny, self_tiny), (video_tokens, video_tokens)),
             CallKind("cross-attention to the text (UMT5, 512 tokens)", (self_tiny, text_tiny), (video_tokens, UMT5)))
    if clip_keys is None:
        return kinds
    name = "cross-attention to the CLIP image" if clip_keys == CLIP else "cross-attention to two CLIP images"
    return kinds + (CallKind(name, (self_tiny, clip_keys), (video_tokens, clip_keys)),)


def _hunyuan(joint_tiny: tuple[int, int], joint: tuple[int, int], refiner_tiny: int) -> tuple[CallKind, ...]:
    return (CallKind("text token refiner (2 blocks): the text alone", (refiner_tiny, refiner_tiny), (HV_TEXT, HV_TEXT)),
            CallKind("joint attention, image + text (double- and single-stream blocks)", joint_tiny, joint))


def _kandinsky(visual_tiny: int, visual: int) -> tuple[CallKind, ...]:
    return (CallKind("text blocks: self-attention over the prompt alone", (TEXT, TEXT), (PROMPT, PROMPT)),
            CallKind("visual blocks: self-attention over the image / video tokens", (visual_tiny, visual_tiny),
                     (visual, visual)),
            CallKind("visual blocks: cross-attention to the prompt", (visual_tiny, TEXT), (visual, PROMPT)))


# HunyuanVideo's tiny prompt is padded (its padding sliced off the keys) where this ComfyUI puts the text last
HV_TINY_PADDING = video.HV_PADDING if video.hunyuan_text_last() else 0
SDXL_LEVELS = ((16 * 16, "64²", 64 * 64), (8 * 8, "32²", 32 * 32))  # the tiny UNet's levels, SDXL's at 1024²
ANIMATE2_SLOTS = video.ANIMATE2_LATENT[0] * video.ANIMATE2_FRAME  # the reference slot and the frames
ANIMATE2_POSE = (video.ANIMATE2_LATENT[0] - 1) * video.ANIMATE2_FRAME
WAN_SLOTS = 22 * WAN_FRAME
TINY_32_IS_128 = ((32, 128),)  # FLUX's tiny config and those built like it: 2 heads of 32, released 128

# (family, config class) -> what its case's calls are. Kinds that share their tiny tokens share their route.
SITES: dict[tuple[str, str], Sites] = {
    ("FLUX.1", "Flux"): Sites("1024², the T5 text padded to 256 tokens", (
        _joint(FLUX_TOKENS, 256, "joint attention, text + image (double- and single-stream blocks)"),),
        head_sizes=TINY_32_IS_128),
    ("FLUX.2", "Flux2"): Sites("1024², the text padded to 512 tokens", (
        CallKind("joint attention, text + image (double- and single-stream blocks)", (FLUX2_TOKENS, FLUX2_TOKENS),
                 _text_and_image(FLUX2_MIN_TEXT_TOKENS)),), head_sizes=TINY_32_IS_128),
    ("Qwen-Image", "QwenImage"): Sites("1024², a 128-token prompt", (_joint(QWEN_TOKENS, PROMPT),),
                                       head_sizes=TINY_32_IS_128),
    ("Z-Image", "ZImage"): Sites("1024², a 128-token prompt", _lumina_like(TEXT, PROMPT, "Qwen3 text"),
                                 head_sizes=((64, 128),)),
    ("LTX-Video", "LTXV"): Sites("768×512, 97 frames, the T5 text padded to 128 tokens", (
        CallKind("video self-attention", (LTXV_TOKENS, LTXV_TOKENS), (13 * 16 * 24, 13 * 16 * 24)),
        CallKind("cross-attention to the text", (LTXV_TOKENS, TEXT), (13 * 16 * 24, 128))), head_sizes=((32, 64),)),
    ("LTX-2", "LTXAV"): Sites("1248×704, 121 frames, the text 1024 tokens with the connectors' registers", (
        CallKind("video self-attention", (LTXAV_VIDEO_TOKENS,) * 2, (LTX2_VIDEO, LTX2_VIDEO)),
        CallKind("the video's cross-attention to the text", (LTXAV_VIDEO_TOKENS, LTXAV_TEXT_KEYS),
                 (LTX2_VIDEO, LTXAV_TEXT_KEYS)),
        CallKind("audio self-attention", (LTXAV_AUDIO_TOKENS,) * 2, (LTX2_AUDIO, LTX2_AUDIO)),
        CallKind("the audio's cross-attention to the text", (LTXAV_AUDIO_TOKENS, LTXAV_TEXT_KEYS),
                 (LTX2_AUDIO, LTXAV_TEXT_KEYS)),
        CallKind("the video's queries to the audio's keys", (LTXAV_VIDEO_TOKENS, LTXAV_AUDIO_TOKENS),
                 (LTX2_VIDEO, LTX2_AUDIO)),
        CallKind("the audio's queries to the video's keys", (LTXAV_AUDIO_TOKENS, LTXAV_VIDEO_TOKENS),
                 (LTX2_AUDIO, LTX2_VIDEO)))),
    ("SDXL", "SDXL"): Sites("1024²", tuple(
        kind for tiny, level, usual in SDXL_LEVELS for kind in (
            CallKind(f"self-attention at the {level} level", (tiny, tiny), (usual, usual)),
            CallKind(f"cross-attention to the 77-token text at the {level} level", (tiny, 77), (usual, 77))))),
    ("Wan", "WAN21_T2V"): Sites(WAN_SIZE, _wan(video.WAN_THRESHOLD, UMT5)),
    ("Wan", "WAN21_I2V"): Sites(WAN_SIZE, _wan(video.WAN_THRESHOLD, UMT5, clip_keys=CLIP)),
    ("Wan", "WAN21_Vace"): Sites(WAN_SIZE, _wan(video.WAN_THRESHOLD, UMT5)),  # its VACE blocks make the same calls
    ("Wan", "WAN21_CausalAR_T2V"): Sites(WAN_SIZE, _wan(video.WAN_THRESHOLD, UMT5)),  # under an ordinary sampler
    ("Wan", "WAN21_FlowRVS"): Sites(WAN_SIZE, _wan(video.WAN_THRESHOLD, UMT5)),
    ("Wan", "WAN21_SCAIL"): Sites(WAN_SIZE, _wan(
        video.SCAIL_TOKENS, UMT5, SCAIL, CLIP, "self-attention over the reference frame, the video and the pose")),
    ("Wan", "WAN21_SCAIL2"): Sites(WAN_SIZE, _wan(
        video.SCAIL_TOKENS, UMT5, SCAIL, CLIP, "self-attention over the reference frame, the video and the pose")),
    ("Wan", "WAN22_WanDancer"): Sites(WAN_SIZE, _wan(video.WAN_THRESHOLD, UMT5, clip_keys=TWO_CLIPS)),
    ("Wan", "WAN_Animate2"): Sites(WAN_SIZE, (
        CallKind("pose branch: self-attention over the pose video", (ANIMATE2_POSE,) * 2, (WAN_VIDEO, WAN_VIDEO)),
        CallKind("pose branch: cross-attention to the text", (ANIMATE2_POSE, UMT5), (WAN_VIDEO, UMT5)),
        CallKind("pose branch: cross-attention to the CLIP image", (ANIMATE2_POSE, CLIP), (WAN_VIDEO, CLIP)),
        CallKind("self-attention of the reference slot to every frame", (video.ANIMATE2_FRAME, ANIMATE2_SLOTS),
                 (WAN_FRAME, WAN_SLOTS)),
        CallKind("self-attention of each frame to every frame and its pose frame",
                 (video.ANIMATE2_FRAME, ANIMATE2_SLOTS + video.ANIMATE2_FRAME), (WAN_FRAME, WAN_SLOTS + WAN_FRAME)),
        CallKind("cross-attention to the text", (ANIMATE2_SLOTS, UMT5), (WAN_SLOTS, UMT5)),
        CallKind("cross-attention to the CLIP image", (ANIMATE2_SLOTS, CLIP), (WAN_SLOTS, CLIP)))),
    ("HunyuanVideo", "HunyuanVideo"): Sites(
        f"848×480, 73 frames, a {HV_PROMPT}-token prompt in the LLaMA text padded to {HV_TEXT} tokens",
        _hunyuan((video.HV_JOINT, video.HV_JOINT - HV_TINY_PADDING), (HV_VIDEO + HV_TEXT, HV_VIDEO + HV_PROMPT),
                 video.HV_TEXT)),
    ("HunyuanVideo 1.5", "HunyuanVideo15"): Sites(
        f"480p, 121 frames, a {HV_TEXT}-token prompt and {GLYPHS} glyph tokens",
        _hunyuan((video.HV15_JOINT, video.HV15_JOINT), (HV15_VIDEO + HV_TEXT + GLYPHS,) * 2, TEXT)),
    ("HunyuanImage 2.1", "HunyuanImage21"): Sites(
        f"2048², a {HV_TEXT}-token prompt and {GLYPHS} glyph tokens",
        _hunyuan((video.HI21_JOINT, video.HI21_JOINT), (IMAGE_1024 + HV_TEXT + GLYPHS,) * 2, TEXT)),
    ("Chroma", "Chroma"): Sites("1024², a 128-token prompt (T5, not padded)", (
        _joint(CHROMA_TOKENS, PROMPT, "joint attention, text + image (double- and single-stream blocks)"),),
        head_sizes=TINY_32_IS_128),
    ("HiDream", "HiDream"): Sites("1024², T5 and two Llama layers' text of 128 tokens each", (
        CallKind("joint attention, image + T5 + Llama tokens (double- and single-stream blocks)",
                 (HIDREAM_TOKENS, HIDREAM_TOKENS), _text_and_image(3 * 128)),), head_sizes=TINY_32_IS_128),
    ("Lumina 2", "Lumina2"): Sites("1024², a 256-token prompt with its system prompt",
                                   _lumina_like(TEXT, 256, "Gemma 2 text")),
    ("Cosmos Predict2", "CosmosT2IPredict2"): Sites("1024², the T5 text padded to 512 tokens", (
        CallKind("self-attention over the image tokens", (IMAGE_TOKENS, IMAGE_TOKENS), (IMAGE_1024, IMAGE_1024)),
        CallKind("cross-attention to the text", (IMAGE_TOKENS, TEXT), (IMAGE_1024, 512)))),
    ("Omnigen2", "Omnigen2"): Sites("1024², a 128-token prompt", _lumina_like(TEXT, PROMPT, "Qwen2.5-VL text")),
    ("SD3", "SD3"): Sites("1024², CLIP-L/G's 77 and T5's 77 text tokens", (
        _joint(SD3_TOKENS, 2 * 77),
        CallKind("SD3.5 Medium: image-only self-attention (x_block_self_attn_layers)", (IMAGE_TOKENS, IMAGE_TOKENS),
                 (IMAGE_1024, IMAGE_1024)))),
    ("Krea 2", "Krea2"): Sites("1024², a 128-token prompt", (
        _joint(image_2026.JOINT_TOKENS, PROMPT),
        CallKind("text fusion, layerwise blocks: each text token's tapped layer features",
                 (image_2026.TINY_KREA2["txtlayers"],) * 2, (12, 12)),
        CallKind("text fusion, refiner blocks: the text alone", (TEXT, TEXT), (PROMPT, PROMPT)))),
    ("LongCat-Image", "LongCatImage"): Sites("1024², the text padded to 512 tokens", (
        _joint(image_2026.JOINT_TOKENS, 512, "joint attention, text + image (double- and single-stream blocks)"),)),
    ("JoyImage", "JoyImage"): Sites("1024², a 128-token prompt", (_joint(image_2026.JOINT_TOKENS, PROMPT),)),
    ("Lens", "Lens"): Sites("1024², a 128-token prompt", (_joint(image_2026.JOINT_TOKENS, PROMPT),)),
    ("Mage-Flow", "MageFlow"): Sites("1024², a 128-token prompt", (_joint(image_2026.JOINT_TOKENS, PROMPT),)),
    ("HiDream-O1", "HiDreamO1"): Sites("2048², a 100-word prompt in its chat template", (
        CallKind("the generated tokens (timestep token and patches) to every key",
                 (pixel_and_omni.HIDREAM_O1_QUERY, pixel_and_omni.HIDREAM_O1_KEYS),
                 (1 + HIDREAM_O1_PATCHES, HIDREAM_O1_TEXT + HIDREAM_O1_PATCHES)),)),
    ("PixelDiT", "PixelDiTT2I"): Sites("1024², Gemma 2 text of 300 tokens", (
        _joint(pixel_and_omni.PIXEL_THRESHOLD, 300, "patch blocks: joint attention, text + image patches"),
        CallKind("pixel blocks: self-attention over the image patches", (pixel_and_omni.PIXEL_PATCHES,) * 2,
                 (IMAGE_1024, IMAGE_1024)))),
    ("PiD", "PiD"): Sites("2048² (a 512² image's latent decoded), Gemma 2 text of 300 tokens", (
        CallKind("patch blocks: joint attention, text + image patches", (pixel_and_omni.PIXEL_THRESHOLD,) * 2,
                 (300 + PID_PATCHES, 300 + PID_PATCHES)),
        CallKind("pixel blocks: self-attention over the image patches", (pixel_and_omni.PIXEL_PATCHES,) * 2,
                 (PID_PATCHES, PID_PATCHES)))),
    ("Z-Image pixel space", "ZImagePixelSpace"): Sites("1024², a 256-token prompt (padded to a multiple of 32)", (
        CallKind("context-refiner layers: the Qwen3 text alone", (pixel_and_omni.Z_IMAGE_PIXEL_TEXT,) * 2, (256, 256)),
        CallKind("noise-refiner layers: the image patches", (pixel_and_omni.Z_IMAGE_PIXEL_IMAGE,) * 2,
                 (IMAGE_1024, IMAGE_1024)),
        CallKind("main layers: joint text + image attention",
                 (pixel_and_omni.Z_IMAGE_PIXEL_TEXT + pixel_and_omni.Z_IMAGE_PIXEL_IMAGE,) * 2,
                 _text_and_image(256)))),
    ("Boogu", "Boogu"): Sites("1024², a 128-token prompt", (
        CallKind("context-refiner layers: the Qwen3-VL text alone", (TEXT, TEXT), (PROMPT, PROMPT)),
        CallKind("noise-refiner layers: the image tokens", (pixel_and_omni.BOOGU_IMAGE,) * 2, (IMAGE_1024, IMAGE_1024)),
        CallKind("dual-stream layers: image self-attention", (pixel_and_omni.BOOGU_IMAGE,) * 2,
                 (IMAGE_1024, IMAGE_1024)),
        _joint(TEXT + pixel_and_omni.BOOGU_IMAGE, PROMPT, "joint attention, text + image (dual- and single-stream "
                                                          "layers)"))),
    ("Anima", "Anima"): Sites("1024², the adapted text padded to 512 tokens", (
        CallKind("self-attention over the image tokens", (pixel_and_omni.ANIMA_IMAGE,) * 2, (IMAGE_1024, IMAGE_1024)),
        CallKind("cross-attention to the adapted text", (pixel_and_omni.ANIMA_IMAGE, pixel_and_omni.ANIMA_TEXT_KEYS),
                 (IMAGE_1024, pixel_and_omni.ANIMA_TEXT_KEYS)))),
    ("Ideogram 4", "Ideogram4"): Sites("1024², a 256-token prompt", (
        _joint(TEXT + pixel_and_omni.IDEOGRAM4_IMAGE, 256),)),
    ("Kandinsky 5", "Kandinsky5"): Sites("768×512, 121 frames, a 128-token prompt",
                                         _kandinsky(video_2026.K5_TOKENS, K5_VIDEO)),
    ("Kandinsky 5 Image", "Kandinsky5Image"): Sites("1024², a 128-token prompt",
                                                    _kandinsky(video_2026.K5_IMAGE_TOKENS, IMAGE_1024)),
    ("CogVideoX", "CogVideoX_T2V"): Sites("720×480, 49 frames, the T5 text padded to 226 tokens", (
        CallKind("joint attention, text + video", (video_2026.COG_JOINT,) * 2, (COG_TEXT + COG_VIDEO,) * 2),)),
    ("CogVideoX", "CogVideoX_I2V"): Sites("720×480, 49 frames, the T5 text padded to 226 tokens", (
        CallKind("joint attention, text + video", (video_2026.COG_JOINT,) * 2, (COG_TEXT + COG_VIDEO,) * 2),)),
    ("CogVideoX", "CogVideoX_Inpaint"): Sites("720×480, 49 frames (1.5: two frames a token), 226 text tokens", (
        CallKind("joint attention, text + video", (video_2026.COG_15_JOINT,) * 2, (COG_TEXT + COG_15_VIDEO,) * 2),)),
    ("MiniMax H3", "MiniMaxH3"): Sites("1344×768, 124 frames with their audio, a 256-token prompt", (
        CallKind("joint self-attention, text + audio + video", (video_2026.MINIMAX_JOINT,) * 2,
                 (256 + MINIMAX_AUDIO + MINIMAX_VIDEO,) * 2),)),
}


def sites_of(case: Case) -> Sites:
    return SITES[case.family, case.config_class]


# -- a run ------------------------------------------------------------------------------------

def _tokens_of_declined(args: tuple, kwargs: dict) -> tuple[int, int, int]:
    """(query tokens, key tokens, head size) of a call as ComfyUI hands it to an override: q/k are (B, H, N, D)
    where ``skip_reshape``, else (B, N, H*D); the sequence axis is the second-to-last in both."""
    q, k = args[0], args[1]
    heads = args[3] if len(args) > 3 else kwargs["heads"]
    head_dim = q.shape[-1] if kwargs.get("skip_reshape") else q.shape[-1] // heads
    return q.shape[-2], k.shape[-2], head_dim


def tokens_of_kernel_call(call: dict) -> tuple[int, int, int]:
    """The same for a call the kernel double ran: q/k 4-D, (B, H, N, D) in HND, (B, N, H, D) in NHD."""
    axis = 2 if call["layout"] == "HND" else 1
    return call["q"].shape[axis], call["k"].shape[axis], call["q"].shape[-1]


def run_case(case: Case) -> dict[tuple[int, int], set[tuple[Optional[Reason], int]]]:
    """(query, key) tokens -> {(why it stayed on SDPA, None for the kernel; head size)} of one step of ``case``'s
    tiny model through the Scope, every length let through."""
    from sage_attention_scope.nodes.status import payload
    from sage_attention_scope.patches import Session, Settings, scope_for_family
    from .doubles import FakeClock, RecordingKernel, make_kernel, registered
    from .models import DEVICE
    session = Session(store=None, clock=FakeClock())
    model = model_of(case)
    declined = []

    def another_override(func, *args, **kwargs):
        declined.append(_tokens_of_declined(args, kwargs))
        return func(*args, **kwargs)

    model.model_options.setdefault("transformer_options", {})[OVERRIDE_OPTION] = another_override
    kernel = RecordingKernel()
    with registered(session, make_kernel("double", kernel)):
        scoped, found = scope_for_family(model, Settings(kernel="double", min_seq_len=1, routing="always"), session)
        if found.family is None or found.family.name != case.family:
            raise ValueError(f"{case.config_class}: the Scope recognised {found.name}, not {case.family}")
        sample_case(scoped, case)
    sdpa = payload(session)["devices"][DEVICE]["last_generation"]["declined"]
    if len(sdpa) > 1:
        raise ValueError(f"{case.config_class}: calls stayed on SDPA for {sorted(sdpa)}; the run cannot tell "
                         "which call each reason took")
    if sum(sdpa.values()) != len(declined):
        raise ValueError(f"{case.config_class}: {sum(sdpa.values())} calls stayed on SDPA, {len(declined)} reached "
                         "the override the Scope hands them")
    reason = Reason(next(iter(sdpa))) if sdpa else None
    seen = collections.defaultdict(set)
    for q, kv, head_dim in map(tokens_of_kernel_call, kernel.calls):
        seen[q, kv].add((None, head_dim))
    for q, kv, head_dim in declined:
        seen[q, kv].add((reason, head_dim))
    return dict(seen)


def kinds_seen(case: Case, seen: dict, sites: Optional[Sites] = None) -> list[tuple[CallKind, Optional[Reason], int]]:
    """Each kind ``sites`` declares (by default, those of ``case``) with the route and head size its calls had in
    ``case``'s run ``seen``."""
    if sites is None:
        sites = sites_of(case)
    kinds = sites.kinds
    unnamed = sorted(set(seen) - {kind.tiny for kind in kinds})
    if unnamed:
        raise ValueError(f"{case.config_class}: the run made calls of (query, key) tokens {unnamed} that no kind "
                         "in sas_harness/call_sites.py names")
    named = []
    for kind in kinds:
        if kind.tiny not in seen:
            raise ValueError(f"{case.config_class}: no call of the run has {kind.name}'s tiny tokens {kind.tiny}")
        if len(seen[kind.tiny]) > 1:
            raise ValueError(f"{case.config_class}: the calls of {kind.tiny} tokens went apart: {seen[kind.tiny]}")
        reason, head_dim = next(iter(seen[kind.tiny]))
        named.append((kind, reason, head_dim))
    return named


# -- the table --------------------------------------------------------------------------------

def _route(kind: CallKind, reason: Optional[Reason], head_dim: int) -> tuple[str, str]:
    """(route, why) at default settings: the floor first, on the kind's usual tokens (as the router rules on
    lengths before anything else); then what the run said; then the released head size against the kernels
    ``auto`` tries, where the one it tries first on SageAttention's GPUs (sm80 on) decides the route."""
    from sage_attention_scope.patches import Settings, backends
    floor_q, floor_kv = Settings().floors()
    q, kv = kind.usual
    short = []
    if q < floor_q:
        short.append(f"{q} queries, under the {floor_q}-query floor")
    if kv < floor_kv:
        short.append(f"{kv} keys, under the {floor_kv}-key floor")
    if short:
        return f"SDPA (`{Reason.TOO_SHORT.value}`)", "; ".join(short)
    if reason is not None:
        return f"SDPA (`{reason.value}`)", reason.label
    floor = f"not under the floor ({floor_q} queries, {floor_kv} keys)"
    tried = list(dict.fromkeys(name for names in backends.AUTO.values() for name in names))
    declining = [name for name in tried if head_dim not in backends.REGISTRY[name].head_dims]
    if not declining:
        return "kernel", floor
    taking = [name for name in tried if name not in declining]
    sage_gpus = [names for capability, names in backends.AUTO.items() if capability >= (8, 0)]
    if all(names[0] in declining for names in sage_gpus):  # SageAttention's GPUs: no first choice takes it
        return (f"SDPA (`{Reason.HEAD_DIM.value}`)",
                f"head size {head_dim}: {_only(taking)} takes it, where chosen or the only kernel installed")
    return "kernel", f"{floor}; head size {head_dim}: {_listed(declining)} (`{Reason.HEAD_DIM.value}`)"


def _only(names: list[str]) -> str:
    if not names:
        return "no kernel"
    return "only " + ", ".join(names)


def _listed(declining: list[str]) -> str:
    if len(declining) == 1:
        return f"{declining[0]} declines it"
    return f"{', '.join(declining)} decline it"


def rows_of(case: Case, seen: dict) -> list[Row]:
    """The table's lines for ``case`` from its run ``seen`` (run_case)."""
    sites = sites_of(case)
    rows = []
    for kind, reason, head_dim in kinds_seen(case, seen):
        route, why = _route(kind, reason, sites.released_head_size(head_dim))
        rows.append(Row(case.family, case.config_class, kind.name, f"{kind.usual[0]} / {kind.usual[1]} at {sites.size}",
                        route, why))
    return rows


def host_rows() -> list[Row]:
    """The table's lines from a run of every case this ComfyUI can build."""
    return [row for case in CASES if lacking(case) is None for row in rows_of(case, run_case(case))]


def kind_order() -> dict[tuple[str, str], int]:
    """(family, call) -> the place of its first declaration: the table's order within a family."""
    order = {}
    for (family, _), sites in SITES.items():
        for kind in sites.kinds:
            order.setdefault((family, kind.name), len(order))
    return order


HEADER = ("| family | model | attention call | query / key tokens | route | why | run on ComfyUI |\n"
          "|---|---|---|---|---|---|---|")


def render(seen_on: dict[Row, set[str]], release) -> str:
    """The call table: ``seen_on`` maps each line, per model class, to the ComfyUI releases whose run gave it;
    lines alike but for the class, seen on the same releases, are one line naming every class."""
    order = kind_order()
    grouped = collections.defaultdict(list)
    for row, hosts in seen_on.items():
        grouped[row.family, row.call, row.tokens, row.route, row.why, tuple(sorted(hosts, key=release))].append(
            row.model)
    lines = [HEADER]
    for key in sorted(grouped, key=lambda k: (k[0].lower(), order[k[0], k[1]], k[2], k[5])):
        family, call, tokens, route, why, hosts = key
        models = ", ".join(f"`{model}`" for model in sorted(grouped[key]))
        lines.append(f"| {family} | {models} | {call} | {tokens} | {route} | {why} | {', '.join(hosts)} |")
    return "\n".join(lines)


def in_guide(text: str) -> dict[Row, set[str]]:
    """The call table's lines in the user guide's text ``text`` (its generated families block), or none where
    the block holds no call table."""
    block = re.search(r"<!-- generated:families -->\n(.*?)<!-- /generated:families -->", text, re.S)
    if block is None or HEADER not in block.group(1):
        return {}
    return parse(HEADER + block.group(1).split(HEADER, 1)[1].rstrip("\n"))


def parse(table: str) -> dict[Row, set[str]]:
    """``render``'s table read back: each line, per model class, and the releases it names."""
    seen_on = collections.defaultdict(set)
    for line in table.splitlines()[2:]:
        family, models, call, tokens, route, why, hosts = (cell.strip() for cell in line.strip("|").split(" | "))
        for model in models.split(", "):
            seen_on[Row(family, model.strip("`"), call, tokens, route, why)].update(hosts.split(", "))
    return dict(seen_on)
