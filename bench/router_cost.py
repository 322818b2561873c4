"""Per call, the router's own cost on the CPU: tiny tensors, so that the router dominates; a call declined
early (too short), one declined late (its shape bucket measured slower: every check of ``decide`` made, the
common route of a host-bound model's calls) and an eligible one on a CPU kernel double (routing always, no
first-call check), each against the function it ends in called bare, in the same round. Microseconds,
the median of rounds; one thread. Then whole sampling steps of a tiny FLUX.1 whose every call keeps
ComfyUI's attention (too short for the floor): per step after the first, what the Scope adds over no
override, beside what an override that only calls ComfyUI's function adds (the issue's bar: the Scope may
cost no more than that). After the first step the Scope steps aside (no override is installed), so its
figure is a few tens of microseconds a step; on a CPU both step figures are within the noise of a step of
milliseconds, and either may come out below zero.

    python bench/router_cost.py [--compare DIR] [--runs 3]

Each tree is measured in a process of its own (``--child``), which imports the harness as the suite does
(this tree's tests/ on its path) and the pack from ``SAS_PACK_ROOT``. --compare DIR runs an earlier tree
of the pack (``git archive`` of a commit) the same way, in turns with this one, and prints both."""
import argparse
import importlib
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
N, ROUNDS = 4000, 15
COLUMNS = ("router on a declined call", "router on a call measured slower", "router on a kernel call",
           "declined: bare SDPA", "Scope per step after the first", "a bare override per step")
STEPS, STEP_ROUNDS = 16, 21  # sampled steps beside a one-step generation (the first step holds the deciding)
FLUX_BLOCKS = {"depth": 4, "depth_single_blocks": 12}  # 16 attention calls a step


def measured_in_child(tree: Path) -> dict:
    """One child process's figures for the pack tree ``tree``."""
    env = dict(os.environ, SAS_PACK_ROOT=str(tree.resolve()),
               PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT / "tests"), os.environ.get("PYTHONPATH")])))
    out = subprocess.run([sys.executable, __file__, "--child"], env=env, capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--compare", type=Path, help="an earlier tree of the pack")
    parser.add_argument("--runs", type=int, default=3, help="processes per tree, in turns")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(measure()))
        return
    trees = {"this tree": ROOT}
    if args.compare:
        trees["previous"] = args.compare
    results = {name: [] for name in trees}
    for _ in range(args.runs):
        for name, tree in trees.items():
            results[name].append(measured_in_child(tree))
    print("| tree | router on a call too short (us) | router on a call measured slower (us) | router on a kernel call "
          "(us) | bare SDPA call (us) | Scope per step after the first (us) | an override that only calls "
          "ComfyUI's function, per step (us) |")
    print("|---|---|---|---|---|---|---|")
    for name, runs in results.items():
        cells = [statistics.median(r.get(key, float("nan")) for r in runs) for key in COLUMNS]
        print(f"| {name} | " + " | ".join(f"{c:.2f}" for c in cells) + " |")


# -- the child: one tree's figures ------------------------------------------------------------

def router_for(pack, session, **settings):
    """A router of a tiny FLUX.1 scoped with ``settings`` on the kernel double, inside a generation."""
    from sas_harness.models import tiny_flux
    patches = pack.patches
    settings = {"kernel": "double", "first_call_check": False, "routing": "always", **settings}
    model = patches.apply_scope(tiny_flux(), patches.Settings(**settings), session)
    router = patches.router_of(model)
    if hasattr(patches, "state"):
        generation = patches.state.generation.Generation("bench", None)
    elif hasattr(patches, "generation"):  # before patches/state/
        generation = patches.generation.Generation("bench", None)
    else:  # before patches/generation.py
        generation = importlib.import_module(pack.__name__ + ".patches.session").Generation(session, "bench", None)
    router.local.generation = generation
    return router


def sdpa(q, k, v, heads, **kwargs):
    import torch.nn.functional as F
    qh, kh, vh = (t.unflatten(-1, (heads, -1)).transpose(1, 2) for t in (q, k, v))
    return F.scaled_dot_product_attention(qh, kh, vh).transpose(1, 2).flatten(-2)


def measured_slower(pack, router, q, k, v, heads):
    """``router`` (measured routing) with the calls' shape bucket decided for SDPA, as a timing would."""
    decide = importlib.import_module(pack.__name__ + ".patches.decide")
    timing = importlib.import_module(pack.__name__ + ".patches.timing")
    call = pack.patches.call.Call.from_arguments(pack.patches.call.comfy_arguments((q, k, v, heads), {}))
    key = decide.bucket_key(call, router.session.use_kernel("double", "cpu").bound.backend)
    router.session.knowledge.record_decision(timing.Decision(key, 2.0, 1.0))
    return router


def steps_cost(pack, session) -> dict:
    """Per step after the first, over no override: the Scope (every call too short), and an override
    that only calls ComfyUI's function. Each arm's time of a STEPS+1-step generation less its one-step
    generation; per round each arm's step less no override's in the same round (drift cancels), the median
    of STEP_ROUNDS rounds, arms in turns."""
    from sas_harness.models import flux_conditioning, sample, tiny_flux
    model = tiny_flux(**FLUX_BLOCKS)
    scoped = pack.patches.apply_scope(model, pack.patches.Settings(kernel="double"), session)
    bare = model.clone()
    bare.model_options.setdefault("transformer_options", {})["optimized_attention_override"] = (
        lambda func, *args, **kwargs: func(*args, **kwargs))
    arms = {"no override": model, "Scope": scoped, "bare override": bare}
    cond = flux_conditioning()
    per_step = {name: [] for name in arms}
    for _ in range(STEP_ROUNDS):
        for name, patcher in arms.items():
            started = time.perf_counter()
            sample(patcher, cond, steps=1)
            one = time.perf_counter() - started
            started = time.perf_counter()
            sample(patcher, cond, steps=STEPS + 1)
            per_step[name].append((time.perf_counter() - started - one) / STEPS)

    def over_no_override(name):
        differences = [arm - plain for arm, plain in zip(per_step[name], per_step["no override"])]
        return statistics.median(differences) * 1e6
    return {"Scope per step after the first": over_no_override("Scope"),
            "a bare override per step": over_no_override("bare override")}


def measure() -> dict:
    """Microseconds per call of each arm, and the router's part of each (this process's pack tree)."""
    import sas_harness
    sas_harness.boot()
    import torch

    from sas_harness.doubles import add_kernel, make_kernel, reference_attention
    from sas_harness.host import import_pack

    pack = import_pack()
    session = pack.patches.Session(store=None)
    add_kernel(getattr(session, "knowledge", session), make_kernel("double", reference_attention))
    q, k, v = (torch.randn(1, 64, 2 * 64) for _ in range(3))
    declining, taking = router_for(pack, session, min_seq_len=100_000), router_for(pack, session, min_seq_len=1)
    slower = measured_slower(pack, router_for(pack, session, min_seq_len=1, routing="measured"), q, k, v, 2)
    hnd = tuple(t.unflatten(-1, (2, -1)).transpose(1, 2) for t in (q, k, v))
    arms = {"declined: bare SDPA": lambda: sdpa(q, k, v, 2),
            "declined: through the router": lambda: declining(sdpa, q, k, v, 2),
            "measured slower: through the router": lambda: slower(sdpa, q, k, v, 2),
            "kernel: bare double": lambda: reference_attention(*hnd),
            "kernel: through the router": lambda: taking(sdpa, q, k, v, 2)}
    torch.set_num_threads(1)
    times = {name: [] for name in arms}
    for _ in range(ROUNDS):
        for name, fn in arms.items():
            for _ in range(50):
                fn()
            start = time.perf_counter()
            for _ in range(N):
                fn()
            times[name].append((time.perf_counter() - start) / N * 1e6)
    us = {name: statistics.median(t) for name, t in times.items()}

    def over(name, bare):
        """The router's part: per round the arm less the bare function in the same round (a busy machine's
        drift between rounds cancels, as in steps_cost), the median of the rounds."""
        return statistics.median(arm - plain for arm, plain in zip(times[name], times[bare]))
    return {**us, **steps_cost(pack, session),
            "router on a declined call": over("declined: through the router", "declined: bare SDPA"),
            "router on a call measured slower": over("measured slower: through the router", "declined: bare SDPA"),
            "router on a kernel call": over("kernel: through the router", "kernel: bare double")}


if __name__ == "__main__":
    main()
