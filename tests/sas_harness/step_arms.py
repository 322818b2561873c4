"""The per-step benchmark's arms (bench/model_steps.py): one family at one size, whole generations
through comfy.sample, without the pack or through its Scope node with given inputs. The same code
runs this tree's arms and, in its own process, an earlier tree's (``remote_handlers``).

Each generation says which of its steps the Scope timed for a step trial (its session's step clock
watched while it runs): such a step is synchronised, or runs without the Scope, so it is not what a
user's later generations run, and the per-step figures leave it out."""
from __future__ import annotations

import contextlib
import time
from typing import Callable, Iterator, NamedTuple, Optional

import torch

from .arms import Arm, arm_problems, counts, kernel_timing_ms, routes, scope, unbound_kernel, wrapped
from .families import bench_model
from .models import flat_latent, sample


class GenerationRun(NamedTuple):
    """One generation of an arm: its final latent, each step's ms, the evaluations the Scope timed for a step
    trial (each ``{"step": index from 0, "arm": "scope" or "comfy"}``: with the Scope, or a trial's without
    it), and the session's knowledge version at its end where the step trial runs on the device (else None)."""
    latent: torch.Tensor
    step_ms: list[float]
    trial_evaluations: list[dict]
    knowledge_version: Optional[int]


class Generations:
    """A model built once, and its arms: ``None`` for the model as it is, else the Scope node's inputs."""

    def __init__(self, pack, family: str, size, depth: str, small: bool, dtype, device, arms: dict):
        self.pack, self.device = pack, device
        model, self.conditioning, self.latent_hw, self.channels, self.latent = bench_model(
            family, size, depth, small, dtype, device)
        self.cond = self.conditioning()
        self.arms = {name: model if inputs is None else scope(pack, model, **inputs) for name, inputs in arms.items()}

    def run(self, name: str, steps: int) -> GenerationRun:
        """One generation of ``steps`` euler steps, a synchronise at every step's end (where the sampler's
        callback runs), the step trial's evaluations noted by step."""
        marks = [self._now()]
        with trial_evaluations_noted(self.pack, step_under_way=lambda: len(marks) - 1) as noted:
            out = sample(self.arms[name], self.cond, latent_hw=self.latent_hw, channels=self.channels, steps=steps,
                         seed=0, latent=self.latent() if self.latent else None,
                         callback=lambda *args: marks.append(self._now()))
        return GenerationRun(flat_latent(out).float(), [(b - a) * 1e3 for a, b in zip(marks, marks[1:])], noted,
                             self.knowledge_version(name))

    def scoped(self, name: str) -> bool:
        """Whether arm ``name`` runs through the Scope (not no node, nor a model the node passed through):
        the session's counters and timing then tell of its generations."""
        return self.arms[name] is not self.arms.get("no node") and wrapped(self.arms[name])

    def knowledge_version(self, name: str) -> Optional[int]:
        """The session knowledge's version now, for arm ``name`` through the Scope where the step trial runs on
        this device: a step verdict holds while it stays the same (a later arm's checks or routing move it)."""
        if not (self.scoped(name) and step_trials_run(self.pack, self.device)):
            return None
        return getattr(session_knowledge(self.pack), "version", None)

    def _now(self) -> float:
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)
        return time.perf_counter()


def session_knowledge(pack):
    """The pack's session knowledge, or None for a tree before it."""
    return getattr(getattr(pack.nodes, "SESSION", None), "knowledge", None)


def step_trials_run(pack, device) -> bool:
    """Whether the Scope's step trial can run on ``device``: its session's step clock times it (a GPU; a
    CPU too under a test's clock). A tree before the step trial has no step clock."""
    clock = getattr(session_knowledge(pack), "step_clock", None)
    return clock is not None and clock.times(device)


class NotingStepClock:
    """The session's step clock, noting the step under way each time the Scope times an evaluation with it."""

    def __init__(self, clock, step_under_way: Callable[[], int], noted: list[dict]):
        self.clock, self.step_under_way, self.noted = clock, step_under_way, noted

    def times(self, device) -> bool:
        return self.clock.times(device)

    def __call__(self, arm, run, device):
        self.noted.append({"step": self.step_under_way(), "arm": arm})
        return self.clock(arm, run, device)


@contextlib.contextmanager
def trial_evaluations_noted(pack, step_under_way: Callable[[], int]) -> Iterator[list[dict]]:
    """While inside, the evaluations the Scope times for a step trial, by step (none noted for a tree
    without a step clock)."""
    noted: list[dict] = []
    knowledge = session_knowledge(pack)
    clock = getattr(knowledge, "step_clock", None)
    if clock is None:
        yield noted
        return
    knowledge.step_clock = NotingStepClock(clock, step_under_way, noted)
    try:
        yield noted
    finally:
        knowledge.step_clock = clock


def rel_l2(a: torch.Tensor, b: torch.Tensor) -> float:
    return float((a - b).norm() / b.norm().clamp_min(1e-12))


def remote_handlers(pack) -> dict:
    """What the other tree's process answers for bench/model_steps.py."""
    state = {}

    def setup(family, size, depth, small, dtype, arms):
        """Builds the model and the arms this tree takes; says which it leaves out and why."""
        state.pop("gens", None)
        if torch.cuda.is_available():
            torch.cuda.empty_cache()
        device = torch.device("cuda:0" if torch.cuda.is_available() else "cpu")
        kept, skipped = {}, []
        for name, inputs in arms.items():
            arm = Arm(name, inputs)
            problems = arm_problems(pack, arm)
            if not problems and unbound_kernel(pack, arm, device) is not None:
                problems.append(unbound_kernel(pack, arm, device))
            if problems:
                skipped += [f"{problem} (the other tree); left out there" for problem in problems]
            else:
                kept[name] = inputs
        state["gens"] = Generations(pack, family, size, depth, small, getattr(torch, dtype), device, kept)
        return {"arms": list(kept), "skipped": skipped}

    def run(name, steps, reference=None):
        latent, step_ms, trial_evaluations, version = state["gens"].run(name, steps)
        result = {"step_ms": step_ms, "trial_evaluations": trial_evaluations, "knowledge_version": version,
                  "counts": {}, "routes": {}, "timing_ms": None}
        if state["gens"].scoped(name):
            result.update(counts=counts(pack), routes=routes(pack), timing_ms=kernel_timing_ms(pack))
        if reference:
            result["rel_l2"] = rel_l2(latent, torch.load(reference).to(latent.device))
        return result

    return {"steps.setup": setup, "steps.run": run}
