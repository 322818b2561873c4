"""The per-step benchmark's arms (bench/model_steps.py): one family at one size, whole generations
through comfy.sample, without the pack or through its Scope node with given inputs. The same code
runs this tree's arms and, in its own process, an earlier tree's (``remote_handlers``)."""
from __future__ import annotations

import time

import torch

from .arms import Arm, arm_problems, counts, kernel_timing_ms, routes, scope, unbound_kernel, wrapped
from .families import bench_model
from .models import flat_latent, sample


class Generations:
    """A model built once, and its arms: ``None`` for the model as it is, else the Scope node's inputs."""

    def __init__(self, pack, family: str, size, depth: str, small: bool, dtype, device, arms: dict):
        self.pack, self.device = pack, device
        model, self.conditioning, self.latent_hw, self.channels, self.latent = bench_model(
            family, size, depth, small, dtype, device)
        self.cond = self.conditioning()
        self.arms = {name: model if inputs is None else scope(pack, model, **inputs) for name, inputs in arms.items()}

    def run(self, name: str, steps: int) -> tuple[torch.Tensor, list[float]]:
        """One generation of ``steps`` euler steps: the final latent and each step's ms (a
        synchronise at every step's end, where the sampler's callback runs)."""
        marks = [self._now()]
        out = sample(self.arms[name], self.cond, latent_hw=self.latent_hw, channels=self.channels, steps=steps,
                     seed=0, latent=self.latent() if self.latent else None,
                     callback=lambda *args: marks.append(self._now()))
        return flat_latent(out).float(), [(b - a) * 1e3 for a, b in zip(marks, marks[1:])]

    def scoped(self, name: str) -> bool:
        """Whether arm ``name`` runs through the Scope (not no node, nor a model the node passed through):
        the session's counters and timing then tell of its generations."""
        return self.arms[name] is not self.arms.get("no node") and wrapped(self.arms[name])

    def _now(self) -> float:
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)
        return time.perf_counter()


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
        latent, step_ms = state["gens"].run(name, steps)
        result = {"step_ms": step_ms, "counts": {}, "routes": {}, "timing_ms": None}
        if state["gens"].scoped(name):
            result.update(counts=counts(pack), routes=routes(pack), timing_ms=kernel_timing_ms(pack))
        if reference:
            result["rel_l2"] = rel_l2(latent, torch.load(reference).to(latent.device))
        return result

    return {"steps.setup": setup, "steps.run": run}
