"""Per-step and per-generation benchmark: a FLUX.1 model at real width through ComfyUI's own
model class and the Scope node, sampled with a real sampler on a fixed seed, one arm at a time.

    python bench/model_steps.py [--small] [--out docs/bench]

Arms: no node (default SDPA), cuDNN-first SDPA, the Scope with its defaults (routed), and the
Scope with every call on SageAttention (always). Per arm: time per step, peak VRAM while
sampling, and how far the final latent lies from the no-node latent (relative L2), next to the
same distance for cuDNN-first SDPA, the exact-kernel noise floor. Random weights, bf16; the
depth is reduced (stated in the table) so that weights initialise in seconds.
"""
from __future__ import annotations

import argparse
import contextlib
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
import sas_host  # noqa: E402

sas_host.boot_comfyui(sas_host.comfyui_path())
sas_host.import_pack()

import torch  # noqa: E402

import comfy.supported_models  # noqa: E402

from sage_attention_scope.nodes.scope import scoped_model  # noqa: E402
from sage_attention_scope.patches import kernels, stats  # noqa: E402
from sas_models import TINY_FLUX, build, flux_conditioning, sample  # noqa: E402

# FLUX.1-dev's widths (hidden 3072, 24 heads of 128, T5 4096, CLIP-L 768); 2 + 4 blocks of 19 + 38.
FLUX_REAL = dict(TINY_FLUX, vec_in_dim=768, context_in_dim=4096, hidden_size=3072, mlp_ratio=4.0, num_heads=24,
                 depth=2, depth_single_blocks=4, axes_dim=[16, 56, 56])


def run_arm(model, cond, latent_hw, steps, seed, sdpa_backends=None):
    device = model.load_device
    ctx = contextlib.nullcontext()
    if sdpa_backends is not None:
        from torch.nn.attention import sdpa_kernel
        ctx = sdpa_kernel(sdpa_backends)
    with ctx:
        sample(model, cond, latent_hw=latent_hw, steps=1, seed=seed)  # warm-up, first-call check, timing
        if device.type == "cuda":
            torch.cuda.synchronize()
            torch.cuda.reset_peak_memory_stats()
            base = torch.cuda.memory_allocated()
        t0 = time.perf_counter()
        latent = sample(model, cond, latent_hw=latent_hw, steps=steps, seed=seed)
        if device.type == "cuda":
            torch.cuda.synchronize()
        elapsed = time.perf_counter() - t0
    peak = (torch.cuda.max_memory_allocated() - base) / 2**20 if device.type == "cuda" else float("nan")
    return latent.float(), elapsed * 1e3 / steps, peak


def rel_l2(a, b) -> float:
    return float((a - b).norm() / b.norm().clamp_min(1e-12))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--small", action="store_true", help="tiny FLUX on any device (CI)")
    parser.add_argument("--steps", type=int, default=4)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    cuda = torch.cuda.is_available()
    if args.small:
        config, dtype, latent_hw, tokens, dims = TINY_FLUX, torch.float32, (16, 16), 5, (32, 32)
    else:
        config, dtype, latent_hw, tokens, dims = FLUX_REAL, torch.bfloat16, (256, 256), 512, (4096, 768)
    model = build(comfy.supported_models.Flux, config, dtype=dtype, std=0.02)
    cond = flux_conditioning(tokens=tokens, context_dim=dims[0], pooled_dim=dims[1])
    arms = {"sdpa": (model, None)}
    if cuda:
        from torch.nn.attention import SDPBackend
        arms["cudnn_first"] = (model, [SDPBackend.CUDNN_ATTENTION, SDPBackend.FLASH_ATTENTION, SDPBackend.MATH])
    arms["routed"] = (scoped_model(model), None)
    arms["always"] = (scoped_model(model, min_seq_len=1, routing="always"), None)
    results, base = {}, None
    for name, (patched, backends) in arms.items():
        stats.reset_counters()
        latent, ms, peak = run_arm(patched, cond, latent_hw, args.steps, seed=0, sdpa_backends=backends)
        base = latent if base is None else base
        counts = stats.snapshot()["devices"].get(str(model.load_device), {}).get("last_generation", {})
        results[name] = {"ms_per_step": ms, "peak_mib": peak, "rel_l2_vs_sdpa": rel_l2(latent, base),
                         "sage_calls": counts.get("sage", 0), "sdpa_calls": counts.get("sdpa_total", 0)}
    header = (f"FLUX.1 (width 3072, 24×128 heads, depth {config['depth']}+{config['depth_single_blocks']} of 19+38), "
              f"latent {latent_hw[0] * 8}×{latent_hw[1] * 8}, {args.steps} euler steps, {dtype}; "
              f"device {torch.cuda.get_device_name(0) if cuda else 'CPU'}, torch {torch.__version__}, "
              f"sageattention {kernels.installed().version}")
    lines = [header, "", "| arm | ms/step | × SDPA | peak MiB | final latent rel L2 vs SDPA | calls Sage/SDPA (last gen) |",
             "|---|---|---|---|---|---|"]
    for name, r in results.items():
        lines.append(f"| {name} | {r['ms_per_step']:.1f} | {results['sdpa']['ms_per_step'] / r['ms_per_step']:.3f} | "
                     f"{r['peak_mib']:.0f} | {r['rel_l2_vs_sdpa']:.5f} | {r['sage_calls']}/{r['sdpa_calls']} |")
    if "cudnn_first" in results and results["cudnn_first"]["rel_l2_vs_sdpa"] > 0:
        floor = results["cudnn_first"]["rel_l2_vs_sdpa"]
        lines.append("")
        lines.append("Accuracy against the exact-kernel floor (arm rel L2 / cuDNN-first rel L2): " + ", ".join(
            f"{n} {r['rel_l2_vs_sdpa'] / floor:.1f}×" for n, r in results.items() if n not in ("sdpa", "cudnn_first")))
    table = "\n".join(lines) + "\n"
    print(table)
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "model_steps.md").write_text(table)
        (args.out / "model_steps.json").write_text(json.dumps(results, indent=1))
    return results


if __name__ == "__main__":
    main()
