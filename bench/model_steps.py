"""Per-step and per-generation benchmark: each family at its real widths through ComfyUI's own
model classes and the Scope node, sampled with a real sampler on a fixed seed, one arm at a time.

    python bench/model_steps.py [--small] [--family FLUX.1 ...] [--steps 4] [--out docs/bench]

Arms: no node (default SDPA), cuDNN-first SDPA, the Scope with its defaults (routed), and the
Scope with every call on SageAttention (always). Per arm: time per step, peak VRAM while
sampling, and how far the final latent lies from the no-node latent (relative L2), next to the
same distance for cuDNN-first SDPA, the exact-kernel noise floor. Random weights, bf16, at
2048² (LTX: 1248×704, 121 frames); one or two blocks of each model (stated), so that weights
initialise in seconds: a full-depth step spends a larger share in attention, so its ratio lies
between these and the per-call ratios. --small runs the tiny test configs on the CPU (CI).
"""
from __future__ import annotations

import argparse
import contextlib
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
sys.path.insert(0, str(Path(__file__).resolve().parent))
import sas_host  # noqa: E402

sas_host.boot_comfyui(sas_host.comfyui_path())
sas_host.import_pack()

import torch  # noqa: E402

import comfy.model_management  # noqa: E402
import comfy.supported_models  # noqa: E402

from sage_attention_scope.nodes.scope import scoped_model  # noqa: E402
from sage_attention_scope.patches import kernels, stats, timing  # noqa: E402
from sas_families import CASES, lacking, widths  # noqa: E402
from sas_models import build, flat_latent, sample  # noqa: E402
from arm_orders import balanced_orders  # noqa: E402

# Latents of a 2048² image (FLUX.2: 16× down, patch 1; Qwen-Image: one frame) and of LTX-Video's
# 1248×704×121 video; LTX-2's REAL_WIDTHS latent already is that video (and its audio).
LATENT_2048 = {"FLUX.1": (256, 256), "FLUX.2": (128, 128), "Qwen-Image": (1, 256, 256), "Z-Image": (256, 256),
               "SDXL": (256, 256), "LTX-Video": (16, 22, 39)}


@contextlib.contextmanager
def finite_guard_off():
    """Diagnostic only: no finite flags, so the guard never synchronises; what the one host
    sync a step costs."""
    from sage_attention_scope.patches import finite_guard
    note = finite_guard.PendingFlags.note
    finite_guard.PendingFlags.note = lambda self, key, out: None
    try:
        yield
    finally:
        finite_guard.PendingFlags.note = note


def run_arm(model, sample_once, steps, context=contextlib.nullcontext):
    """``context()`` is entered around the arm's samples (an SDPA backend order, the guard off)."""
    device = model.load_device
    with context():
        sample_once(model, 1)  # warm-up, first-call check, timing
        if device.type == "cuda":
            torch.cuda.synchronize()
            torch.cuda.reset_peak_memory_stats()
            base = torch.cuda.memory_allocated()
        t0 = time.perf_counter()
        latent = sample_once(model, steps)
        if device.type == "cuda":
            torch.cuda.synchronize()
        elapsed = time.perf_counter() - t0
    peak = (torch.cuda.max_memory_allocated() - base) / 2**20 if device.type == "cuda" else float("nan")
    return flat_latent(latent).float(), elapsed * 1e3 / steps, peak


def rel_l2(a, b) -> float:
    return float((a - b).norm() / b.norm().clamp_min(1e-12))


def run_family(family: str, small: bool, steps: int, rounds: int, diagnose_guard: bool = False) -> tuple[dict, str]:
    case = next(c for c in CASES if c.family == family)
    cuda = torch.cuda.is_available()
    w = widths(case, small)
    config, conditioning, latent_hw, channels, latent = w.config, w.conditioning, w.latent_hw, w.channels, w.latent
    dtype = torch.float32 if small else torch.bfloat16
    if not small:
        latent_hw = LATENT_2048.get(family, latent_hw)
    model = build(getattr(comfy.supported_models, case.config_class), config, dtype=dtype, std=0.02)
    cond = conditioning()

    def sample_once(patched, n):
        return sample(patched, cond, latent_hw=latent_hw, channels=channels, steps=n, seed=0,
                      latent=latent() if latent else None)

    arms = {"sdpa": (model, contextlib.nullcontext)}
    if cuda:
        from torch.nn.attention import SDPBackend, sdpa_kernel
        # Two exact kernels besides the default: where the default already is cuDNN, flash-first
        # still gives a non-zero noise floor.
        arms["cudnn_first"] = (model, lambda: sdpa_kernel([SDPBackend.CUDNN_ATTENTION, SDPBackend.FLASH_ATTENTION,
                                                           SDPBackend.MATH]))
        arms["flash_first"] = (model, lambda: sdpa_kernel([SDPBackend.FLASH_ATTENTION, SDPBackend.EFFICIENT_ATTENTION,
                                                           SDPBackend.MATH]))
    arms["routed"] = (scoped_model(model), contextlib.nullcontext)
    arms["always"] = (scoped_model(model, min_seq_len=1, routing="always"), contextlib.nullcontext)
    if diagnose_guard:  # always, with the per-step finite flags not taken
        arms["always, guard off"] = (arms["always"][0], finite_guard_off)
    # Arms interleaved, round after round, each round in the next balanced order; the median
    # round per arm, so that clock ramp-up, a cold first arm or the arm before do not land on one.
    times = {name: [] for name in arms}
    results, base = {}, None
    orders = balanced_orders(list(arms))
    for round_index in range(rounds):
        for name in orders[round_index % len(orders)]:
            patched, context = arms[name]
            stats.reset_counters()
            out, ms, peak = run_arm(patched, sample_once, steps, context)
            times[name].append(ms)
            if round_index:
                continue
            base = out if name == "sdpa" else base  # the first order starts with it
            counts = stats.snapshot()["devices"].get(str(model.load_device), {}).get("last_generation", {})
            results[name] = {"peak_mib": peak, "rel_l2_vs_sdpa": rel_l2(out, base),
                             "sage_calls": counts.get("sage", 0), "sdpa_calls": counts.get("sdpa_total", 0)}
    for name in arms:
        results[name]["ms_per_step"] = statistics.median(times[name])
        results[name]["ms_rounds"] = times[name]
    del model, arms
    comfy.model_management.unload_all_models()
    comfy.model_management.soft_empty_cache()
    return results, f"{family}, latent {'x'.join(map(str, latent_hw))}, {_blocks(family, config)}"


def _blocks(family: str, config: dict) -> str:
    if family.startswith("FLUX"):
        return f"{config['depth']}+{config['depth_single_blocks']} blocks"
    if family == "Z-Image":
        return f"{config['n_layers']} layer(s) + {config['n_refiner_layers']} refiner(s) each"
    if family == "SDXL":
        return f"channels {config['model_channels']}, one transformer block per level"
    return f"{config['num_layers']} block(s)"


def to_markdown(all_results: dict, header: str) -> str:
    lines = [header, "", "| family | arm | ms/step | × SDPA | peak MiB | final latent rel L2 vs SDPA | "
             "calls Sage/SDPA (last gen) |", "|---|---|---|---|---|---|---|"]
    floors = []
    for label, results in all_results.items():
        sdpa = results["sdpa"]["ms_per_step"]
        for name, r in results.items():
            lines.append(f"| {label} | {name} | {r['ms_per_step']:.1f} | {sdpa / r['ms_per_step']:.3f} | "
                         f"{r['peak_mib']:.0f} | {r['rel_l2_vs_sdpa']:.5f} | {r['sage_calls']}/{r['sdpa_calls']} |")
        exact = {n: results[n]["rel_l2_vs_sdpa"] for n in ("cudnn_first", "flash_first") if n in results}
        nonzero = {n: d for n, d in exact.items() if d > 0}
        always = results["always"]["rel_l2_vs_sdpa"]
        name = label.split(",")[0]
        if not exact:
            floors.append(f"{name}: no other exact SDPA kernel on this device")
        elif not nonzero:
            floors.append(f"{name}: the other exact kernels gave SDPA's latent bit for bit (floor 0)")
        else:
            floor_arm, floor = max(nonzero.items(), key=lambda item: item[1])
            floors.append(f"{name}: always {always / floor:.1f}× the {floor_arm} distance")
    lines += ["", "Accuracy against the exact-kernel noise floor (the largest distance of another exact SDPA kernel): " + "; ".join(floors) + "."]
    return "\n".join(lines) + "\n"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--small", action="store_true", help="tiny configs on any device (CI)")
    parser.add_argument("--family", nargs="*", help="families to run (default: all this ComfyUI has; "
                                                     "--small: FLUX.1)")
    parser.add_argument("--steps", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=3, help="every arm this many times, interleaved, each round "
                        "in the next balanced order; median")
    parser.add_argument("--diagnose-guard", action="store_true",
                        help="add an 'always' arm without the per-step finite flags (what their sync costs)")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    timing.use_store(None)  # a benchmark measures afresh: no decisions saved by earlier sessions
    cuda = torch.cuda.is_available()
    wanted = args.family or (["FLUX.1"] if args.small else [c.family for c in CASES])
    all_results = {}
    for family in wanted:
        case = next(c for c in CASES if c.family == family)
        if lacking(case):
            print(f"{family}: skipped, {lacking(case)}", flush=True)
            continue
        results, label = run_family(family, args.small, args.steps, args.rounds, args.diagnose_guard)
        all_results[label] = results
        print(label, json.dumps(results), flush=True)
    header = (f"{args.steps} euler steps, median of {args.rounds} interleaved rounds (balanced orders), {'float32 tiny configs' if args.small else 'bfloat16, real widths'}; "
              f"device {torch.cuda.get_device_name(0) if cuda else 'CPU'}, ComfyUI {sas_host.comfyui_version()}, "
              f"torch {torch.__version__}, "
              f"sageattention {kernels.installed().version}"
              + (f", kernel {kernels.resolve('auto', torch.device('cuda:0')).kernel.name}"
                 if cuda and kernels.resolve('auto', torch.device('cuda:0')).kernel else ""))
    table = to_markdown(all_results, header)
    print(table)
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "model_steps.md").write_text(table)
        (args.out / "model_steps.json").write_text(json.dumps(all_results, indent=1))
    return all_results


if __name__ == "__main__":
    main()
