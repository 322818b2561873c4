"""Per-call benchmark: every way this machine can run an attention call, side by side in one run, on
the attention shapes of each supported family: ComfyUI's own attention as this host runs it ("sdpa":
ComfyUI 0.33 puts every call under a flash-first sdpa_kernel priority, comfy/ops.py; 0.3.75 leaves
torch its own choice), torch SDPA pinned to one backend alone (sdpa_cudnn, sdpa_flash,
sdpa_efficient: the exact candidates; where the pack has a kernel of that name, its arm), every
kernel of the pack that binds here (SageAttention 2 or 1, comfy-kitchen INT8: whichever are
installed), and the Scope (routed with its defaults, measured from 1 token, always). Each arm's
relative L2 and cosine against fp32 SDPA.

    python bench/attention_calls.py [--small] [--shapes family|sweep|all] [--only FLUX Wan ...]
                                    [--kernel auto] [--rounds N] [--compare DIR] [--out DIR]

--only keeps the shapes whose label holds one of the words given. --compare DIR runs the same scoped
arms of another tree of the pack (an earlier commit exported with ``git archive``) in a process of
its own, taking turns with this tree's arms in every round. --small runs tiny shapes on whatever
device is there (the CPU in CI). Writes attention_calls.md / .json under --out (the GPU runs' logs
are kept under bench/runs/) with GPU, torch, Triton and kernel versions.
"""
from __future__ import annotations

import argparse
import functools
import json
import math
import statistics
from pathlib import Path

import sas_harness

sas_harness.boot()

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from sas_harness import arms as harness  # noqa: E402
from sas_harness.arm_orders import balanced_orders  # noqa: E402
from sas_harness.call_arms import ScopedCalls, accuracy, comfy_call, fp32_reference, inputs  # noqa: E402
from sas_harness.host import comfyui_version, import_pack  # noqa: E402
from sas_harness.run import run_kernel  # noqa: E402

# (label, B, H, Nq, Nkv, D): each family's joint or self-attention at 1024² and 2048² (FLUX.1,
# FLUX.2, Qwen-Image, Z-Image: image tokens + 512/512/256/128 text tokens), LTX video, SDXL's first
# transformer level and its cross-attention to the 77-token text, Wan 2.1 14B's self-attention at 832x480x81.
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
    ("Wan 2.1 14B 480p", 1, 40, 32760, 32760, 128),
]
SWEEP = [(f"sweep {n}", 1, 24, n, n, 128) for n in (1024, 2048, 4096, 8192, 12288, 16384, 24576, 32768)]
SMALL_SHAPES = [("small self-attn", 1, 2, 256, 256, 64), ("small cross-attn", 1, 2, 256, 77, 64)]

WINDOW_MS, MAX_REPEATS = 10.0, 1000  # each arm's calls in a round fill at least this much time
GPU_BOUND_MS = 1.0  # SDPA at least this long a call: the targets are judged there, host-bound shapes reported
# torch SDPA pinned to one backend alone, by the names of the pack's exact candidates
PINNED_SDPA = {"sdpa_cudnn": "CUDNN_ATTENTION", "sdpa_flash": "FLASH_ATTENTION",
               "sdpa_efficient": "EFFICIENT_ATTENTION"}


def versions(pack) -> dict:
    info = {"comfyui": comfyui_version(), "torch": torch.__version__,
            "device": torch.cuda.get_device_name(0) if torch.cuda.is_available() else "CPU"}
    try:
        import triton
        info["triton"] = triton.__version__
    except ImportError:
        info["triton"] = "not installed"
    # the kernels' libraries, less the pack's own modules (its exact candidates call torch, named above)
    info["libraries"] = {name: version for name, version in
                         pack.nodes.status.payload(pack.nodes.SESSION)["libraries"].items()
                         if not name.startswith(pack.__name__ + ".")}
    return info


def repeats_for(ms: float) -> int:
    return max(harness.REPEATS, min(MAX_REPEATS, math.ceil(WINDOW_MS / max(ms, 1e-6))))


def kernel_arms(pack, device) -> dict:
    """Every kernel that binds on ``device``, called directly (plus the output reshape every caller needs)."""
    session = pack.nodes.SESSION
    found = (session.knowledge.kernel(name, device).bound for name in session.knowledge.usable([device])[1:])
    return {bound.name: bound for bound in found if bound is not None}


def pinned_sdpa(backend: str, q, k, v):
    """torch SDPA on ``backend`` (an SDPBackend name) alone, (B, N, H*D) out as ComfyUI's attention gives it."""
    from torch.nn.attention import SDPBackend, sdpa_kernel
    b, h, nq, d = q.shape
    with sdpa_kernel([getattr(SDPBackend, backend)]):
        return F.scaled_dot_product_attention(q, k, v).transpose(1, 2).reshape(b, nq, h * d)


def direct_kernel(bound, q, k, v):
    """The pack's kernel ``bound`` called directly, (B, N, H*D) out."""
    b, h, nq, d = q.shape
    return run_kernel(bound, q, k, v).transpose(1, 2).reshape(b, nq, h * d)


def direct_arms(q, k, v, heads, device, kernels: dict) -> dict:
    """The arms called without the Scope: ComfyUI's attention (bare and through a pass-through override),
    torch SDPA pinned to each backend on a GPU, and each kernel of ``kernels``."""
    passthrough = {"optimized_attention_override": lambda func, *a, **kw: func(*a, **kw)}
    arms = {"sdpa": functools.partial(comfy_call, q, k, v, heads),
            "pass-through override": functools.partial(comfy_call, q, k, v, heads, passthrough)}
    if device.type == "cuda":
        for name, backend in PINNED_SDPA.items():
            if name not in kernels:  # the pack's own candidate of that name is timed below instead
                arms[name] = functools.partial(pinned_sdpa, backend, q, k, v)
    for name, bound in kernels.items():
        arms[name] = functools.partial(direct_kernel, bound, q, k, v)
    return arms


def timed_arm(fn, device):
    """A runner of ``fn``: (its output, its median ms over ``repeats`` back-to-back calls)."""
    def run(repeats: int):
        return fn(), harness.timed(fn, device, repeats)
    return run


def remote_arm(remote, name: str):
    """A runner of the other tree's scoped arm ``name``: its ms and accuracy, as that process measured them."""
    def run(repeats: int):
        return remote.ask("calls.run", name=name, repeats=repeats)
    return run


def measure(pack, shapes, device, dtype, kernel="auto", rounds=None, remote=None) -> list[dict]:
    """Per shape, every arm once a round, the rounds in balanced orders (each arm in every place and
    after every other equally often), and each arm's median round."""
    kernels = kernel_arms(pack, device)
    routed_kernel = pack.nodes.SESSION.knowledge.kernel(kernel, device).bound
    rows = []
    for label, b, h, nq, nkv, d in shapes:
        q, k, v = inputs(b, h, nq, nkv, d, device, dtype)
        ref = fp32_reference(q, k, v)
        arms = direct_arms(q, k, v, h, device, kernels)
        runners = {name: timed_arm(fn, device) for name, fn in arms.items()}
        scoped = ScopedCalls(pack, (b, h, nq, nkv, d), dtype, device, kernel)
        runners.update({name: functools.partial(scoped.run, name) for name in scoped.patched})
        if remote is not None:
            for name in remote.ask("calls.setup", dims=[b, h, nq, nkv, d], dtype=str(dtype).split(".")[-1],
                                   kernel=kernel):
                runners[f"{name} ({remote.label})"] = remote_arm(remote, name)
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


def closing_line(rows: list[dict]) -> str:
    """One line of what the run found: the fastest arm of each shape, and its ms against sdpa's."""
    fastest = []
    for row in rows:
        timed = {name: r["ms"] for name, r in row["arms"].items() if "ms" in r}
        best = min(timed, key=timed.get)
        fastest.append(f"{row['shape']} {best} {row['arms']['sdpa']['ms'] / timed[best]:.2f}×")
    return "fastest (× sdpa): " + "; ".join(fastest)


def to_markdown(info: dict, rows: list[dict], remote_label: str | None = None) -> str:
    names = list(dict.fromkeys(n for row in rows for n in row["arms"]))
    libraries = ", ".join(f"{name} {version or '(not installed)'}" for name, version in info["libraries"].items())
    rounds = "/".join(str(n) for n in sorted({r["rounds"] for r in rows}))
    head = (f"Device: {info['device']}; ComfyUI {info['comfyui']}; torch {info['torch']}; Triton {info['triton']}; "
            f"{libraries}. sdpa: ComfyUI's attention as this host runs it; sdpa_cudnn, sdpa_flash, sdpa_efficient: "
            f"torch SDPA on that backend alone. ms per call: the median of back-to-back calls ({harness.REPEATS}, "
            f"or as many as fill {WINDOW_MS:g} ms) after {harness.WARMUP} warm-ups, one synchronise per arm; the "
            f"median round of {rounds}, arms in balanced orders. Cells: ms (× SDPA, rel L2 vs fp32) "
            f"[fastest-slowest round]. routed ÷ best = routed / min(SDPA, the routed kernel called directly); the "
            f"target, ≤ 1.05, is judged where SDPA takes ≥ {GPU_BOUND_MS:g} ms.\n\n")
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
    parser.add_argument("--only", nargs="*", default=[], help="the shapes whose label holds one of these words")
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
    if args.only:
        shapes = [shape for shape in shapes if any(word in shape[0] for word in args.only)]
        if not shapes:
            parser.error(f"no shape's label holds {', '.join(args.only)}")
    remote = harness.Remote(args.compare, "previous") if args.compare else None
    try:
        rows = measure(pack, shapes, device, dtype, args.kernel, args.rounds, remote)
    finally:
        if remote is not None:
            remote.close()
    table = to_markdown(info, rows, remote.label if remote else None)
    print(table)
    print(closing_line(rows))
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "attention_calls.md").write_text(table)
        (args.out / "attention_calls.json").write_text(json.dumps({"info": info, "rows": rows}, indent=1))
    return rows


if __name__ == "__main__":
    main()
