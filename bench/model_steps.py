"""Per-step benchmark: whole generations of each family through ComfyUI's own model classes, with
no node and through the Scope in one or more named arms, taking turns in balanced orders, each after
a first generation of its own (its time, which holds the first-call checks, measured routing and the
step trials, is reported apart, with the part of it the Scope spent measuring).

    python bench/model_steps.py [--small [--doubles]] [--family FLUX.1 Qwen-Image SD3@1024] [--size 1024 2048]
                                [--depth full] [--steps 5] [--warm-steps 2] [--first-steps N] [--rounds N]
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

The step trial (where its clock times the device: a GPU) times evaluations with and without the Scope
in turns, within one generation, until it has a verdict, which holds for the session while the
knowledge stays as it was. So each Scope arm's first generation is ``--first-steps`` long (default:
20, or ``--steps`` where no trial runs; the other arms' first generation is ``--steps`` long), enough
for its trials to end; a Scope arm whose verdicts a later arm's checks or routing made stale runs
another such generation before any is timed ("settling", at most twice). What the trials cost is
reported apart: the first generation's Status measuring ms (kernel timing and the trials' evaluations
without the Scope), its trial evaluations, and its calls counted ``step_trial``.

Per step: the mean of each timed generation's steps after ``--warm-steps``, less every step in which
the Scope timed an evaluation for a trial (its session's step clock is watched: such a step is
synchronised, or runs without the Scope, before the verdict); the json lists each round's timed and
left-out steps, every step's ms and its ``step_trial`` calls. ``--rounds`` (default: whole sets of
balanced orders, at least 3 rounds); per arm the median of the rounds and their spread (min–max); ×
no node per round (no node's figure over the arm's, in the same round), its median and spread; each
arm's peak GPU memory. Each round's figures are printed as it ends. Default 2 warm-up + 3 timed steps;
cfg 1, one batch: one forward per step. Random weights, bf16 (fp32 tiny configs with --small, which CI
runs; ``--doubles`` adds, on a CPU, the reference kernel double "double" and clocks that time the CPU,
so that measured routing and the step trial run there as on a GPU). --depth full builds the released checkpoints' depth
(FLUX.1 dev: 19 + 38 blocks); otherwise one or two blocks. A family with image sizes runs at each
--size, or at the one its NAME@SIZE names; video families at their own latent (Wan 2.1 14B
832x480x81, "Wan 2.2 5B" 1280x704x121, HunyuanVideo 848x480x73 under a short prompt's mask).
--compare DIR runs the Scope arms (or those of --compare-arms) of another tree of the pack in a
process of its own, interleaved; an arm that tree does not know is left out there.

--whole [N] (default 20) times whole N-step generations instead, no node against each Scope arm:
each arm's first generation (model loading, the first-call checks, measured routing, the step trials;
settling as above), then ``--rounds`` (default 3) more of each, in balanced orders, each timed from the
sampler's start to its end (one synchronise before and after, none between steps): per arm the median
and spread of the rounds, × no node per round; each Scope arm's measuring cost as its Status payload
reports it (``last_ms``: the generation's sampling and measuring ms) and its trial evaluations, in the
first generation and in the timed ones (which keep any trial that runs in them: users' generations do).

Writes model_steps.md / .json (whole_generations.md / .json with --whole) under --out (the .json
with each Scope arm's last-generation calls per shape and route, its step trials, and its rounds);
the GPU runs' logs are kept under bench/runs/. The video and DiT run of the GPU issue:

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
from sas_harness.step_arms import Generations, rel_l2, step_trials_run, trial_evaluations_noted  # noqa: E402

NO_NODE, BLIND = "no node", "blind"
# Each arm's first generation where the step trial runs: the step that measures routing, then up to 3
# pairs of evaluations with and without the Scope (patches/extras/step_trial.py), with room for a second shape
# (a sparse window's) and a user's usual length.
FIRST_STEPS = 20
SETTLING_PASSES = 2  # the most extra generations an arm runs before the timed ones, its verdicts gone stale
LEAST_ROUNDS = 3     # per step by default: whole sets of balanced orders, at least this many (a median and a spread)
WHOLE_ROUNDS = 3     # --whole's rounds by default: a round is a whole generation of every arm, so no more than that
STEP_TRIAL = "step_trial"  # the Status counters' reason for a call run without the Scope in a trial


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
    """One arm of this tree, run in this process: a generation's step ms and the step trial's evaluations in
    it, peak GPU memory, and for a Scope arm its counters and kernel-timing ms; the final latent, or its rel
    L2 against the reference's."""
    tree = "this"

    def __init__(self, pack, gens: Generations, name: str):
        self.pack, self.gens, self.name = pack, gens, name

    def may_trial(self) -> bool:
        """Whether the Scope may run step trials in this arm's generations (a Scope arm, on a device the step
        clock times)."""
        return self.gens.scoped(self.name) and step_trials_run(self.pack, self.gens.device)

    def __call__(self, steps: int, reference: Path | None) -> dict:
        device = self.gens.device
        if device.type == "cuda":
            torch.cuda.reset_peak_memory_stats(device)
        latent, step_ms, trial_evaluations, version = self.gens.run(self.name, steps)
        got = {"step_ms": step_ms, "trial_evaluations": trial_evaluations, "knowledge_version": version,
               "counts": {}, "routes": {}, "timing_ms": None, "peak_gib": None}
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

    def __init__(self, remote, name: str):
        self.remote, self.name, self.tree = remote, name, remote.label

    @staticmethod
    def may_trial() -> bool:
        return True  # the other tree's Scope arm: whether its engine has the step trial is not asked

    def __call__(self, steps: int, reference: Path | None) -> dict:
        return self.remote.ask("steps.run", name=self.name, steps=steps,
                               reference=None if reference is None else str(reference))


def step_trial_calls(counts: dict) -> int:
    """The calls a generation ran without the Scope for a step trial, on every device (Status counters)."""
    return sum(device.get("declined", {}).get(STEP_TRIAL, 0) for device in counts.values())


def generation_ms(got: dict) -> float:
    """A generation's ms: its whole time, or the sum of its steps'."""
    return got["ms"] if "ms" in got else sum(got["step_ms"])


def measuring_cost(got: dict) -> dict:
    """What a generation spent on measuring: its ms, the Status payload's measuring ms (kernel timing and the
    trials' evaluations without the Scope), the step trial's evaluations and its step_trial calls."""
    return {"ms": generation_ms(got), "timing_ms": got.get("timing_ms"),
            "trial_evaluations": len(got.get("trial_evaluations", [])),
            "step_trial_calls": step_trial_calls(got.get("counts", {}))}


def settle(runners: dict, versions: dict, steps: int) -> dict[str, list[dict]]:
    """Another ``steps``-long generation of each Scope arm whose step verdicts may be stale (the knowledge of
    its tree moved on after its last generation: a later arm's checks or routing), until none is, at most
    ``SETTLING_PASSES`` times; ``versions``: each arm's knowledge version after its last generation (None
    where no trial runs), kept up to date. Returns each arm's settling generations' measuring costs."""
    settled = {name: [] for name in runners}
    for _ in range(SETTLING_PASSES):
        newest = {}
        for name, version in versions.items():
            if version is not None:
                tree = runners[name].tree
                newest[tree] = max(newest.get(tree, version), version)
        stale = [name for name, version in versions.items()
                 if version is not None and version != newest[runners[name].tree]]
        if not stale:
            break
        for name in stale:
            got = runners[name](steps, None)
            versions[name] = got.get("knowledge_version")
            settled[name].append(measuring_cost(got))
            print(f"{name}: settling generation ({len(got.get('trial_evaluations', []))} trial evaluations)",
                  flush=True)
    return settled


def counted_steps(step_count: int, warm_steps: int) -> range:
    """The steps of a generation that count: those after its ``warm_steps`` (all, where it has no more)."""
    return range(warm_steps, step_count) if step_count > warm_steps else range(step_count)


def timed_round(got: dict, warm_steps: int) -> dict:
    """One timed generation of an arm: the mean ms of its timed steps, the counted steps less those in which the
    Scope timed an evaluation for a step trial (None where a trial took every one); which steps were timed, which
    counted steps were left out for a trial, every step with a trial evaluation, every step's ms, and its
    step_trial calls."""
    trial_steps = {evaluation["step"] for evaluation in got.get("trial_evaluations", [])}
    counted = counted_steps(len(got["step_ms"]), warm_steps)
    steps = [step for step in counted if step not in trial_steps]
    return {"ms": statistics.mean(got["step_ms"][step] for step in steps) if steps else None,
            "timed_steps": steps, "left_out_steps": [step for step in counted if step in trial_steps],
            "trial_steps": sorted(trial_steps), "step_ms": got["step_ms"],
            "step_trial_calls": step_trial_calls(got.get("counts", {}))}


def default_rounds(orders: list) -> int:
    """Per step: whole sets of the balanced ``orders``, at least ``LEAST_ROUNDS`` rounds."""
    sets = -(-LEAST_ROUNDS // len(orders))
    return sets * len(orders)


def round_line(index: int, figures: dict) -> str:
    """One round's figures as it ends (a run cut off at its time limit still leaves them in its log)."""
    cells = ", ".join(f"{name} {'–' if ms is None else f'{ms:.1f}'}" for name, ms in figures.items())
    return f"round {index + 1}: {cells}"


def add_round_figures(results: dict, per_round: str, figure: str) -> None:
    """Each arm's median of its rounds' ``per_round`` (as ``figure``) and their spread (min–max), and its ratio to
    no node in each round (no node's figure over the arm's, the two of one round), their median and spread."""
    base = results[NO_NODE][per_round]
    for result in results.values():
        values = [value for value in result[per_round] if value is not None]
        ratios = [b / value for b, value in zip(base, result[per_round]) if b is not None and value is not None]
        result[figure] = statistics.median(values) if values else None
        result["spread"] = [min(values), max(values)] if values else None
        result["x_no_node_rounds"] = ratios
        result["x_no_node"] = statistics.median(ratios) if ratios else None
        result["x_no_node_spread"] = [min(ratios), max(ratios)] if ratios else None


def timed_generation(run, steps: int, reference: Path) -> dict:
    """A timed generation of ``run``'s arm, its final latent against ``reference``'s; the first one (no node's,
    as the first round begins) makes the reference, a generation of the timed length."""
    if reference.exists():
        return run(steps, reference)
    got = run(steps, None)
    torch.save(got.pop("latent").cpu(), reference)
    return {**got, "rel_l2": 0.0}


def run_model(pack, family, size, arms: list[Arm], args, device, dtype, remote=None, remote_arms=(),
              blind_kernel=None, first_steps: int | None = None) -> dict:
    """Per step: no node, each of ``arms``, the blind override of ``blind_kernel``'s kernel where it binds
    on a GPU, and ``remote_arms`` in ``remote``'s tree; one first generation each, ``first_steps`` long
    (default ``args.steps``) for an arm in which the Scope may run step trials and ``args.steps`` for the
    others, settling where verdicts went stale, then ``args.rounds`` rounds (default ``default_rounds``)."""
    first_steps = first_steps or args.steps
    started = time.perf_counter()
    gens = Generations(pack, family, size, args.depth, args.small, dtype, device,
                       {NO_NODE: None, **{arm.name: arm.inputs for arm in arms}})
    print(f"{family}{f' {size}²' if size else ''}: model built in {time.perf_counter() - started:.1f} s (apart from "
          f"every step)", flush=True)
    runners = {name: LocalArm(pack, gens, name) for name in gens.arms}
    bound = None
    if blind_kernel is not None and device.type == "cuda":
        bound = pack.nodes.SESSION.knowledge.kernel(blind_kernel, device).bound
    if bound is not None:
        gens.arms[BLIND] = blind(bound, gens.arms[NO_NODE])
        runners[BLIND] = LocalArm(pack, gens, BLIND)
    if remote is not None and remote_arms:
        answer = remote.ask("steps.setup", family=family, size=size, depth=args.depth, small=args.small,
                            dtype=str(dtype).split(".")[-1], arms={arm.name: arm.inputs for arm in remote_arms})
        for why in answer["skipped"]:
            print(why, flush=True)
        for name in answer["arms"]:
            runners[f"{name} ({remote.label})"] = RemoteArm(remote, name)
    results = {name: {"step_ms": [], "rounds": [], "peak_gib": None} for name in runners}
    with tempfile.TemporaryDirectory() as folder:
        reference = Path(folder) / "no_node.pt"
        versions = {}
        for name, run in runners.items():  # a first generation each: checks, routing, step trials, compilation
            steps = first_steps if run.may_trial() else args.steps
            got = run(steps, None)
            first = measuring_cost(got)
            results[name].update(first_steps=steps, first_ms=first["ms"], first_timing_ms=first["timing_ms"],
                                 first_trial_evaluations=first["trial_evaluations"],
                                 first_step_trial_calls=first["step_trial_calls"])
            versions[name] = got.get("knowledge_version")
        for name, generations in settle(runners, versions, first_steps).items():
            results[name]["settling"] = generations
        orders = balanced_orders(list(runners))  # the first begins with no node: its latent is the reference
        for index in range(args.rounds or default_rounds(orders)):
            for name in orders[index % len(orders)]:
                got, result = timed_generation(runners[name], args.steps, reference), results[name]
                result["counts"], result["routes"] = got["counts"], got.get("routes", {})
                result.setdefault("rel_l2", got.get("rel_l2"))
                result["rounds"].append(timed_round(got, args.warm_steps))
                result["step_ms"].append(result["rounds"][-1]["ms"])
                if got.get("peak_gib") is not None:
                    result["peak_gib"] = max(0.0 if result["peak_gib"] is None else result["peak_gib"], got["peak_gib"])
            print(round_line(index, {name: results[name]["step_ms"][-1] for name in runners}), flush=True)
    add_round_figures(results, "step_ms", "ms_per_step")
    gens = runners = None  # the arms' models go before the next model is built
    comfy.model_management.unload_all_models()
    comfy.model_management.soft_empty_cache()
    return results


def whole_generation(gens, name: str, steps: int, device) -> tuple[torch.Tensor, float, list[dict]]:
    """One ``steps``-step generation of arm ``name``: its final latent, its wall ms from the sampler's start to
    its end (a synchronise before and after; none between the steps), and the step trial's evaluations in it."""
    def now():
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        return time.perf_counter()
    steps_done = []
    with trial_evaluations_noted(gens.pack, step_under_way=lambda: len(steps_done)) as noted:
        started = now()
        out = sample(gens.arms[name], gens.cond, latent_hw=gens.latent_hw, channels=gens.channels, steps=steps,
                     seed=0, latent=gens.latent() if gens.latent else None,
                     callback=lambda *args: steps_done.append(True))
        ms = (now() - started) * 1e3
    return flat_latent(out).float(), ms, noted


def last_ms(pack) -> dict:
    """The Status payload's last generation: its sampling and measuring ms."""
    return dict(pack.nodes.status.payload(pack.nodes.SESSION)["last_ms"])


class WholeArm:
    """One arm of this tree, whole generations: the wall ms, the step trial's evaluations, and for a Scope arm
    its Status ``last_ms``, counters and routes; the final latent."""
    tree = "this"

    def __init__(self, pack, gens: Generations, name: str):
        self.pack, self.gens, self.name = pack, gens, name

    def __call__(self, steps: int, reference=None) -> dict:
        latent, ms, trial_evaluations = whole_generation(self.gens, self.name, steps, self.gens.device)
        got = {"ms": ms, "latent": latent, "trial_evaluations": trial_evaluations, "status": None, "timing_ms": None,
               "knowledge_version": self.gens.knowledge_version(self.name), "counts": {}, "routes": {}}
        if self.gens.scoped(self.name):
            status = last_ms(self.pack)
            got.update(status=status, timing_ms=status.get("timing"), counts=harness.counts(self.pack),
                       routes=harness.routes(self.pack))
        return got


def run_whole(pack, family, size, arms: list[Arm], args, device, dtype) -> dict:
    """Whole ``args.whole``-step generations, no node and each of ``arms``: each arm's first generation
    (settling where verdicts went stale), then ``args.rounds`` (default ``WHOLE_ROUNDS``) more of each, in
    balanced orders."""
    names = [NO_NODE, *(arm.name for arm in arms)]
    started = time.perf_counter()
    gens = Generations(pack, family, size, args.depth, args.small, dtype, device,
                       {NO_NODE: None, **{arm.name: arm.inputs for arm in arms}})
    print(f"{family}{f' {size}²' if size else ''}: model built in {time.perf_counter() - started:.1f} s (apart from "
          f"every generation)", flush=True)
    runners = {name: WholeArm(pack, gens, name) for name in names}
    results = {name: {"first_ms": None, "ms": [], "rounds": [], "status_first": None, "status_next": None}
               for name in names}
    reference, versions = None, {}
    for name in names:  # each arm's first generation: checks, measured routing, step trials, model loading
        got = runners[name](args.whole)
        first = measuring_cost(got)
        results[name].update(first_ms=got["ms"], status_first=got["status"],
                             first_trial_evaluations=first["trial_evaluations"],
                             first_step_trial_calls=first["step_trial_calls"])
        versions[name] = got["knowledge_version"]
        if name == NO_NODE:
            reference = got["latent"]
        results[name]["rel_l2"] = rel_l2(got["latent"], reference)
    for name, generations in settle(runners, versions, args.whole).items():
        results[name]["settling"] = generations
    orders = balanced_orders(names)
    for index in range(WHOLE_ROUNDS if args.rounds is None else args.rounds):
        for name in orders[index % len(orders)]:
            got = runners[name](args.whole)
            results[name]["ms"].append(got["ms"])
            results[name]["rounds"].append(measuring_cost(got))
            if gens.scoped(name):
                results[name].update(status_next=got["status"], counts=got["counts"], routes=got["routes"])
        print(round_line(index, {name: results[name]["ms"][-1] for name in names}), flush=True)
    add_round_figures(results, "ms", "whole_ms")
    gens = runners = None
    comfy.model_management.unload_all_models()
    comfy.model_management.soft_empty_cache()
    return results


def calls_cell(result: dict) -> str:
    """Kernel calls / SDPA calls of an arm's last generation (with how many copied q/k/v), or –."""
    device_counts = next(iter(result.get("counts", {}).values()), None)
    if not device_counts:
        return "–"
    cell = f"{device_counts['kernel']}/{device_counts['declined_total']}"
    if device_counts.get("copied"):  # q/k/v copied for the kernel (call.Call.copies)
        cell += f" ({device_counts['copied']} copied)"
    return cell


def status_timing(last_ms: dict | None) -> float | None:
    """The measuring ms of a Status ``last_ms``, or None where the arm reported none."""
    return None if last_ms is None else last_ms.get("timing")


def ms_cell(ms: float | None) -> str:
    return "–" if ms is None else f"{ms:.0f}"


def figure_cell(figure: float | None, spread: list[float] | None, digits: int, scale: float = 1.0) -> str:
    """A median with its rounds' spread: "12.3 (12.1–12.9)"; – where no round gave one."""
    if figure is None:
        return "–"
    low, high = spread
    return f"{figure / scale:.{digits}f} ({low / scale:.{digits}f}–{high / scale:.{digits}f})"


def rounds_cell(result: dict, per_round: str) -> str:
    """How many rounds gave a figure: "3", or "2 of 3" where a trial took every timed step of one."""
    given = sum(value is not None for value in result[per_round])
    run = len(result[per_round])
    return f"{given}" if given == run else f"{given} of {run}"


def trials_cell(result: dict) -> str:
    """The step trials an arm's first generation held (its trial evaluations, its calls counted step_trial),
    and those of any settling generation: "7 evaluations, 6 calls; settling 1: 0, 0"."""
    cell = f"{result.get('first_trial_evaluations', 0)} evaluations, {result.get('first_step_trial_calls', 0)} calls"
    settling = result.get("settling", [])
    if settling:
        cell += (f"; settling {len(settling)}: {sum(g['trial_evaluations'] for g in settling)}, "
                 f"{sum(g['step_trial_calls'] for g in settling)}")
    return cell


def timed_trials_cell(rounds: list[dict]) -> str:
    """The step trial's evaluations and step_trial calls in the timed generations, all rounds together."""
    return f"{sum(r['trial_evaluations'] for r in rounds)}, {sum(r['step_trial_calls'] for r in rounds)}"


def whole_markdown(all_results: dict, header: str, steps: int) -> str:
    lines = [header, "", f"| model | arm | s per {steps}-step generation: median (min–max) | × no node: median "
             "(min–max), per round | rounds | final latent rel L2 vs no node | first generation s | first generation: "
             "Status measuring ms (% of a generation) | first generation: step trial | timed generations: step "
             "trial evaluations, step_trial calls | last generation: Status measuring ms | calls kernel/SDPA (last "
             "generation) |", "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for label, results in all_results.items():
        for name, r in results.items():
            timing, following = status_timing(r["status_first"]), status_timing(r["status_next"])
            share = "–" if timing is None else f"{timing:.0f} ({100 * timing / r['whole_ms']:.2f}%)"
            lines.append(f"| {label} | {name} | {figure_cell(r['whole_ms'], r['spread'], 2, 1e3)} | "
                         f"{figure_cell(r['x_no_node'], r['x_no_node_spread'], 3)} | {rounds_cell(r, 'ms')} | "
                         f"{r['rel_l2']:.5f} | {r['first_ms'] / 1e3:.2f} | {share} | {trials_cell(r)} | "
                         f"{timed_trials_cell(r['rounds'])} | {ms_cell(following)} | {calls_cell(r)} |")
    return "\n".join(lines) + "\n"


def to_markdown(all_results: dict, header: str) -> str:
    lines = [header, "", "| model | arm | ms/step: median (min–max) | × no node: median (min–max), per round | rounds "
             "| steps timed (left out for a trial) | final latent rel L2 vs no node | first generation: steps, ms | "
             "of it, Status measuring ms | first generation: step trial | peak GiB | calls kernel/SDPA (last "
             "generation) |", "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for label, results in all_results.items():
        for name, r in results.items():
            peak = f"{r['peak_gib']:.1f}" if r.get("peak_gib") else "–"
            timed = sum(len(one["timed_steps"]) for one in r["rounds"])
            left_out = sum(len(one["left_out_steps"]) for one in r["rounds"])
            lines.append(f"| {label} | {name} | {figure_cell(r['ms_per_step'], r['spread'], 1)} | "
                         f"{figure_cell(r['x_no_node'], r['x_no_node_spread'], 3)} | {rounds_cell(r, 'step_ms')} | "
                         f"{timed} ({left_out}) | {r['rel_l2']:.5f} | {r['first_steps']}, {r['first_ms']:.0f} | "
                         f"{ms_cell(r.get('first_timing_ms'))} | {trials_cell(r)} | {peak} | {calls_cell(r)} |")
    return "\n".join(lines) + "\n"


def closing_line(all_results: dict) -> str:
    """One line of what the run found: each arm's speed against no node, model by model, the median of the
    rounds with their spread."""
    models = []
    for label, results in all_results.items():
        ratios = []
        for name, r in results.items():
            if name == NO_NODE:
                continue
            if r["x_no_node"] is None:
                ratios.append(f"{name} – (no round without a step trial)")
                continue
            low, high = r["x_no_node_spread"]
            ratios.append(f"{name} {r['x_no_node']:.3f} ({low:.3f}–{high:.3f}, {len(r['x_no_node_rounds'])} rounds)")
        models.append(f"{label}: {', '.join(ratios)}")
    return "× no node: " + ("; ".join(models) if models else "no model ran")


def use_doubles(pack) -> None:
    """On a CPU, what a GPU has for the Scope to measure: the reference kernel double as kernel "double", a
    per-call clock on which it takes 1 ms against ComfyUI's 2 (measured routing takes it), and a step clock
    that times the CPU, a step 1.0 ms with the Scope against 1.1 without (no first pair decides: the trial
    takes its every pair)."""
    from sas_harness.doubles import FakeClock, FakeStepClock, add_kernel, make_kernel, reference_attention
    knowledge = pack.nodes.SESSION.knowledge
    knowledge.clock = FakeClock(kernel_ms=1.0, comfy_ms=2.0)
    knowledge.step_clock = FakeStepClock(scope_ms=1.0, comfy_ms=1.1)
    add_kernel(knowledge, make_kernel("double", reference_attention, devices=("cpu",)))


def per_step_text(args, first_steps: int) -> str:
    """What the per-step table's figures are, for its header."""
    rounds = args.rounds or f"at least {LEAST_ROUNDS} (whole sets of balanced orders)"
    first = (f"{first_steps} steps for a Scope arm that may run step trials, {args.steps} for the others"
             if first_steps != args.steps else f"{args.steps} steps")
    return (f"{args.steps} euler steps a generation ({args.warm_steps} warm-up + {args.steps - args.warm_steps} timed, "
            f"less any step in which the Scope timed an evaluation for a step trial: the mean of the timed), after "
            f"each arm's first generation ({first}; and any settling one); median and spread (min–max) of {rounds} "
            f"rounds in balanced orders, × no node per round")


def whole_text(args) -> str:
    """What the whole-generation table's figures are, for its header."""
    rounds = WHOLE_ROUNDS if args.rounds is None else args.rounds
    return (f"whole {args.whole}-step euler generations, sampler start to end, after each arm's first (and any "
            f"settling one), step trials included where they run; median and spread (min–max) of {rounds} rounds in "
            f"balanced orders, × no node per round")


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
    parser.add_argument("--doubles", action="store_true",
                        help="with --small on a CPU (CI): the reference kernel double 'double' (name it: --kernel "
                             "double, or an arm's kernel=double) and clocks that time the CPU, so measured routing and "
                             "the step trial run as on a GPU")
    parser.add_argument("--family", nargs="*", default=[],
                        help="default: FLUX.1 (--small) or every family this ComfyUI has")
    parser.add_argument("--size", nargs="*", type=int, default=[2048], help="image sizes (families with sizes)")
    parser.add_argument("--depth", default="reduced", help="'full': the released depth; else one or two blocks")
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--warm-steps", type=int, default=2, help="steps of each generation not timed")
    parser.add_argument("--first-steps", type=int,
                        help=f"steps of each arm's first generation (default {FIRST_STEPS} where the step trial "
                             "runs, else --steps)")
    parser.add_argument("--rounds", type=int,
                        help=f"default: whole sets of balanced orders, at least {LEAST_ROUNDS} rounds (--whole: "
                             f"{WHOLE_ROUNDS})")
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
    if args.doubles and not (args.small and not torch.cuda.is_available()):
        parser.error("--doubles stands in for a GPU's kernel and clocks: --small on a CPU only")
    if args.arm and (args.scope or args.kernel != "auto"):
        parser.error("--arm names every input of its arm: --kernel and --scope make the default arms only")
    known_models = {case.family for case in CASES} | set(BENCH_MODELS)
    unknown = [name for name in args.family if name.partition("@")[0] not in known_models]
    if unknown:
        parser.error(f"no such model: {', '.join(unknown)}; known: {', '.join(sorted(known_models))}")
    pack = import_pack()
    harness.start_fresh(pack)
    if args.doubles:
        use_doubles(pack)
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
    first_steps = args.first_steps or (max(args.steps, FIRST_STEPS) if step_trials_run(pack, device) else args.steps)
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
                                               blind_kernel, first_steps)
                print(label, json.dumps({n: r["ms_per_step"] for n, r in all_results[label].items()}), flush=True)
    finally:
        if remote is not None:
            remote.close()
    libraries = {name: version for name, version in pack.nodes.status.payload(pack.nodes.SESSION)["libraries"].items()
                 if not name.startswith(pack.__name__ + ".") and name != "torch"}  # less the pack's own; torch below
    what = whole_text(args) if args.whole else per_step_text(args, first_steps)
    header = (f"{what}; cfg 1, batch 1 (a step is one forward); "
              f"{'float32 tiny configs' if args.small else 'bfloat16, random weights'}"
              f"{'' if args.whole else '; peak GPU memory per arm'}; "
              f"device {torch.cuda.get_device_name(0) if device.type == 'cuda' else 'CPU'}, "
              f"ComfyUI {comfyui_version()}, "
              f"torch {torch.__version__}, " + ", ".join(f"{n} {v or '(not installed)'}" for n, v in libraries.items())
              + f"; Scope arms: {arms_text(arms)}")
    table = whole_markdown(all_results, header, args.whole) if args.whole else to_markdown(all_results, header)
    print(table)
    print(closing_line(all_results))
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / ("whole_generations.md" if args.whole else "model_steps.md")).write_text(table)
        (args.out / ("whole_generations.json" if args.whole else "model_steps.json")).write_text(
            json.dumps(all_results, indent=1))
    return all_results


if __name__ == "__main__":
    main()
