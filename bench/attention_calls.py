"""Per-call benchmark: PyTorch SDPA, cuDNN-first SDPA, every kernel this machine has, and the Scope
(routed with its defaults, measured from 1 token, always) side by side in one run, on the
attention shapes of each supported family.

    python bench/attention_calls.py [--small] [--shapes family|sweep|all] [--kernel auto]
                                    [--compare DIR] [--out docs/bench]

--compare DIR runs the same scoped arms of another tree of the pack (an earlier commit exported
with ``git archive``) in a process of its own, taking turns with this tree's arms in every round.
--small runs tiny shapes on whatever device is there (the CPU in CI). Writes a markdown table with
GPU, torch, Triton and kernel versions.
"""
from __future__ import annotations

import argparse
import json
import math
import statistics
from pathlib import Path

import sas_harness

sas_harness.boot()

import torch  # noqa: E402

from sas_harness import arms as harness  # noqa: E402
from sas_harness.arm_orders import balanced_orders  # noqa: E402
from sas_harness.call_arms import ScopedCalls, accuracy, comfy_call, fp32_reference, inputs  # noqa: E402
from sas_harness.host import comfyui_version, import_pack  # noqa: E402
from sas_harness.run import run_kernel  # noqa: E402

# (label, B, H, Nq, Nkv, D): each family's joint or self-attention at 1024² and 2048² (FLUX.1,
# FLUX.2, Qwen-Image, Z-Image: image tokens + 512/512/256/128 text tokens), LTX video, SDXL's first
# transformer level and its cross-attention to the 77-token text.
SHAPES = [
    ("FLUX 1024²", 1, 24, 4608, 4608, 128),
    ("FLUX 2048²", 1, 24, 16896, 16896, 128),
    ("FLUX.2 1024²", 1, 48, 4608, 4608, 128),
    ("FLUX.2 2048²", 1, 48, 16896, 16896, 128),
    ("Qwen-Image 1024²", 1, 24, 4352, 4352, 128),
    ("Qwen-Image 2048²", 1, 24, 16640, 16640, 128),
    ("Z-Image 1024²", 1, 30, 4224, 4224, 128),
    ("Z-Image 2048²", 1, 30, 16512, 16512, 128),
    ("LTX-2 1248×704×121", 1, 32, 13728, 13728, 128),
    ("LTX-Video 1248×704×121", 1, 32, 13728, 13728, 64),
    ("SDXL 1024² level 1", 2, 10, 4096, 4096, 64),
    ("SDXL 2048² level 1", 2, 10, 16384, 16384, 64),
    ("SDXL cross-attn", 2, 10, 4096, 77, 64),
    ("SDXL 2048² cross-attn", 2, 10, 16384, 77, 64),
]
SWEEP = [(f"sweep {n}", 1, 24, n, n, 128) for n in (1024, 2048, 4096, 8192, 12288, 16384, 24576, 32768)]
SMALL_SHAPES = [("small self-attn", 1, 2, 256, 256, 64), ("small cross-attn", 1, 2, 256, 77, 64)]

WINDOW_MS, MAX_REPEATS = 10.0, 1000  # each arm's calls in a round fill at least this much time
GPU_BOUND_MS = 1.0  # SDPA at least this long a call: the targets are judged there, host-bound shapes reported


def versions(pack) -> dict:
    info = {"comfyui": comfyui_version(), "torch": torch.__version__,
            "device": torch.cuda.get_device_name(0) if torch.cuda.is_available() else "CPU"}
    try:
        import triton
        info["triton"] = triton.__version__
    except ImportError:
        info["triton"] = "not installed"
    info["libraries"] = pack.nodes.status.payload(pack.nodes.SESSION)["libraries"]
    return info


def repeats_for(ms: float) -> int:
    return max(harness.REPEATS, min(MAX_REPEATS, math.ceil(WINDOW_MS / max(ms, 1e-6))))


def kernel_arms(pack, device) -> dict:
    """Every kernel that binds on ``device``, called directly (plus the output reshape every caller needs)."""
    session = pack.nodes.SESSION
    found = (session.knowledge.kernel(name, device).bound for name in session.knowledge.usable([device])[1:])
    return {bound.name: bound for bound in found if bound is not None}


def measure(pack, shapes, device, dtype, kernel="auto", rounds=None, remote=None) -> list[dict]:
    """Per shape, every arm once a round, the rounds in balanced orders (each arm in every place and
    after every other equally often), and each arm's median round."""
    kernels = kernel_arms(pack, device)
    routed_kernel = pack.nodes.SESSION.knowledge.kernel(kernel, device).bound
    rows = []
    for label, b, h, nq, nkv, d in shapes:
        q, k, v = inputs(b, h, nq, nkv, d, device, dtype)
        ref = fp32_reference(q, k, v)
        arms = {"sdpa": lambda: comfy_call(q, k, v, h)}
        passthrough = {"optimized_attention_override": lambda func, *a, **kw: func(*a, **kw)}
        arms["pass-through override"] = lambda: comfy_call(q, k, v, h, passthrough)
        if device.type == "cuda":
            from torch.nn.attention import SDPBackend, sdpa_kernel

            def cudnn():
                with sdpa_kernel([SDPBackend.CUDNN_ATTENTION, SDPBackend.FLASH_ATTENTION, SDPBackend.MATH]):
                    return comfy_call(q, k, v, h)
            arms["cudnn_first"] = cudnn
        for name, bound in kernels.items():
            arms[name] = lambda bound=bound: run_kernel(bound, q, k, v).transpose(1, 2).reshape(b, nq, h * d)
        runners = {name: (lambda fn: lambda n: (fn(), harness.timed(fn, device, n)))(fn) for name, fn in arms.items()}
        scoped = ScopedCalls(pack, (b, h, nq, nkv, d), dtype, device, kernel)
        runners.update({name: (lambda name: lambda n: scoped.run(name, n))(name) for name in scoped.patched})
        if remote is not None:
            for name in remote.ask("calls.setup", dims=[b, h, nq, nkv, d], dtype=str(dtype).split(".")[-1],
                                   kernel=kernel):
                runners[f"{name} ({remote.label})"] = (lambda name: lambda n: remote.ask("calls.run", name=name,
                                                                                          repeats=n))(name)
        repeats = repeats_for(harness.timed(arms["sdpa"], device))
        row = {"shape": label, "dims": [b, h, nq, nkv, d], "repeats": repeats,
               "routed_kernel": routed_kernel.name if routed_kernel else None,
               "arms": {name: {"ms_rounds": []} for name in runners}}
        orders = balanced_orders(list(runners))
        row["rounds"] = rounds or len(orders)
        for index in range(row["rounds"]):
            for name in orders[index % len(orders)]:
                result = row["arms"][name]
                if "error" in result:
                    continue
                if device.type == "cuda":
                    torch.cuda.reset_peak_memory_stats()
                base = torch.cuda.memory_allocated() if device.type == "cuda" else 0
                try:
                    got = runners[name](repeats)
                except Exception as exc:  # a kernel this build lacks: say so, go on
                    result["error"] = f"{type(exc).__name__}: {str(exc).splitlines()[0][:80] if str(exc) else ''}"
                    continue
                if isinstance(got, dict):  # the other tree's arm: timed and judged there
                    result["ms_rounds"].append(got["ms"])
                    result.setdefault("cosine", got["cosine"]), result.setdefault("rel_l2", got["rel_l2"])
                    continue
                out, ms = got
                result["ms_rounds"].append(ms)
                if "cosine" not in result:
                    result.update(accuracy(out, ref), peak_mib=(torch.cuda.max_memory_allocated() - base) / 2**20
                                  if device.type == "cuda" else None)
        flops = 4 * b * h * nq * nkv * d
        for result in row["arms"].values():
            if result["ms_rounds"]:
                ms = statistics.median(result["ms_rounds"])
                result.update(ms=ms, spread=[min(result["ms_rounds"]), max(result["ms_rounds"])],
                              tflops=flops / ms / 1e9)
        rows.append(row)
        print(json.dumps({"shape": label, **{n: r.get("ms") for n, r in row["arms"].items()}}), flush=True)
    return rows


def routed_vs_best(row: dict):
    """routed ms / min(SDPA, the routed kernel called directly), or None where a side did not run."""
    arms, kernel = row["arms"], row.get("routed_kernel")
    sides = [arms.get("sdpa", {}).get("ms"), arms.get(kernel, {}).get("ms")]
    routed = arms.get("routed", {}).get("ms")
    if routed is None or any(side is None for side in sides):
        return None
    return routed / min(sides)


def to_markdown(info: dict, rows: list[dict], remote_label: str | None = None) -> str:
    names = list(dict.fromkeys(n for row in rows for n in row["arms"]))
    libraries = ", ".join(f"{name} {version or '(not installed)'}" for name, version in info["libraries"].items())
    head = (f"Device: {info['device']}; ComfyUI {info['comfyui']}; torch {info['torch']}; Triton {info['triton']}; "
            f"{libraries}. ms per call: the median of back-to-back calls ({harness.REPEATS}, or as many as fill "
            f"{WINDOW_MS:g} ms) after {harness.WARMUP} warm-ups, one synchronise per arm; the median round of "
            f"{'/'.join(str(n) for n in sorted({r['rounds'] for r in rows}))}, arms in balanced orders. Cells: ms "
            f"(× SDPA, rel L2 vs fp32) [fastest-slowest round]. routed ÷ best = routed / min(SDPA, the routed kernel "
            f"called directly); the target, ≤ 1.05, is judged where SDPA takes ≥ {GPU_BOUND_MS:g} ms.\n\n")
    lines = ["| shape (B, H, Nq, Nkv, D) | " + " | ".join(names) + " | routed ÷ best |",
             "|---" * (len(names) + 2) + "|"]
    verdicts = []
    for row in rows:
        sdpa = row["arms"]["sdpa"]["ms"]
        cells = [f"{row['shape']} ({', '.join(map(str, row['dims']))})"]
        for name in names:
            r = row["arms"].get(name, {"error": "not run"})
            cells.append(f"failed ({r['error']})" if "error" in r else
                         f"{r['ms']:.3f} ({sdpa / r['ms']:.2f}×, {r['rel_l2']:.3f}) "
                         f"[{r['spread'][0]:.3f}-{r['spread'][1]:.3f}]")
        ratio = routed_vs_best(row)
        cells.append("–" if ratio is None else f"{ratio:.3f}" + ("" if sdpa >= GPU_BOUND_MS else " (host-bound)"))
        lines.append("| " + " | ".join(cells) + " |")
        if ratio is not None and sdpa >= GPU_BOUND_MS:
            verdicts.append((ratio, row["shape"]))
    tail = ""
    if verdicts:
        worst = max(verdicts)
        tail += (f"\nGPU-bound shapes: worst routed ÷ best {worst[0]:.3f} ({worst[1]}); "
                 f"{'within' if worst[0] <= 1.05 else 'over'} the 1.05 target.\n")
    if remote_label:
        tail += compare_lines(rows, remote_label)
    return head + "\n".join(lines) + "\n" + tail + details_table(rows, names)


def compare_lines(rows: list[dict], label: str) -> str:
    """This tree's scoped arms against the same arms of the other tree, shape by shape."""
    lines = ["", f"This tree ÷ {label} (ms ratio; above 1 = this tree slower), GPU-bound shapes judged against 1.03:",
             "", "| shape | " + " | ".join(ScopedArms) + " |", "|---" * (len(ScopedArms) + 1) + "|"]
    for row in rows:
        cells = []
        for name in ScopedArms:
            mine, theirs = row["arms"].get(name, {}).get("ms"), row["arms"].get(f"{name} ({label})", {}).get("ms")
            cells.append("–" if mine is None or theirs is None else f"{mine / theirs:.3f}")
        lines.append(f"| {row['shape']} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


ScopedArms = ("routed", "measured", "always")


def details_table(rows: list[dict], names: list[str]) -> str:
    lines = ["", "Per arm: TFLOP/s (4·B·H·Nq·Nkv·D / time), peak memory above the inputs in the first round, cosine "
             "against fp32.", "", "| shape | " + " | ".join(names) + " |", "|---" * (len(names) + 1) + "|"]
    for row in rows:
        cells = []
        for name in names:
            r = row["arms"].get(name, {})
            peak = "" if r.get("peak_mib") is None else f", +{r['peak_mib']:.0f} MiB"
            cells.append("–" if "ms" not in r else f"{r['tflops']:.0f} TFLOP/s{peak}, cos {r['cosine']:.5f}")
        lines.append(f"| {row['shape']} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--small", action="store_true", help="tiny shapes, any device (CI)")
    parser.add_argument("--shapes", choices=("all", "family", "sweep"), default="family")
    parser.add_argument("--kernel", default="auto", help="the Scope's kernel input for the scoped arms")
    parser.add_argument("--rounds", type=int, help="rounds (default: one full set of balanced orders)")
    parser.add_argument("--compare", type=Path, help="another tree of the pack, run beside this one")
    parser.add_argument("--out", type=Path, help="folder for attention_calls.md / .json")
    args = parser.parse_args(argv)
    pack = import_pack()
    harness.start_fresh(pack)
    device = torch.device("cuda:0" if torch.cuda.is_available() else "cpu")
    dtype = torch.bfloat16 if device.type == "cuda" else torch.float32
    info = versions(pack)
    print(json.dumps(info), flush=True)
    shapes = SMALL_SHAPES if args.small else {"all": SHAPES + SWEEP, "family": SHAPES, "sweep": SWEEP}[args.shapes]
    remote = harness.Remote(args.compare, "previous") if args.compare else None
    try:
        rows = measure(pack, shapes, device, dtype, args.kernel, args.rounds, remote)
    finally:
        if remote is not None:
            remote.close()
    table = to_markdown(info, rows, remote.label if remote else None)
    print(table)
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "attention_calls.md").write_text(table)
        (args.out / "attention_calls.json").write_text(json.dumps({"info": info, "rows": rows}, indent=1))
    return rows


if __name__ == "__main__":
    main()
