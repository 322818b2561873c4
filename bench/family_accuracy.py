"""Per-family accuracy of the real kernel: each family at its real widths (depth reduced to a
block or two, random weights, bf16), one sampling step at its usual resolution through the
Scope with every eligible call on the kernel, and every such call compared with fp32 SDPA on
the same inputs. Writes family_accuracy.md / .json under --out (GPU, torch, kernel named; the GPU
runs' logs are kept under bench/runs/).

    python bench/family_accuracy.py [--small] [--family ...] [--kernel auto] [--out DIR]

--small runs the tiny test configs on the CPU with the reference double (CI keeps it working).
"""
from __future__ import annotations

import argparse
import dataclasses
import json
from pathlib import Path

import sas_harness

sas_harness.boot()

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

import comfy.model_management  # noqa: E402

from sage_attention_scope.nodes.status import payload
from sage_attention_scope.patches import Session, Settings, checks, families, scope_for_family  # noqa: E402
from sas_harness.doubles import add_kernel, kernel_double, make_kernel, reference_attention  # noqa: E402
from sas_harness.families import CASES, Case, bench_model, lacking  # noqa: E402
from sas_harness.host import comfyui_version  # noqa: E402
from sas_harness.models import sample  # noqa: E402

PROBE = "accuracy_probe"


class Probe:
    """Wraps a backend's adapter: runs it, and compares each result with fp32 SDPA on the same inputs."""

    def __init__(self, run):
        self.run = run
        self.rows: list[dict] = []

    def __call__(self, fn, q, k, v, call, layout, settings):
        out = self.run(fn, q, k, v, call, layout, settings)
        hnd = (lambda t: t) if layout == "HND" else (lambda t: t.transpose(1, 2))
        qf, kf, vf = (hnd(t).float() for t in (q, k, v))
        ref = F.scaled_dot_product_attention(qf, kf, vf, attn_mask=call.sdpa_mask(), scale=call.scale)
        cosine, rel_l2, finite = checks.compare(hnd(out), ref)
        self.rows.append({"q": list(qf.shape), "kv_len": kf.shape[2], "cosine": cosine, "rel_l2": rel_l2,
                          "finite": finite})
        return out


def probe_kernel(session, device, kernel: str):
    """The kernel ``kernel`` binds on ``device`` (the reference double on a CPU), its adapter probed, as a double
    of its own name (bound afresh from its library, as the session binds it)."""
    if device.type == "cuda":
        bound = session.knowledge.kernel(kernel, device).bound
        if bound is None:
            raise SystemExit(f"no kernel {kernel} on {device}: {session.knowledge.kernel(kernel, device).why}")
        double = kernel_double(bound.backend, devices={"cuda"})
    else:
        double = make_kernel(PROBE, reference_attention)
    probe = Probe(double.backend.run)
    return dataclasses.replace(double, backend=dataclasses.replace(double.backend, name=PROBE, run=probe)), probe


def run_family(case: Case, small: bool, device, dtype, kernel: str) -> dict:
    session = Session(store=None)
    double, probe = probe_kernel(session, device, kernel)
    add_kernel(session.knowledge, double)
    model, conditioning, latent_hw, channels, latent = bench_model(case.family, None, "reduced", small, dtype, device)
    try:
        settings = Settings(kernel=PROBE, min_seq_len=case.min_seq_len if small else 1024, routing="always")
        scoped, found = scope_for_family(model, settings, session)
        assert found.family is families.REGISTRY[case.family]
        sample(scoped, conditioning(), latent_hw=latent_hw, channels=channels, steps=1,
               latent=latent() if latent else None)
    finally:
        del model
        comfy.model_management.unload_all_models()
        comfy.model_management.soft_empty_cache()
    gen = payload(session)["devices"][str(device)]["last_generation"]
    rows = probe.rows
    return {"family": case.family, "latent": list(latent_hw), "calls_on_kernel": len(rows), "declined": gen["declined"],
            "worst_cosine": min(r["cosine"] for r in rows) if rows else None,
            "worst_rel_l2": max(r["rel_l2"] for r in rows) if rows else None,
            "all_finite": all(r["finite"] for r in rows),
            "shapes": sorted({(tuple(r["q"]), r["kv_len"]) for r in rows})}


def to_markdown(results: list[dict], header: str) -> str:
    lines = [header, "",
             "| family | latent | calls on the kernel | other calls (SDPA, reason) | worst cosine | worst rel L2 | "
             "shapes (B, H, N, D; kv) |", "|---|---|---|---|---|---|---|"]
    for r in results:
        sdpa = ", ".join(f"{n} {reason}" for reason, n in r["declined"].items()) or "-"
        shapes = "; ".join(f"{'x'.join(map(str, q))}; {kv}" for q, kv in r["shapes"])
        cos = f"{r['worst_cosine']:.5f}" if r["worst_cosine"] is not None else "-"
        rel = f"{r['worst_rel_l2']:.4f}" if r["worst_rel_l2"] is not None else "-"
        lines.append(f"| {r['family']} | {'x'.join(map(str, r['latent']))} | {r['calls_on_kernel']} | {sdpa} | "
                     f"{cos} | {rel} | {shapes} |")
    return "\n".join(lines) + "\n"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--small", action="store_true", help="tiny configs, any device (CI)")
    parser.add_argument("--family", nargs="*", help="default: every family this ComfyUI has")
    parser.add_argument("--kernel", default="auto")
    parser.add_argument("--out", type=Path, help="folder for family_accuracy.md / .json")
    args = parser.parse_args(argv)
    device = torch.device("cuda:0" if torch.cuda.is_available() and not args.small else "cpu")
    dtype = torch.bfloat16 if device.type == "cuda" else torch.float32
    if device.type == "cuda":
        bound = Session(store=None).knowledge.kernel(args.kernel, device).bound
        what = (f"{torch.cuda.get_device_name(device)}, ComfyUI {comfyui_version()}, torch {torch.__version__}, "
                f"kernel {bound.name if bound else None}, {bound.version if bound else ''}")
    else:
        what = f"CPU, ComfyUI {comfyui_version()}, torch {torch.__version__}, the reference test double"
    results = []
    for case in CASES:
        if (args.family and case.family not in args.family) or any(r["family"] == case.family for r in results):
            continue  # one run a family (bench_model builds a family's first case)
        if lacking(case):
            print(f"{case.family}: skipped, {lacking(case)}", flush=True)
            continue
        results.append(run_family(case, args.small, device, dtype, args.kernel))
        print(json.dumps({k: v for k, v in results[-1].items() if k != "shapes"}), flush=True)
    models = ("the tiny test configs (tests/sas_harness/families.py) at their test thresholds" if args.small else
              "random weights (std 0.02), real widths, one or two blocks, min_seq_len 1024")
    header = (f"# Per-family accuracy\n\n{what}; {dtype}; {models}; one euler step, routing always; every call "
              f"that ran on the kernel compared with fp32 SDPA on the same inputs.")
    table = to_markdown(results, header)
    print(table)
    judged = [r for r in results if r["worst_cosine"] is not None]
    worst = min(judged, key=lambda r: r["worst_cosine"]) if judged else None
    print("no call ran on the kernel" if worst is None else
          f"worst cosine {worst['worst_cosine']:.5f} ({worst['family']}) over {len(judged)} families")
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "family_accuracy.md").write_text(table)
        (args.out / "family_accuracy.json").write_text(json.dumps(results, indent=1, default=list))
    return results


if __name__ == "__main__":
    main()
