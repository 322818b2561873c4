"""Per-step benchmark: whole generations of each family through ComfyUI's own model classes, with
no node, through the Scope (its defaults, and every eligible call on the kernel), and - where the
machine has a kernel - a blind override of our own (every unmasked call with query and key of at
least 1024 tokens on the kernel: the ceiling for today's kernels). Arms take turns in balanced
orders, each after one warm-up generation of its own (the first generation's time, which holds the
first-call checks and measured routing, is reported apart).

    python bench/model_steps.py [--small] [--family FLUX.1 Qwen-Image SD3@1024] [--size 1024 2048]
                                [--depth full] [--steps 5] [--warm-steps 2] [--kernel auto]
                                [--scope routing=always min_seq_len=1] [--compare DIR] [--out DIR]

Per step: the mean of the steps after ``--warm-steps`` in each generation (default 2 warm-up + 3
timed steps; cfg 1, one batch: one forward per step), the median over rounds; each arm's peak GPU
memory. Random weights, bf16 (fp32 tiny configs with --small, which CI runs). --depth full builds the
released checkpoints' depth (FLUX.1 dev: 19 + 38 blocks); otherwise one or two blocks. A family
with image sizes runs at each --size, or at the one its NAME@SIZE names; video families at their
own latent (Wan 2.1 14B 832x480x81, "Wan 2.2 5B" 1280x704x121, HunyuanVideo 848x480x73 under a
short prompt's mask). --compare DIR runs the Scope arms of another tree of the pack in a process of
its own, interleaved.

--whole [N] (default 20) times whole N-step generations instead, no node against the Scope's defaults:
each arm's first generation (model loading, the first-call checks, measured routing), then
``--rounds`` (default 1) more of each in turn, each timed from the sampler's start to its end (one
synchronise before and after, none between steps); the Scope's first-generation measuring cost as
its Status payload reports it (``last_ms``: the generation's sampling and kernel-timing ms), and
again after the next generation (0 once routing is measured).

The video and DiT run of the GPU issue (docs/bench/runs/README.md):

    python bench/model_steps.py --depth full --family Wan "Wan 2.2 5B" HunyuanVideo SD3@1024 SD3@2048 Chroma@1024
"""
from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

import sas_harness

sas_harness.boot()

import torch  # noqa: E402

import comfy.model_management  # noqa: E402

from sas_harness import arms as harness  # noqa: E402
from sas_harness.arm_orders import balanced_orders  # noqa: E402
from sas_harness.families import BENCH_MODELS, CASES, SIZES, lacking  # noqa: E402
from sas_harness.host import comfyui_version, import_pack  # noqa: E402
from sas_harness.models import flat_latent, sample  # noqa: E402
from sas_harness.step_arms import Generations, rel_l2  # noqa: E402


def blind(bound, model):
    """``model`` with an override that sends every unmasked call of a dtype and head size the kernel
    takes, whose query and key have at least 1024 tokens, to ``bound``; no checks, no routing."""
    from sage_attention_scope.patches.call import Call

    def override(func, *args, **kwargs):
        call = Call.from_comfy(args, kwargs)
        backend = bound.backend
        if (call is None or call.mask is not None or min(call.q_len, call.kv_len) < 1024 or call.layout_problem()
                or call.dtype not in backend.dtypes or call.head_dim not in backend.head_dims
                or call.layout not in backend.layouts):
            return func(*args, **kwargs)
        return call.output(*bound(call, _NO_SMOOTHING))

    patched = model.clone()
    patched.model_options.setdefault("transformer_options", {})["optimized_attention_override"] = override
    return patched


class _NoSmoothing:
    smooth_k = False


_NO_SMOOTHING = _NoSmoothing()


def parse_inputs(pairs: list[str]) -> dict:
    """["routing=always", "min_seq_len=1"] -> the Scope node's inputs, typed as the node takes them."""
    out = {}
    for pair in pairs:
        name, _, value = pair.partition("=")
        out[name] = {"true": True, "false": False}.get(value.lower(),
                                                        int(value) if value.lstrip("-").isdigit() else value)
    return out


def run_model(pack, family, size, args, device, dtype, remote=None) -> dict:
    kernel = {"kernel": args.kernel}
    arms = {"no node": None, "scope": {**kernel, **parse_inputs(args.scope)},
            "always": {**kernel, "min_seq_len": 1, "routing": "always"}}
    started = time.perf_counter()
    gens = Generations(pack, family, size, args.depth, args.small, dtype, device, arms)
    print(f"{family}{f' {size}²' if size else ''}: model built in {time.perf_counter() - started:.1f} s (apart from "
          f"every step)", flush=True)
    bound = pack.nodes.SESSION.knowledge.kernel(args.kernel, device).bound if device.type == "cuda" else None
    if bound is not None:
        gens.arms["blind"] = blind(bound, gens.arms["no node"])
    runners = {name: (lambda name: lambda ref: gens.run(name, args.steps))(name) for name in gens.arms}
    if remote is not None:
        remote.ask("steps.setup", family=family, size=size, depth=args.depth, small=args.small,
                   dtype=str(dtype).split(".")[-1], arms={n: arms[n] for n in ("scope", "always")})
        for name in ("scope", "always"):
            runners[f"{name} ({remote.label})"] = (lambda name: lambda ref: remote.ask(
                "steps.run", name=name, steps=args.steps, reference=ref))(name)
    results = {name: {"step_ms": [], "first": None, "peak_gib": None} for name in runners}
    runners = {name: peak_memory(run, results[name], device) for name, run in runners.items()}
    reference = Path(tempfile.mkdtemp()) / "no_node.pt"
    for name, run in runners.items():  # one warm-up generation each: checks, routing, compilation
        got = run(None)
        results[name]["first_ms"] = sum(got["step_ms"] if isinstance(got, dict) else got[1])
        if name == "no node":
            torch.save(got[0].cpu(), reference)
    orders = balanced_orders(list(runners))
    for index in range(args.rounds or len(orders)):
        for name in orders[index % len(orders)]:
            got = runners[name](str(reference))
            result = results[name]
            if isinstance(got, dict):
                step_ms, result["counts"] = got["step_ms"], got["counts"]
                result.setdefault("rel_l2", got.get("rel_l2"))
            else:
                latent, step_ms = got
                result["counts"] = harness.counts(pack) if name not in ("no node", "blind") else {}
                result.setdefault("rel_l2", rel_l2(latent, torch.load(reference).to(latent.device)))
            result["step_ms"].append(statistics.mean(step_ms[args.warm_steps:] or step_ms))
    for result in results.values():
        result["ms_per_step"] = statistics.median(result["step_ms"])
    gens = None  # the arms' models go (the runners' closures held them) before the next model is built
    comfy.model_management.unload_all_models()
    comfy.model_management.soft_empty_cache()
    return results


def whole_generation(gens, name: str, steps: int, device) -> tuple[torch.Tensor, float]:
    """One ``steps``-step generation of arm ``name``: its final latent and its wall ms from the
    sampler's start to its end (a synchronise before and after; none between the steps)."""
    def now():
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        return time.perf_counter()
    started = now()
    out = sample(gens.arms[name], gens.cond, latent_hw=gens.latent_hw, channels=gens.channels, steps=steps, seed=0,
                 latent=gens.latent() if gens.latent else None)
    return flat_latent(out).float(), (now() - started) * 1e3


def run_whole(pack, family, size, args, device, dtype) -> dict:
    """Whole ``args.whole``-step generations, no node against the Scope's defaults (``--kernel``,
    ``--scope``): each arm's first generation, then ``args.rounds`` (default 1) more of each in turn."""
    arms = {"no node": None, "scope": {"kernel": args.kernel, **parse_inputs(args.scope)}}
    started = time.perf_counter()
    gens = Generations(pack, family, size, args.depth, args.small, dtype, device, arms)
    built_s = time.perf_counter() - started
    print(f"{family}{f' {size}²' if size else ''}: model built in {built_s:.1f} s (apart from every generation)",
          flush=True)
    status = pack.nodes.status.payload
    results = {name: {"first_ms": None, "ms": [], "status_first": None, "status_next": None} for name in arms}
    reference = None
    for name in arms:  # each arm's first generation: checks, measured routing, model loading
        latent, ms = whole_generation(gens, name, args.whole, device)
        results[name]["first_ms"] = ms
        if name == "no node":
            reference = latent
        else:
            results[name]["status_first"] = dict(status(pack.nodes.SESSION)["last_ms"])
            results[name]["rel_l2"] = rel_l2(latent, reference)
    for index in range(args.rounds or 1):
        for name in balanced_orders(list(arms))[index % 2]:
            _, ms = whole_generation(gens, name, args.whole, device)
            results[name]["ms"].append(ms)
            if name != "no node":
                results[name]["status_next"] = dict(status(pack.nodes.SESSION)["last_ms"])
                results[name]["counts"] = harness.counts(pack)
    for result in results.values():
        result["whole_ms"] = statistics.median(result["ms"])
    results["no node"]["rel_l2"] = 0.0
    results["built_s"] = built_s
    gens = None
    comfy.model_management.unload_all_models()
    comfy.model_management.soft_empty_cache()
    return results


def whole_markdown(all_results: dict, header: str, steps: int) -> str:
    lines = [header, "", f"| model | no node, s per {steps}-step generation | Scope, s | × no node | "
             "final latent rel L2 vs no node | first generation s (no node / Scope) | Scope's first generation: "
             "Status kernel-timing ms (% of a generation) | next generation: Status kernel-timing ms | "
             "calls kernel/SDPA (last generation) |", "|---|---|---|---|---|---|---|---|---|"]
    for label, results in all_results.items():
        base, scoped = results["no node"], results["scope"]
        first, following = scoped["status_first"] or {}, scoped["status_next"] or {}
        device_counts = next(iter(scoped.get("counts", {}).values()), None)
        calls = f"{device_counts['sage']}/{device_counts['sdpa_total']}" if device_counts else "–"
        timing = first.get("timing", 0.0)
        lines.append(f"| {label} | {base['whole_ms'] / 1e3:.2f} | {scoped['whole_ms'] / 1e3:.2f} | "
                     f"{base['whole_ms'] / scoped['whole_ms']:.3f} | {scoped['rel_l2']:.5f} | "
                     f"{base['first_ms'] / 1e3:.2f} / {scoped['first_ms'] / 1e3:.2f} | "
                     f"{timing:.0f} ({100 * timing / scoped['whole_ms']:.2f}%) | {following.get('timing', 0.0):.0f} | "
                     f"{calls} |")
    return "\n".join(lines) + "\n"


def peak_memory(run, result: dict, device):
    """``run``, noting the most GPU memory its generations held, weights included (this process's
    arms; another tree's arms run in their own process and report none)."""
    def measured(reference):
        if device.type == "cuda":
            torch.cuda.reset_peak_memory_stats(device)
        got = run(reference)
        if device.type == "cuda" and not isinstance(got, dict):
            result["peak_gib"] = max(result["peak_gib"] or 0.0, torch.cuda.max_memory_allocated(device) / 2 ** 30)
        return got
    return measured


def to_markdown(all_results: dict, header: str) -> str:
    lines = [header, "", "| model | arm | ms/step | × no node | final latent rel L2 vs no node | first generation ms "
             "| peak GiB | calls kernel/SDPA (last generation) |", "|---|---|---|---|---|---|---|---|"]
    for label, results in all_results.items():
        base = results["no node"]["ms_per_step"]
        for name, r in results.items():
            device_counts = next(iter(r.get("counts", {}).values()), None)
            calls = f"{device_counts['sage']}/{device_counts['sdpa_total']}" if device_counts else "–"
            if device_counts and device_counts.get("copied"):  # q/k/v copied for the kernel (call.Call.copies)
                calls += f" ({device_counts['copied']} copied)"
            peak = f"{r['peak_gib']:.1f}" if r.get("peak_gib") else "–"
            lines.append(f"| {label} | {name} | {r['ms_per_step']:.1f} | {base / r['ms_per_step']:.3f} | "
                         f"{r['rel_l2']:.5f} | {r['first_ms']:.0f} | {peak} | {calls} |")
    return "\n".join(lines) + "\n"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--small", action="store_true", help="tiny configs on any device (CI)")
    parser.add_argument("--family", nargs="*", help="default: FLUX.1 (--small) or every family this ComfyUI has")
    parser.add_argument("--size", nargs="*", type=int, default=[2048], help="image sizes (families with sizes)")
    parser.add_argument("--depth", default="reduced", help="'full': the released depth; else one or two blocks")
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--warm-steps", type=int, default=2, help="steps of each generation not timed")
    parser.add_argument("--rounds", type=int, help="default: one full set of balanced orders")
    parser.add_argument("--kernel", default="auto", help="the Scope's kernel input")
    parser.add_argument("--scope", nargs="*", default=[], help="more Scope inputs for the 'scope' arm, NAME=VALUE")
    parser.add_argument("--compare", type=Path, help="another tree of the pack, run beside this one")
    parser.add_argument("--whole", type=int, nargs="?", const=20,
                        help="whole generations of this many steps (default 20), no node against the Scope")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    if args.whole and args.compare:
        parser.error("--whole runs this tree's arms only")
    pack = import_pack()
    harness.start_fresh(pack)
    device = torch.device("cuda:0" if torch.cuda.is_available() else "cpu")
    dtype = torch.float32 if args.small else torch.bfloat16
    wanted = args.family or (["FLUX.1"] if args.small else list(dict.fromkeys(c.family for c in CASES)))
    remote = harness.Remote(args.compare, "previous") if args.compare else None
    all_results = {}
    try:
        for wanted_one in wanted:
            family, _, at = wanted_one.partition("@")
            why = lacking(next(c for c in CASES if c.family == BENCH_MODELS.get(family, (family,))[0]))
            if why:
                print(f"{family}: skipped, {why}", flush=True)
                continue
            sized = family in SIZES and not args.small
            for size in (([int(at)] if at else args.size) if sized else [None]):
                label = f"{family}{f' {size}²' if size else ''} ({'tiny' if args.small else args.depth + ' depth'})"
                if args.whole:
                    all_results[label] = run_whole(pack, family, size, args, device, dtype)
                    print(label, json.dumps({n: r["whole_ms"] for n, r in all_results[label].items()
                                             if isinstance(r, dict)}), flush=True)
                    continue
                all_results[label] = run_model(pack, family, size, args, device, dtype, remote)
                print(label, json.dumps({n: r["ms_per_step"] for n, r in all_results[label].items()}), flush=True)
    finally:
        if remote is not None:
            remote.close()
    libraries = pack.nodes.status.payload(pack.nodes.SESSION)["libraries"]
    what = (f"whole {args.whole}-step euler generations, sampler start to end, after each arm's first; median of "
            f"{args.rounds or 1} round(s)" if args.whole else
            f"{args.steps} euler steps a generation ({args.warm_steps} warm-up + {args.steps - args.warm_steps} timed: "
            f"the mean of the timed), median of the rounds (balanced orders)")
    header = (f"{what}; cfg 1, batch 1 (a step is one forward); "
              f"{'float32 tiny configs' if args.small else 'bfloat16, random weights'}"
              f"{'' if args.whole else '; peak GPU memory per arm'}; "
              f"device {torch.cuda.get_device_name(0) if device.type == 'cuda' else 'CPU'}, "
              f"ComfyUI {comfyui_version()}, "
              f"torch {torch.__version__}, " + ", ".join(f"{n} {v or '(not installed)'}" for n, v in libraries.items())
              + f"; Scope kernel input {args.kernel}" + (f", scope arm {' '.join(args.scope)}" if args.scope else ""))
    table = whole_markdown(all_results, header, args.whole) if args.whole else to_markdown(all_results, header)
    print(table)
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / ("whole_generations.md" if args.whole else "model_steps.md")).write_text(table)
        (args.out / ("whole_generations.json" if args.whole else "model_steps.json")).write_text(
            json.dumps(all_results, indent=1))
    return all_results


if __name__ == "__main__":
    main()
