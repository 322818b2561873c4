"""Per-family accuracy of the real kernel: each family at its real widths (depth reduced to a
block or two, random weights, bf16), one sampling step at its usual resolution through the
Scope with every eligible call on SageAttention, and every such call compared with fp32 SDPA on
the same inputs. Writes docs/bench/family_accuracy.md (GPU, torch, kernel named).

    python bench/family_accuracy.py [--small] [--out docs/bench]

--small runs the tiny test configs on the CPU with the reference double (CI keeps it working).
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
import sas_host  # noqa: E402

sas_host.boot_comfyui(sas_host.comfyui_path())
sas_host.import_pack()

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

import comfy.model_management  # noqa: E402
import comfy.supported_models  # noqa: E402

from sage_attention_scope.patches import Settings, checks, families, kernels, scope_for_family, stats  # noqa: E402
from sas_doubles import reference_attention  # noqa: E402
from sas_families import CASES, Case, lacking, widths  # noqa: E402
from sas_models import build, sample  # noqa: E402

PROBE = "accuracy_probe"

class Probe:
    """Wraps a kernel: runs it, and compares each result with fp32 SDPA on the same inputs."""

    def __init__(self, kernel):
        self.kernel = kernel
        self.rows: list[dict] = []

    def __call__(self, q, k, v, tensor_layout="HND", is_causal=False, sm_scale=None, smooth_k=False, **kwargs):
        out = self.kernel(q, k, v, tensor_layout=tensor_layout, is_causal=is_causal, sm_scale=sm_scale,
                          smooth_k=smooth_k, **kwargs)
        dims = (1, 2) if tensor_layout == "NHD" else None
        qf, kf, vf = (t.transpose(*dims) if dims else t for t in (q, k, v))
        ref = F.scaled_dot_product_attention(qf.float(), kf.float(), vf.float(), scale=sm_scale)
        got = out.transpose(*dims) if dims else out
        cosine, rel_l2, finite = checks.compare(got, ref)
        self.rows.append({"q": list(qf.shape), "kv_len": kf.shape[2], "cosine": cosine, "rel_l2": rel_l2,
                          "finite": finite})
        return out


def probe_kernel(device) -> tuple[kernels.Kernel, Probe]:
    if device.type == "cuda":
        real = kernels.resolve("auto", device).kernel
        if real is None:
            raise SystemExit(f"no SageAttention kernel on {device}: {kernels.resolve('auto', device).why}")
        probe = Probe(real.function)
        spec = dataclasses.replace(real.spec, name=PROBE)
        return kernels.Kernel(spec, probe, real.version), probe
    probe = Probe(reference_attention)
    spec = kernels.KernelSpec(PROBE, "reference_attention", frozenset(range(1, 513)),
                              frozenset({torch.float32, torch.bfloat16, torch.float16}), frozenset({"cpu", "cuda"}))
    return kernels.Kernel(spec, probe, "test-double"), probe


def run_family(case: Case, small: bool, device, dtype, probe_state) -> dict:
    kernel, probe = probe_state
    w = widths(case, small)
    config, conditioning, latent_hw, channels, latent = w.config, w.conditioning, w.latent_hw, w.channels, w.latent
    cls = getattr(comfy.supported_models, case.config_class)
    model = build(cls, config, dtype=dtype, device=device, std=0.2 if small else 0.02)
    probe.rows.clear()
    stats.reset_session()
    kernels.register_test_kernel(kernel)
    try:
        settings = Settings(kernel=PROBE, min_seq_len=case.min_seq_len if small else 1024, routing="always")
        scoped, found = scope_for_family(model, settings)
        assert found.family is families.by_name(case.family)
        sample(scoped, conditioning(), latent_hw=latent_hw, channels=channels, steps=1,
               latent=latent() if latent else None)
    finally:
        kernels.unregister_test_kernel(PROBE)
        del model
        comfy.model_management.unload_all_models()
        comfy.model_management.soft_empty_cache()
    gen = stats.snapshot()["devices"][str(device)]["last_generation"]
    rows = probe.rows
    return {"family": case.family, "latent": list(latent_hw), "calls_on_sage": len(rows), "sdpa": gen["sdpa"],
            "worst_cosine": min(r["cosine"] for r in rows) if rows else None,
            "worst_rel_l2": max(r["rel_l2"] for r in rows) if rows else None,
            "all_finite": all(r["finite"] for r in rows),
            "shapes": sorted({(tuple(r["q"]), r["kv_len"]) for r in rows})}


def to_markdown(results: list[dict], header: str) -> str:
    lines = [header, "",
             "| family | latent | calls on SageAttention | other calls (SDPA, reason) | worst cosine | worst rel L2 | "
             "shapes (B, H, N, D; kv) |", "|---|---|---|---|---|---|---|"]
    for r in results:
        sdpa = ", ".join(f"{n} {reason}" for reason, n in r["sdpa"].items()) or "-"
        shapes = "; ".join(f"{'x'.join(map(str, q))}; {kv}" for q, kv in r["shapes"])
        cos = f"{r['worst_cosine']:.5f}" if r["worst_cosine"] is not None else "-"
        rel = f"{r['worst_rel_l2']:.4f}" if r["worst_rel_l2"] is not None else "-"
        lines.append(f"| {r['family']} | {'x'.join(map(str, r['latent']))} | {r['calls_on_sage']} | {sdpa} | "
                     f"{cos} | {rel} | {shapes} |")
    return "\n".join(lines) + "\n"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--small", action="store_true", help="tiny configs, any device (CI)")
    parser.add_argument("--out", type=Path, help="folder for family_accuracy.md / .json")
    args = parser.parse_args(argv)
    device = torch.device("cuda:0" if torch.cuda.is_available() and not args.small else "cpu")
    dtype = torch.bfloat16 if device.type == "cuda" else torch.float32
    probe_state = probe_kernel(device)
    kernel = probe_state[0]
    what = (f"{torch.cuda.get_device_name(device)}, ComfyUI {sas_host.comfyui_version()}, torch {torch.__version__}, "
            f"sageattention {kernels.installed().version}, kernel {kernels.resolve('auto', device).kernel.name}"
            if device.type == "cuda" else f"CPU, torch {torch.__version__}, {kernel.spec.function_name} test double")
    results = []
    for case in CASES:
        if lacking(case):
            print(f"{case.family}: skipped, {lacking(case)}", flush=True)
            continue
        results.append(run_family(case, args.small, device, dtype, probe_state))
        print(json.dumps({k: v for k, v in results[-1].items() if k != "shapes"}), flush=True)
    models = ("the tiny test configs (tests/sas_families.py) at their test thresholds" if args.small else
              "random weights (std 0.02), real widths, one or two blocks, min_seq_len 1024")
    header = (f"# Per-family accuracy\n\n{what}; {dtype}; {models}; one euler step, routing always; every call "
              f"that ran on the kernel compared with fp32 SDPA on the same inputs.")
    table = to_markdown(results, header)
    print(table)
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "family_accuracy.md").write_text(table)
        (args.out / "family_accuracy.json").write_text(json.dumps(results, indent=1, default=list))
    return results


if __name__ == "__main__":
    main()
