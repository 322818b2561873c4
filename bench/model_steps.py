"""Per-step benchmark: whole generations of each family through ComfyUI's own model classes, with
no node and through the Scope in one or more named arms, taking turns in balanced orders, each after
one warm-up generation of its own (the first generation's time, which holds the first-call checks and
measured routing, is reported apart, with the part of it the Scope spent timing kernels).

    python bench/model_steps.py [--small] [--family FLUX.1 Qwen-Image SD3@1024] [--size 1024 2048]
                                [--depth full] [--steps 5] [--warm-steps 2] [--rounds N]
                                [--arm NAME:INPUT=VALUE,... ...] [--compare DIR [--compare-arms A,B]]
                                [--kernel auto] [--scope routing=always min_seq_len=1] [--out DIR]

Arms: each ``--arm NAME:INPUTS`` is the Scope node with those inputs (comma-separated, typed as the
node takes them; ``NAME:`` alone for its defaults), e.g.

    --arm default: --arm cudnn:kernel=sdpa_cudnn,routing=always --arm sage2:kernel=sage2_fp8_sm90,routing=always

An input or kernel name the pack does not know stops the run before any model is built; a kernel it
knows that cannot run on this machine drops its arm, said so. Without ``--arm``: the arms "scope" (the
node with ``--kernel`` and ``--scope``), "always" (every call from 1 token on ``--kernel``) and, where
the machine has a kernel, "blind": an override of our own sending every unmasked call with query and
key of at least 1024 tokens to ``--kernel``'s kernel (the ceiling for today's kernels). Arms share the
pack's one session, as several Scope nodes in one ComfyUI do: a check or shape bucket one arm
settled is not settled again by the next.

Per step: the mean of the steps after ``--warm-steps`` in each generation (default 2 warm-up + 3
timed steps; cfg 1, one batch: one forward per step), the median over rounds; each arm's peak GPU
memory. Random weights, bf16 (fp32 tiny configs with --small, which CI runs). --depth full builds the
released checkpoints' depth (FLUX.1 dev: 19 + 38 blocks); otherwise one or two blocks. A family
with image sizes runs at each --size, or at the one its NAME@SIZE names; video families at their
own latent (Wan 2.1 14B 832x480x81, "Wan 2.2 5B" 1280x704x121, HunyuanVideo 848x480x73 under a
short prompt's mask). --compare DIR runs the Scope arms (or those of --compare-arms) of another tree
of the pack in a process of its own, interleaved; an arm that tree does not know is left out there.

--whole [N] (default 20) times whole N-step generations instead, no node against each Scope arm:
each arm's first generation (model loading, the first-call checks, measured routing), then
``--rounds`` (default 1) more of each in turn, each timed from the sampler's start to its end (one
synchronise before and after, none between steps); each Scope arm's first-generation measuring cost as
its Status payload reports it (``last_ms``: the generation's sampling and kernel-timing ms), and
again after its next generation (0 once routing is measured).

Writes model_steps.md / .json (whole_generations.md / .json with --whole) under --out (the .json
with each Scope arm's last-generation calls per shape and route, and its step trials); the GPU
runs' logs are kept under bench/runs/. The video and DiT run of the GPU issue:

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
from sas_harness.arms import Arm, arm_problems, kernel_timing_ms, parse_arm, unbound_kernel  # noqa: E402
from sas_harness.families import BENCH_MODELS, CASES, SIZES, lacking  # noqa: E402
from sas_harness.host import comfyui_version, import_pack  # noqa: E402
from sas_harness.models import flat_latent, sample  # noqa: E402
from sas_harness.step_arms import Generations, rel_l2  # noqa: E402

NO_NODE, BLIND = "no node", "blind"


def blind(bound, model):
    """``model`` with an override that sends every unmasked call of a dtype and head size the kernel
    takes, whose query and key have at least 1024 tokens, to ``bound``; no checks, no routing."""
    from sage_attention_scope.patches.call import Call, comfy_arguments

    def override(func, *args, **kwargs):
        call = Call.from_arguments(comfy_arguments(args, kwargs))
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


def chosen_arms(pack, args) -> list[Arm]:
    """The Scope arms: each ``--arm``, else "scope" (``--kernel`` and ``--scope``) and "always"
    (``--kernel`` on every call from 1 token)."""
    if args.arm:
        return [parse_arm(pack, text) for text in args.arm]
    return [parse_arm(pack, "scope:" + ",".join([f"kernel={args.kernel}", *args.scope])),
            Arm("always", {"kernel": args.kernel, "min_seq_len": 1, "routing": "always"})]


def runnable_arms(pack, arms: list[Arm], device) -> list[Arm]:
    """``arms`` less those whose kernel cannot run on ``device`` (each said)."""
    kept = []
    for arm in arms:
        why = unbound_kernel(pack, arm, device)
        if why is None:
            kept.append(arm)
        else:
            print(f"{why}; that arm is left out", flush=True)
    return kept


class LocalArm:
    """One arm of this tree, run in this process: a generation's step ms, peak GPU memory, and for a
    Scope arm its counters and kernel-timing ms; the final latent, or its rel L2 against the reference's."""

    def __init__(self, pack, gens: Generations, name: str, steps: int):
        self.pack, self.gens, self.name, self.steps = pack, gens, name, steps

    def __call__(self, reference: Path | None) -> dict:
        device = self.gens.device
        if device.type == "cuda":
            torch.cuda.reset_peak_memory_stats(device)
        latent, step_ms = self.gens.run(self.name, self.steps)
        got = {"step_ms": step_ms, "counts": {}, "routes": {}, "timing_ms": None, "peak_gib": None}
        if device.type == "cuda":
            got["peak_gib"] = torch.cuda.max_memory_allocated(device) / 2 ** 30
        if self.gens.scoped(self.name):
            got.update(counts=harness.counts(self.pack), routes=harness.routes(self.pack),
                       timing_ms=kernel_timing_ms(self.pack))
        if reference is None:
            got["latent"] = latent
        else:
            got["rel_l2"] = rel_l2(latent, torch.load(reference).to(latent.device))
        return got


class RemoteArm:
    """One arm of the other tree, run in its process (which reports no peak memory)."""

    def __init__(self, remote, name: str, steps: int):
        self.remote, self.name, self.steps = remote, name, steps

    def __call__(self, reference: Path | None) -> dict:
        return self.remote.ask("steps.run", name=self.name, steps=self.steps,
                               reference=None if reference is None else str(reference))


def run_model(pack, family, size, arms: list[Arm], args, device, dtype, remote=None, remote_arms=(),
              blind_kernel=None) -> dict:
    """Per step: no node, each of ``arms``, the blind override of ``blind_kernel``'s kernel where it binds
    on a GPU, and ``remote_arms`` in ``remote``'s tree; one warm-up generation each, then ``args.rounds``
    rounds (default: one full set of balanced orders)."""
    started = time.perf_counter()
    gens = Generations(pack, family, size, args.depth, args.small, dtype, device,
                       {NO_NODE: None, **{arm.name: arm.inputs for arm in arms}})
    print(f"{family}{f' {size}²' if size else ''}: model built in {time.perf_counter() - started:.1f} s (apart from "
          f"every step)", flush=True)
    runners = {name: LocalArm(pack, gens, name, args.steps) for name in gens.arms}
    bound = None
    if blind_kernel is not None and device.type == "cuda":
        bound = pack.nodes.SESSION.knowledge.kernel(blind_kernel, device).bound
    if bound is not None:
        gens.arms[BLIND] = blind(bound, gens.arms[NO_NODE])
        runners[BLIND] = LocalArm(pack, gens, BLIND, args.steps)
    if remote is not None and remote_arms:
        answer = remote.ask("steps.setup", family=family, size=size, depth=args.depth, small=args.small,
                            dtype=str(dtype).split(".")[-1], arms={arm.name: arm.inputs for arm in remote_arms})
        for why in answer["skipped"]:
            print(why, flush=True)
        for name in answer["arms"]:
            runners[f"{name} ({remote.label})"] = RemoteArm(remote, name, args.steps)
    results = {name: {"step_ms": [], "peak_gib": None} for name in runners}
    with tempfile.TemporaryDirectory() as folder:
        reference = Path(folder) / "no_node.pt"
        for name, run in runners.items():  # one warm-up generation each: checks, routing, compilation
            got = run(None)
            results[name].update(first_ms=sum(got["step_ms"]), first_timing_ms=got.get("timing_ms"))
            if name == NO_NODE:
                torch.save(got["latent"].cpu(), reference)
        orders = balanced_orders(list(runners))
        for index in range(args.rounds or len(orders)):
            for name in orders[index % len(orders)]:
                got, result = runners[name](reference), results[name]
                result["counts"], result["routes"] = got["counts"], got.get("routes", {})
                result.setdefault("rel_l2", got.get("rel_l2"))
                result["step_ms"].append(timed_steps_mean(got["step_ms"], args.warm_steps))
                if got.get("peak_gib") is not None:
                    result["peak_gib"] = max(0.0 if result["peak_gib"] is None else result["peak_gib"], got["peak_gib"])
    for result in results.values():
        result["ms_per_step"] = statistics.median(result["step_ms"])
    gens = runners = None  # the arms' models go before the next model is built
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


def last_ms(pack) -> dict:
    """The Status payload's last generation: its sampling and kernel-timing ms."""
    return dict(pack.nodes.status.payload(pack.nodes.SESSION)["last_ms"])


def run_whole(pack, family, size, arms: list[Arm], args, device, dtype) -> dict:
    """Whole ``args.whole``-step generations, no node and each of ``arms``: each arm's first
    generation, then ``args.rounds`` (default 1) more of each, in balanced orders."""
    names = [NO_NODE, *(arm.name for arm in arms)]
    started = time.perf_counter()
    gens = Generations(pack, family, size, args.depth, args.small, dtype, device,
                       {NO_NODE: None, **{arm.name: arm.inputs for arm in arms}})
    print(f"{family}{f' {size}²' if size else ''}: model built in {time.perf_counter() - started:.1f} s (apart from "
          f"every generation)", flush=True)
    results = {name: {"first_ms": None, "ms": [], "status_first": None, "status_next": None} for name in names}
    reference = None
    for name in names:  # each arm's first generation: checks, measured routing, model loading
        latent, ms = whole_generation(gens, name, args.whole, device)
        results[name]["first_ms"] = ms
        if name == NO_NODE:
            reference = latent
            results[name]["rel_l2"] = 0.0
        else:
            results[name]["rel_l2"] = rel_l2(latent, reference)
        if gens.scoped(name):
            results[name]["status_first"] = last_ms(pack)
    orders = balanced_orders(names)
    for index in range(1 if args.rounds is None else args.rounds):
        for name in orders[index % len(orders)]:
            _, ms = whole_generation(gens, name, args.whole, device)
            results[name]["ms"].append(ms)
            if gens.scoped(name):
                results[name].update(status_next=last_ms(pack), counts=harness.counts(pack),
                                     routes=harness.routes(pack))
    for result in results.values():
        result["whole_ms"] = statistics.median(result["ms"])
    gens = None
    comfy.model_management.unload_all_models()
    comfy.model_management.soft_empty_cache()
    return results


def calls_cell(result: dict) -> str:
    """Kernel calls / SDPA calls of an arm's last generation (with how many copied q/k/v), or –."""
    device_counts = next(iter(result.get("counts", {}).values()), None)
    if not device_counts:
        return "–"
    cell = f"{device_counts['sage']}/{device_counts['sdpa_total']}"
    if device_counts.get("copied"):  # q/k/v copied for the kernel (call.Call.copies)
        cell += f" ({device_counts['copied']} copied)"
    return cell


def timed_steps_mean(step_ms: list[float], warm_steps: int) -> float:
    """The mean ms of a generation's steps after its ``warm_steps`` (of them all, where it has no more)."""
    timed = step_ms[warm_steps:]
    return statistics.mean(timed if timed else step_ms)


def status_timing(last_ms: dict | None) -> float | None:
    """The kernel-timing ms of a Status ``last_ms``, or None where the arm reported none."""
    return None if last_ms is None else last_ms.get("timing")


def ms_cell(ms: float | None) -> str:
    return "–" if ms is None else f"{ms:.0f}"


def whole_markdown(all_results: dict, header: str, steps: int) -> str:
    lines = [header, "", f"| model | arm | s per {steps}-step generation | × no node | final latent rel L2 vs no node "
             "| first generation s | first generation: Status kernel-timing ms (% of a generation) | next generation: "
             "Status kernel-timing ms | calls kernel/SDPA (last generation) |", "|---|---|---|---|---|---|---|---|---|"]
    for label, results in all_results.items():
        base = results[NO_NODE]["whole_ms"]
        for name, r in results.items():
            timing, following = status_timing(r["status_first"]), status_timing(r["status_next"])
            share = "–" if timing is None else f"{timing:.0f} ({100 * timing / r['whole_ms']:.2f}%)"
            lines.append(f"| {label} | {name} | {r['whole_ms'] / 1e3:.2f} | {base / r['whole_ms']:.3f} | "
                         f"{r['rel_l2']:.5f} | {r['first_ms'] / 1e3:.2f} | {share} | {ms_cell(following)} | "
                         f"{calls_cell(r)} |")
    return "\n".join(lines) + "\n"


def to_markdown(all_results: dict, header: str) -> str:
    lines = [header, "", "| model | arm | ms/step | × no node | final latent rel L2 vs no node | first generation ms "
             "| of it, kernel timing ms | peak GiB | calls kernel/SDPA (last generation) |",
             "|---|---|---|---|---|---|---|---|---|"]
    for label, results in all_results.items():
        base = results[NO_NODE]["ms_per_step"]
        for name, r in results.items():
            peak = f"{r['peak_gib']:.1f}" if r.get("peak_gib") else "–"
            lines.append(f"| {label} | {name} | {r['ms_per_step']:.1f} | {base / r['ms_per_step']:.3f} | "
                         f"{r['rel_l2']:.5f} | {r['first_ms']:.0f} | {ms_cell(r.get('first_timing_ms'))} | {peak} | "
                         f"{calls_cell(r)} |")
    return "\n".join(lines) + "\n"


def closing_line(all_results: dict, key: str) -> str:
    """One line of what the run found: each arm's speed against no node, model by model."""
    models = []
    for label, results in all_results.items():
        base = results[NO_NODE][key]
        ratios = ", ".join(f"{name} {base / r[key]:.3f}" for name, r in results.items() if name != NO_NODE)
        models.append(f"{label}: {ratios}")
    return "× no node: " + ("; ".join(models) if models else "no model ran")


def arms_text(arms: list[Arm]) -> str:
    """The arms as the table's header names them: each with the inputs it sets, or "defaults"."""
    described = []
    for arm in arms:
        inputs = ", ".join(f"{key}={value}" for key, value in arm.inputs.items())
        described.append(f"{arm.name} ({inputs if inputs else 'defaults'})")
    return "; ".join(described)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--small", action="store_true", help="tiny configs on any device (CI)")
    parser.add_argument("--family", nargs="*", default=[],
                        help="default: FLUX.1 (--small) or every family this ComfyUI has")
    parser.add_argument("--size", nargs="*", type=int, default=[2048], help="image sizes (families with sizes)")
    parser.add_argument("--depth", default="reduced", help="'full': the released depth; else one or two blocks")
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--warm-steps", type=int, default=2, help="steps of each generation not timed")
    parser.add_argument("--rounds", type=int, help="default: one full set of balanced orders")
    parser.add_argument("--arm", action="append", default=[], metavar="NAME:INPUT=VALUE,...",
                        help="a Scope arm (repeat for more); replaces scope, always and blind")
    parser.add_argument("--kernel", default="auto", help="the kernel input of the arms scope and always, and blind's")
    parser.add_argument("--scope", nargs="*", default=[], help="more Scope inputs for the 'scope' arm, NAME=VALUE")
    parser.add_argument("--compare", type=Path, help="another tree of the pack, run beside this one")
    parser.add_argument("--compare-arms", help="the arms that tree runs, comma-separated (default: every arm)")
    parser.add_argument("--whole", type=int, nargs="?", const=20,
                        help="whole generations of this many steps (default 20), no node against each Scope arm")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    if args.whole and args.compare:
        parser.error("--whole runs this tree's arms only")
    if args.arm and (args.scope or args.kernel != "auto"):
        parser.error("--arm names every input of its arm: --kernel and --scope make the default arms only")
    known_models = {case.family for case in CASES} | set(BENCH_MODELS)
    unknown = [name for name in args.family if name.partition("@")[0] not in known_models]
    if unknown:
        parser.error(f"no such model: {', '.join(unknown)}; known: {', '.join(sorted(known_models))}")
    pack = import_pack()
    harness.start_fresh(pack)
    try:
        arms = chosen_arms(pack, args)
    except ValueError as exc:
        parser.error(str(exc))
    names = [arm.name for arm in arms]
    problems = [problem for arm in arms for problem in arm_problems(pack, arm)]
    if len(set(names)) != len(names) or {NO_NODE, BLIND} & set(names):
        problems.append(f"arm names must differ from each other and from '{NO_NODE}' and '{BLIND}': {names}")
    if problems:
        parser.error("\n".join(problems))
    device = torch.device("cuda:0" if torch.cuda.is_available() else "cpu")
    dtype = torch.float32 if args.small else torch.bfloat16
    arms = runnable_arms(pack, arms, device)
    remote_names = set(args.compare_arms.split(",")) if args.compare_arms else set(names)
    if remote_names - set(names):
        parser.error(f"--compare-arms names no arm of this run: {', '.join(sorted(remote_names - set(names)))}")
    remote_arms = [arm for arm in arms if arm.name in remote_names]
    blind_kernel = None if args.arm else args.kernel
    wanted = args.family
    if not wanted:
        wanted = ["FLUX.1"] if args.small else list(dict.fromkeys(c.family for c in CASES))
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
                    all_results[label] = run_whole(pack, family, size, arms, args, device, dtype)
                    print(label, json.dumps({n: r["whole_ms"] for n, r in all_results[label].items()}), flush=True)
                    continue
                all_results[label] = run_model(pack, family, size, arms, args, device, dtype, remote, remote_arms,
                                               blind_kernel)
                print(label, json.dumps({n: r["ms_per_step"] for n, r in all_results[label].items()}), flush=True)
    finally:
        if remote is not None:
            remote.close()
    libraries = {name: version for name, version in pack.nodes.status.payload(pack.nodes.SESSION)["libraries"].items()
                 if not name.startswith(pack.__name__ + ".")}  # less the pack's own (torch, named below)
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
              + f"; Scope arms: {arms_text(arms)}")
    table = whole_markdown(all_results, header, args.whole) if args.whole else to_markdown(all_results, header)
    print(table)
    print(closing_line(all_results, "whole_ms" if args.whole else "ms_per_step"))
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / ("whole_generations.md" if args.whole else "model_steps.md")).write_text(table)
        (args.out / ("whole_generations.json" if args.whole else "model_steps.json")).write_text(
            json.dumps(all_results, indent=1))
    return all_results


if __name__ == "__main__":
    main()
