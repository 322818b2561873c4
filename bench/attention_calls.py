"""Per-call benchmark: PyTorch SDPA, cuDNN-first SDPA, each SageAttention kernel, and the
routed scope, side by side in one run, on the attention shapes of each supported family.

    python bench/attention_calls.py [--small] [--out docs/bench]

--small runs tiny shapes on whatever device is there (CPU in CI: SDPA arms only) so the script
cannot rot. Prints GPU, torch, Triton and sageattention versions first; writes a markdown table.
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import math
import statistics
import sys
import time
from pathlib import Path
from typing import Callable

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
sys.path.insert(0, str(Path(__file__).resolve().parent))
import sas_host  # noqa: E402

sas_host.boot_comfyui(sas_host.comfyui_path())
sas_host.import_pack()

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

import comfy.ldm.modules.attention as comfy_attention  # noqa: E402

from sage_attention_scope.patches import Settings, checks, kernels, timing  # noqa: E402
from sage_attention_scope.patches.router import AttentionRouter  # noqa: E402
from arm_orders import balanced_orders  # noqa: E402

# (label, B, H, Nq, Nkv, D) of each family at 1024² and 2048²: FLUX.1/FLUX.2/Qwen-Image/Z-Image
# joint attention (image tokens + 512/512/256/128 text tokens), LTX-2 and LTX-Video video
# self-attention, SDXL's first transformer level and its cross-attention to the 77-token text.
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
# Sequence-length sweep at FLUX's head layout, for the speed-up plot.
SWEEP = [(f"sweep {n}", 1, 24, n, n, 128) for n in (1024, 2048, 4096, 8192, 12288, 16384, 24576, 32768)]
SMALL_SHAPES = [("small self-attn", 1, 2, 256, 256, 64), ("small cross-attn", 1, 2, 256, 77, 64)]


def versions() -> dict:
    info = {"comfyui": sas_host.comfyui_version(), "torch": torch.__version__,
            "sageattention": kernels.installed().version or "not installed"}
    try:
        import triton
        info["triton"] = triton.__version__
    except ImportError:
        info["triton"] = "not installed"
    info["device"] = torch.cuda.get_device_name(0) if torch.cuda.is_available() else "CPU"
    return info


WARMUP, REPEATS = 2, 10
# Each arm's calls fill at least this much time: a host-bound call (tens of microseconds) is
# timed a few hundred times, so the host's jitter - as large as the 5% asked of routing there -
# evens out; a long call keeps REPEATS, a window long enough to span the H200's clock swings
# (5 calls of 5 ms a round left round medians 10% apart). Ten rounds or more
# (``balanced_orders``) then give each arm its median.
WINDOW_MS, MAX_REPEATS = 10.0, 1000


def timed(fn, device, repeats: int = REPEATS) -> float:
    """Median ms per call: the same clock measured routing uses (patches/timing.py), calls
    back to back with one synchronise, as a model runs them."""
    return timing.event_clock("bench", fn, device, warmup=WARMUP, repeats=repeats)


def repeats_for(ms: float) -> int:
    """How many timed calls fill WINDOW_MS, given one call's time."""
    return max(REPEATS, min(MAX_REPEATS, math.ceil(WINDOW_MS / max(ms, 1e-6))))


# An SDPA call shorter than this is host-bound on an H200 (the 77-key cross-attention, 1k-token
# self-attention): its time is how fast the host issues it. There the host's own speed drifts more
# than the 5% asked of routing - SDPA took 38 us a call in one round and 70 us in the next - so
# such shapes are also timed call by call (``call_by_call``), and that figure is their verdict.
HOST_BOUND_MS, TURNS, WARMUP_TURNS = 0.15, 2000, 50


def one_call_ms(fn: Callable[[], object], device) -> float:
    """One call alone: CUDA events around it and a synchronise after (the wall clock on a CPU)."""
    if device.type != "cuda":
        t0 = time.perf_counter()
        fn()
        return (time.perf_counter() - t0) * 1e3
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    fn()
    end.record()
    end.synchronize()
    return start.elapsed_time(end)


def call_by_call(fast: dict[str, Callable[[], object]], device, turns: int | None = None,
                 alone: dict[str, Callable[[], object]] | None = None) -> dict[str, float]:
    """Median ms per call of each arm, every call alone between CUDA events.

    The ``fast`` arms take turns call by call, cycling through their balanced orders, so each arm
    follows each other one equally often: a slow or fast spell of the host falls on all alike.
    The ``alone`` arms (a kernel called directly: several times slower on these shapes, and the
    call after its long Python/Triton path starts with the host cold) take their turns in a loop
    of their own afterwards; interleaved, they added 6-17 us to whichever arm followed them on
    the H200."""
    turns = turns or TURNS
    times: dict[str, list[float]] = {}
    for group in (fast, alone or {}):
        if not group:
            continue
        orders = balanced_orders(list(group))
        times.update({name: [] for name in group})
        for turn in range(WARMUP_TURNS + turns):
            for name in orders[turn % len(orders)]:
                ms = one_call_ms(group[name], device)
                if turn >= WARMUP_TURNS:
                    times[name].append(ms)
    return {name: statistics.median(values) for name, values in times.items()}


def inputs(b, h, nq, nkv, d, device, dtype, seed=0):
    g = torch.Generator(device=device).manual_seed(seed)
    q = torch.randn(b, h, nq, d, device=device, generator=g, dtype=torch.float32)
    k = torch.randn(b, h, nkv, d, device=device, generator=g) + 2 * torch.randn(1, 1, 1, d, device=device, generator=g)
    v = torch.randn(b, h, nkv, d, device=device, generator=g)
    return q.to(dtype), k.to(dtype), v.to(dtype)


def fp32_reference(q, k, v):
    """fp32 SDPA on the memory-efficient kernel where it exists: a ComfyUI that turns that
    backend off globally (0.12 does on some setups) would otherwise fall back to the math
    kernel, which needs N² memory (96 GiB at 32k tokens, 24 heads)."""
    if q.device.type != "cuda":
        return F.scaled_dot_product_attention(q.float(), k.float(), v.float())
    from torch.nn.attention import SDPBackend, sdpa_kernel
    with sdpa_kernel([SDPBackend.EFFICIENT_ATTENTION, SDPBackend.MATH]):
        return F.scaled_dot_product_attention(q.float(), k.float(), v.float())


def comfy_call(q, k, v, heads, options=None):
    """One call as a diffusion model makes it: ComfyUI's wrap_attn-wrapped SDPA, (B, N, H*D) out."""
    return comfy_attention.attention_pytorch(q, k, v, heads, skip_reshape=True, transformer_options=options)


def kernel_arms(device) -> tuple[list, object]:
    """Every kernel the installed sageattention provides on ``device`` (auto's choice first),
    and auto's choice, which the routed arms use."""
    if device.type != "cuda":
        return [], None
    auto = kernels.resolve("auto", device).kernel
    arms = [auto] if auto is not None else []
    for name in kernels.KERNEL_NAMES:
        kernel = kernels.resolve(name, device).kernel
        if kernel is not None and all(kernel.name != a.name for a in arms):
            arms.append(kernel)
    return arms, auto


def measure(shapes, device, dtype, rounds: int | None = None) -> list[dict]:
    """Per shape, every arm once a round, in the rounds' balanced orders (``arm_orders``; all of
    them unless ``rounds`` says how many), and each arm's median round: a clock ramp, a noisy
    moment or the arm before it then does not favour one arm."""
    arms_of_kernels, auto = kernel_arms(device)
    rows = []
    for label, b, h, nq, nkv, d in shapes:
        q, k, v = inputs(b, h, nq, nkv, d, device, dtype)
        ref = fp32_reference(q, k, v)
        flops = 4 * b * h * nq * nkv * d
        row = {"shape": label, "dims": [b, h, nq, nkv, d]}
        arms: dict[str, Callable[[], tuple[torch.Tensor, float]]] = {}
        raw: dict[str, Callable[[], torch.Tensor]] = {}  # each arm's call itself
        routers: dict[str, AttentionRouter] = {}

        def plain(fn, name):
            raw[name] = fn
            return lambda: (fn(), timed(fn, device, repeats))

        def in_scope(router, call, name):  # one open scope around all the timed calls
            raw[name], routers[name] = call, router
            return lambda: router.outer_sample_wrapper(lambda: (call(), timed(call, device, repeats)))

        repeats = repeats_for(timed(lambda: comfy_call(q, k, v, h), device))
        row["repeats"] = repeats
        arms["sdpa"] = plain(lambda: comfy_call(q, k, v, h), "sdpa")
        # The floor of any override: ComfyUI's wrap_attn hands the call to one that only passes it
        # on. Where a call is host-bound (tens of microseconds), routed pays this too.
        passthrough = {"optimized_attention_override": lambda func, *a, **kw: func(*a, **kw)}
        arms["pass-through override"] = plain(lambda: comfy_call(q, k, v, h, passthrough), "pass-through override")
        if device.type == "cuda":
            from torch.nn.attention import SDPBackend, sdpa_kernel

            def cudnn():
                with sdpa_kernel([SDPBackend.CUDNN_ATTENTION, SDPBackend.FLASH_ATTENTION, SDPBackend.MATH]):
                    return comfy_call(q, k, v, h)
            arms["cudnn_first"] = plain(cudnn, "cudnn_first")
        for kernel in arms_of_kernels:
            def direct(kernel=kernel):  # the kernel plus the output reshape every caller needs
                out = kernel.run(q, k, v, layout="HND", sm_scale=None, smooth_k=False)
                return out.transpose(1, 2).reshape(b, nq, h * d)
            arms[kernel.name] = plain(direct, kernel.name)
        if auto is not None:
            # routed: the node's defaults (threshold, then measured); measured: timing alone decides;
            # always: every call on the kernel, so always/direct is the router's own overhead.
            for name, settings in (("routed", Settings()), ("measured", Settings(min_seq_len=1)),
                                   ("always", Settings(min_seq_len=1, routing="always"))):
                router = AttentionRouter(dataclasses.replace(settings, first_call_check=False))
                options = {"optimized_attention_override": router.override}  # what a Scope node installs
                arms[f"{name} ({auto.name})"] = in_scope(router, lambda o=options: comfy_call(q, k, v, h, o),
                                                         f"{name} ({auto.name})")
        times: dict[str, list[float]] = {name: [] for name in arms}
        orders = balanced_orders(list(arms))
        row["rounds"] = rounds or len(orders)
        for round_index in range(row["rounds"]):
            for name in orders[round_index % len(orders)]:
                run = arms[name]
                if "error" in row.get(name, {}):
                    continue
                if device.type == "cuda":
                    torch.cuda.reset_peak_memory_stats()
                base = torch.cuda.memory_allocated() if device.type == "cuda" else 0
                try:
                    out, ms = run()
                except Exception as exc:  # a kernel this build lacks (e.g. no sm89 module): say so, go on
                    row[name] = {"error": f"{type(exc).__name__}: {str(exc).splitlines()[0][:80] if str(exc) else ''}"}
                    continue
                times[name].append(ms)
                if round_index == 0:
                    peak = (torch.cuda.max_memory_allocated() - base) / 2**20 if device.type == "cuda" else float("nan")
                    cos, rel, _ = checks.compare(out.reshape(b, nq, h, d).transpose(1, 2), ref)
                    row[name] = {"peak_mib": peak, "cosine": cos, "rel_l2": rel}
        for name, values in times.items():
            if values:
                ms = statistics.median(values)
                row[name].update(ms=ms, ms_rounds=values, tflops=flops / ms / 1e9)
        routed = f"routed ({auto.name})" if auto is not None else None
        if routed and row["sdpa"].get("ms", HOST_BOUND_MS) < HOST_BOUND_MS:
            ran = [name for name in ("sdpa", "pass-through override", routed, auto.name) if "ms" in row.get(name, {})]
            fast = {name: raw[name] for name in ran if name != auto.name}
            alone = {name: raw[name] for name in ran if name == auto.name}
            row["call_by_call"] = routers[routed].outer_sample_wrapper(
                lambda: call_by_call(fast, device, alone=alone))
        rows.append(row)
    return rows


ROW_FIELDS = ("shape", "dims", "repeats", "rounds", "call_by_call")  # a row's other keys are its arms


def arm_names(row: dict) -> list[str]:
    return [key for key in row if key not in ROW_FIELDS]


def routed_vs_best(row: dict) -> tuple[str, float] | None:
    """(arm, routed ms / min(SDPA, the routed kernel called directly)) for one row; the target is
    <= 1.05 at every shape. From the call-by-call timing where the shape has one (host-bound),
    else from the rounds. None where either side did not run."""
    routed = next((a for a in row if a.startswith("routed (")), None)
    kernel = routed[len("routed ("):-1] if routed else None
    if routed is not None and all(a in row.get("call_by_call", {}) for a in ("sdpa", kernel, routed)):
        turns = row["call_by_call"]
        return routed, turns[routed] / min(turns["sdpa"], turns[kernel])
    sides = [row.get("sdpa", {}), row.get(kernel, {})]
    if routed is None or "ms" not in row[routed] or any("ms" not in side for side in sides):
        return None
    return routed, row[routed]["ms"] / min(side["ms"] for side in sides)


def to_markdown(info: dict, rows: list[dict]) -> str:
    arms = list(dict.fromkeys(a for row in rows for a in arm_names(row)))
    rounds = "/".join(str(n) for n in sorted({row.get("rounds", 1) for row in rows}))
    head = (f"Device: {info['device']}; ComfyUI {info['comfyui']}; torch {info['torch']}; Triton {info['triton']}; "
            f"sageattention {info['sageattention']}. ms per call: median of back-to-back calls ({REPEATS}, or "
            f"as many as fill {WINDOW_MS:g} ms: a host-bound call is timed hundreds of times) after "
            f"{WARMUP} warm-ups, one synchronise per arm; the median of {rounds} rounds, the arms in a "
            f"balanced order (each in every place, and after every other arm, equally often) "
            f"(× = SDPA time / arm time; rel L2 vs fp32). Last column: routed time / min(SDPA, the "
            f"routed kernel called directly); the target is ≤ 1.05.\n\n")
    lines = ["| shape (B, H, Nq, Nkv, D) | " + " | ".join(arms) + " | routed ÷ best |",
             "|---" * (len(arms) + 2) + "|"]
    worst = None
    for row in rows:
        sdpa = row["sdpa"]["ms"]
        cells = [f"{row['shape']} ({', '.join(map(str, row['dims']))})"]
        for a in arms:
            r = row.get(a, {"error": "not run"})
            cells.append(f"failed ({r['error']})" if "error" in r else
                         f"{r['ms']:.3f} ({sdpa / r['ms']:.2f}×, {r['rel_l2']:.3f})")
        ratio = routed_vs_best(row)
        how = " (call by call)" if "call_by_call" in row else ""
        cells.append("–" if ratio is None else f"{ratio[1]:.3f}{how}")
        if ratio is not None and (worst is None or ratio[1] > worst[1]):
            worst = (row["shape"], ratio[1])
        lines.append("| " + " | ".join(cells) + " |")
    tail = "" if worst is None else (f"\nWorst routed ÷ min(SDPA, kernel): {worst[1]:.3f} ({worst[0]}); "
                                     f"{'within' if worst[1] <= 1.05 else 'over'} the 1.05 target.\n")
    return head + "\n".join(lines) + "\n" + tail + call_by_call_table(rows) + details_table(rows, arms)


def call_by_call_table(rows: list[dict]) -> str:
    """The host-bound shapes' arms timed taking turns call by call: the figures their routed ÷
    best comes from."""
    timed_rows = [row for row in rows if row.get("call_by_call")]
    if not timed_rows:
        return ""
    arms = list(dict.fromkeys(a for row in timed_rows for a in row["call_by_call"]))
    lines = ["", f"Host-bound shapes (SDPA under {HOST_BOUND_MS} ms), each call alone between CUDA events, "
             f"median µs of {TURNS} after {WARMUP_TURNS} unrecorded: SDPA, the pass-through override and routed "
             f"take turns call by call, cycling through their balanced orders; the kernel called directly runs in its own "
             f"loop afterwards (interleaved, its long host path slowed whichever call came next).", "",
             "| shape | " + " | ".join(arms) + " |", "|---" * (len(arms) + 1) + "|"]
    for row in timed_rows:
        turns = row["call_by_call"]
        lines.append(f"| {row['shape']} | " + " | ".join(
            f"{turns[a] * 1e3:.1f}" if a in turns else "–" for a in arms) + " |")
    return "\n".join(lines) + "\n"


def details_table(rows: list[dict], arms: list[str]) -> str:
    """The second table: per arm, what the first table has no room for."""
    details = ["", "Per arm, first round: TFLOP/s (4·B·H·Nq·Nkv·D / time), peak memory above the inputs "
               "while the arm ran, cosine against fp32.", "",
               "| shape | " + " | ".join(arms) + " |", "|---" * (len(arms) + 1) + "|"]
    for row in rows:
        cells = [row["shape"]]
        for a in arms:
            r = row.get(a, {})
            if "ms" not in r:
                cells.append("–")
                continue
            peak = f"+{r['peak_mib']:.0f} MiB" if r["peak_mib"] == r["peak_mib"] else "no CUDA peak"  # NaN on a CPU
            cells.append(f"{r['tflops']:.0f} TFLOP/s, {peak}, cos {r['cosine']:.5f}")
        details.append("| " + " | ".join(cells) + " |")
    return "\n".join(details) + "\n"


def plot(rows: list[dict], info: dict, path: Path) -> bool:
    """Speed-up over default SDPA against sequence length, one line per arm; False without matplotlib."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    sweep = [r for r in rows if r["shape"].startswith("sweep")]
    if not sweep:
        return False
    fig, ax = plt.subplots(figsize=(7, 4))
    lengths = [r["dims"][2] for r in sweep]
    for arm in [a for a in arm_names(sweep[0]) if a != "sdpa"]:
        if any("ms" not in r.get(arm, {}) for r in sweep):
            continue
        ax.plot(lengths, [r["sdpa"]["ms"] / r[arm]["ms"] for r in sweep], marker="o", label=arm)
    ax.axhline(1.0, color="grey", linewidth=0.8)
    ax.set_xscale("log", base=2)
    ax.set_xlabel("sequence length (B=1, H=24, D=128)")
    ax.set_ylabel("speed-up over default SDPA")
    ax.set_title(f"{info['device']}, torch {info['torch']}, sageattention {info['sageattention']}", fontsize=9)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return True


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--small", action="store_true", help="tiny shapes, any device (CI)")
    parser.add_argument("--shapes", choices=("all", "family", "sweep"), default="all",
                        help="the families' shapes, the sequence-length sweep (the plot), or both")
    parser.add_argument("--rounds", type=int, help="rounds of every arm, in balanced orders (default: one full "
                        "set of orders, as many rounds as arms, twice that for an odd count); median")
    parser.add_argument("--out", type=Path, help="folder for attention_calls.md / .json")
    args = parser.parse_args(argv)
    timing.use_store(None)  # a benchmark measures afresh: no decisions saved by earlier sessions
    device = torch.device("cuda:0" if torch.cuda.is_available() else "cpu")
    dtype = torch.bfloat16 if device.type == "cuda" else torch.float32
    info = versions()
    print(" | ".join(f"{k} {v}" for k, v in info.items()), flush=True)
    shapes = {"all": SHAPES + SWEEP, "family": SHAPES, "sweep": SWEEP}[args.shapes]
    rows = measure(SMALL_SHAPES if args.small else shapes, device, dtype, args.rounds)
    table = to_markdown(info, rows)
    print(table)
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "attention_calls.md").write_text(table)
        (args.out / "attention_calls.json").write_text(json.dumps({"info": info, "rows": rows}, indent=1))
        plot(rows, info, args.out / "attention_speedup.png")
    return rows


if __name__ == "__main__":
    main()
