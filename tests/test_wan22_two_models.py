"""Wan 2.2 A14B's two experts in one graph, through the real server (issue 27): the high-noise model
samples the first step, the low-noise model the rest, each through its own Scope. Both are scoped
and counted apart (the session numbers the second model of the same name), and the first-call
checks are the session's: keyed by device, dtype, head size, key class and kernel, never by the
model, so the second expert re-checks nothing the first established."""
from __future__ import annotations

import collections
import re

import pytest
import torch
from safetensors.torch import load_file

from sage_attention_scope.patches.decide import SHORT_KEYS
from sas_harness import families  # noqa: F401 - imports cases_video after what it builds on
from sas_harness.cases_video import TINY_WAN, WAN_TEXT, wan_tokens
from sas_harness.server import write_tiny_wan

KERNEL = "reference_double"  # tests/server_nodes/sas_test_nodes.py registers it with the server's session
HIGH, LOW = "sas_tiny_wan22_t2v_high_noise.safetensors", "sas_tiny_wan22_t2v_low_noise.safetensors"
TEXT_DIM = 4096  # UMT5-XXL's width: what ComfyUI's Wan model takes (write_tiny_wan)
# EmptyHunyuanLatentVideo (the template's latent node): 16 channels, (length - 1) // 4 + 1 frames at 1/8.
WIDTH = HEIGHT = 64
LENGTH = 5
LATENT = ((LENGTH - 1) // 4 + 1, HEIGHT // 8, WIDTH // 8)  # (2, 8, 8)
VIDEO_TOKENS = wan_tokens(LATENT)                           # 2 x 4 x 4 = 32 (patch 1 x 2 x 2)
HEAD_DIM = TINY_WAN["dim"] // TINY_WAN["num_heads"]          # 128, as model_detection sets num_heads
STEPS, SWITCH = 2, 1  # the high-noise expert samples steps 0..1, the low-noise one 1..2
# Per block and step (cfg 1: one forward) the tiny Wan makes the families' two calls (VIDEO_CASES'
# Wan row): self-attention over the 32 video tokens, and their cross-attention to the 512 text tokens
# (UMT5 pads every prompt to 512; never masked). min_seq_len 32 lets both reach the kernel.
PER_STEP_SAGE = 2 * TINY_WAN["num_layers"]
MIN_SEQ_LEN = VIDEO_TOKENS
# The keys of the first-call checks those calls need: on the server's CPU in fp32, head size 128,
# the self-attention's 32 keys short and the text's 512 long.
CHECK_KEYS = {f"cpu float32 d{HEAD_DIM} {'short' if kv < SHORT_KEYS else 'long'} keys {KERNEL}"
              for kv in (VIDEO_TOKENS, WAN_TEXT)}
NAMES = ["Wan (WAN21_T2V)", "Wan (WAN21_T2V) #2"]  # patches/state/ledger.py Ledger.model_label
NODES = ("UNETLoader", "ModelSamplingSD3", "EmptyHunyuanLatentVideo", "KSamplerAdvanced", "SaveLatent")


def scope(model: list) -> dict:
    return {"class_type": "SageAttentionScope",
            "inputs": {"model": model, "enabled": True, "kernel": KERNEL, "min_seq_len": MIN_SEQ_LEN,
                       "first_call_check": True, "smooth_k": False, "routing": "always", "start_percent": 0.0,
                       "end_percent": 1.0, "first_blocks": -1, "last_blocks": -1}}


def sampler(model: list, latent: list, first: bool) -> dict:
    """KSamplerAdvanced as the template sets it (euler, simple): the first adds the noise and hands on
    what is left of it; the second continues from its step."""
    return {"class_type": "KSamplerAdvanced",
            "inputs": {"model": model, "add_noise": "enable" if first else "disable", "noise_seed": 27,
                       "steps": STEPS, "cfg": 1.0, "sampler_name": "euler", "scheduler": "simple",
                       "positive": ["20", 0], "negative": ["21", 0], "latent_image": latent,
                       "start_at_step": 0 if first else SWITCH, "end_at_step": SWITCH if first else 10000,
                       "return_with_leftover_noise": "enable" if first else "disable"}}


def wan22_prompt() -> dict:
    """ComfyUI's Wan 2.2 A14B text-to-video template (video_wan2_2_14B_t2v, without the LoRA group),
    with a Scope after each expert's ModelSamplingSD3 as the pack's example workflow puts it; the text
    encoder is SASTestConditioning, and a SaveLatent stands where the VAE decode would."""
    return {
        "1": {"class_type": "UNETLoader", "inputs": {"unet_name": HIGH, "weight_dtype": "default"}},
        "2": {"class_type": "ModelSamplingSD3", "inputs": {"model": ["1", 0], "shift": 8.0}},
        "3": scope(["2", 0]),
        "11": {"class_type": "UNETLoader", "inputs": {"unet_name": LOW, "weight_dtype": "default"}},
        "12": {"class_type": "ModelSamplingSD3", "inputs": {"model": ["11", 0], "shift": 8.0}},
        "13": scope(["12", 0]),
        "20": {"class_type": "SASTestConditioning", "inputs": {"tokens": WAN_TEXT, "dim": TEXT_DIM, "seed": 0}},
        "21": {"class_type": "SASTestConditioning", "inputs": {"tokens": WAN_TEXT, "dim": TEXT_DIM, "seed": 1}},
        "30": {"class_type": "EmptyHunyuanLatentVideo",
               "inputs": {"width": WIDTH, "height": HEIGHT, "length": LENGTH, "batch_size": 1}},
        "31": sampler(["3", 0], ["30", 0], first=True),
        "32": sampler(["13", 0], ["31", 0], first=False),
        "40": {"class_type": "SageAttentionStatus", "inputs": {"after": ["32", 0], "reset_counters": False}},
        "41": {"class_type": "SaveLatent", "inputs": {"samples": ["32", 0], "filename_prefix": "sas_wan22/two_models"}},
    }


@pytest.fixture(scope="module")
def wan22(server):
    """The server, with the two experts' files (different seeds) beside the tiny LTX-Video."""
    import comfy.supported_models
    if not hasattr(comfy.supported_models, "WAN21_T2V"):
        pytest.skip("this ComfyUI has no comfy.supported_models.WAN21_T2V (Wan 2.1/2.2)")
    missing = [name for name in NODES if name not in server.get("/object_info")]
    if missing:
        pytest.skip(f"this ComfyUI lacks the Wan 2.2 template's nodes {missing}")
    for name, seed in ((HIGH, 1), (LOW, 2)):
        write_tiny_wan(server.base / "models" / "diffusion_models" / name, seed=seed)
    return server


def test_wan22_a14b_two_experts_are_scoped_counted_apart_and_share_the_checks(wan22):
    entry = wan22.run_prompt(wan22_prompt())
    assert entry["status"]["status_str"] == "success", (entry["status"], wan22.tail())
    status = entry["outputs"]["40"]["sage_attention_status"][0]

    # Both experts scoped, each its own record in this run, its own step's calls on the kernel (each
    # samples one step: SWITCH == STEPS - SWITCH).
    records = {r["model"]: r for r in status["run"]}
    assert sorted(records) == NAMES, status["run"]
    for name, record in records.items():
        assert record["note"] == "scoped", record
        assert record["sampling_ms"] > 0, record
        assert list(record["devices"]) == ["cpu"], record
        counts = record["devices"]["cpu"]
        on_kernel = (counts["kernel"], counts["declined"], counts["faults"])
        assert on_kernel == (PER_STEP_SAGE * SWITCH, {}, {}), (name, counts)
    assert {m["model"] for m in status["models"]} >= set(NAMES)

    # The checks are the session's: one per (device, dtype, head size, key class, kernel), each passed,
    # made once in the server's life (its log), although both experts made those calls.
    checks = [c for c in status["devices"]["cpu"]["checks"] if c["key"].endswith(f" {KERNEL}")
              and f" d{HEAD_DIM} " in c["key"]]
    assert collections.Counter(c["key"] for c in checks) == collections.Counter(CHECK_KEYS), checks
    assert all(c["passed"] for c in checks), checks
    log = wan22.log.read_text(errors="replace")
    made = collections.Counter(re.findall(r"Attention kernel first-call check .* for (cpu \S+ d\d+ \w+ keys \S+)", log))
    assert {key: made[key] for key in CHECK_KEYS} == dict.fromkeys(CHECK_KEYS, 1), made

    # And the video the two experts made is finite.
    [saved] = entry["outputs"]["41"]["latents"]
    latent = load_file(str(wan22.base / "output" / saved["subfolder"] / saved["filename"]))["latent_tensor"]
    assert latent.shape == (1, 16, *LATENT), latent.shape
    assert bool(torch.isfinite(latent).all()) and latent.abs().sum() > 0
