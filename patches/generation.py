"""One sampling run (a generation) of one scoped model. Its router holds it for the thread that samples,
opened and closed by the sampling wrappers (sampling.py), the way ComfyUI's EasyCache keeps its holder in
the model's options and resets it from its sampling wrapper; only that thread writes it, so it needs no
lock. At its end the ledger adds it to the run's record and the session's totals."""
from __future__ import annotations

import collections
import dataclasses
import time
from typing import Optional

import torch

from .checks import CheckKey
from .ledger import Route, Tally
from .timing import StepTimer


@dataclasses.dataclass(frozen=True)
class StepAside:
    """A model evaluation whose calls all went to ComfyUI's attention, and what an evaluation like it needs
    to find unchanged to run without the Scope: its key, the knowledge's version, the step window, the
    pace. ``calls``: per device, what its calls came to (counted again for each evaluation stepped aside)."""
    evaluation: tuple
    knowledge_version: int
    in_steps: bool
    host_bound: bool
    calls: dict
    in_sparse_steps: bool = False

    def holds(self, evaluation: tuple, knowledge_version: int, in_steps: bool, host_bound: bool,
              in_sparse_steps: bool) -> bool:
        return (evaluation, knowledge_version, in_steps, host_bound, in_sparse_steps) == (
            self.evaluation, self.knowledge_version, self.in_steps, self.host_bound, self.in_sparse_steps)


@dataclasses.dataclass(frozen=True)
class StepTrial:
    """A model evaluation timed with the Scope's routes, its kernels' decisions settled: the next one of its
    shape runs without the Scope, timed, and the two make the step's verdict (timing.StepVerdict)."""
    shape: tuple
    scope_ms: float
    knowledge_version: int
    calls: dict  # per device, what its calls came to (Tally)


class Generation:
    def __init__(self, model_label: str = "", run_id=None):
        self.model_label, self.run_id = model_label, run_id
        self.tallies: dict[str, Tally] = collections.defaultdict(Tally)  # device -> what became of its calls
        self.oom: set[str] = set()         # devices that ran out of memory in this run
        self.in_steps = True               # the current step lies inside the step window
        self.in_sparse_steps = False       # and inside the sparse window (sparse asked for: sampling.one_step)
        self.text_tokens = 0               # the text tokens of the evaluation under way (its context's length)
        self.flags: list[tuple[CheckKey, torch.Tensor]] = []  # kernel outputs' sums, read once a step
        self.hooks: dict[int, list] = {}   # ControlNet model id -> its hook handles (override_hooks.py)
        self.calls_seen = 0                # attention calls that reached the router
        self.started, self.measuring_ms = time.perf_counter(), 0.0
        self.said_override = False         # the override found at a step is not the Scope's: said once
        self.host_bound = False            # the host set the last step's pace (measured routing reads it)
        self.step_timer: StepTimer | None = None  # times the step under way (CUDA)
        self.waited = False                # the step under way waited for the GPU (a check, a timing)
        # The routes of this run's calls, by signature (call.signature): a call like one of them goes the same
        # way without being decided again (router.py). They hold while what ``decide`` read of the knowledge
        # (its ``version``) and of this run (the step window, the pace, no device out of memory) stays.
        self.routes_seen: dict[tuple, Route] = {}
        self.routes_version = -1
        self.routes_step = self.pace_and_windows()
        self.aside: Optional[StepAside] = None  # the evaluation the Scope may step aside from (sampling.one_step)
        self.step_trial: Optional[StepTrial] = None  # an evaluation timed with the Scope, to compare with one without

    def route_seen(self, signature: Optional[tuple], knowledge_version: int) -> Optional[Route]:
        """The route of a call made earlier with this signature, while nothing ``decide`` reads has changed
        since (the pack has learned nothing: ``knowledge_version``); else None."""
        if knowledge_version != self.routes_version:
            self.routes_seen.clear()
            self.routes_version = knowledge_version
            return None
        return self.routes_seen.get(signature)

    def ran_out_of_memory(self, device: str) -> None:
        """The kernel ran out of memory on ``device``: the rest of this run uses SDPA there."""
        self.oom.add(device)
        self.routes_seen.clear()  # (decided while the device had memory: their reasons would change)

    def elapsed_ms(self) -> float:
        return (time.perf_counter() - self.started) * 1e3

    def step_started(self, device) -> None:
        """Reads the pace of the step before (where it said: a step that waited for the GPU says nothing
        of it) and starts timing this one on a GPU. ``in_steps`` is this step's already."""
        pace = self.step_timer.host_bound() if self.step_timer is not None and not self.waited else None
        if pace is not None:
            self.host_bound = pace
        self.waited = False
        if self.pace_and_windows() != self.routes_step:  # decided in the step windows or pace before
            self.routes_seen.clear()
            self.routes_step = self.pace_and_windows()
        self.step_timer = StepTimer(device) if isinstance(device, torch.device) and device.type == "cuda" else None

    def pace_and_windows(self) -> tuple[bool, bool, bool]:
        """What ``decide`` reads of the step under way: its windows and the pace."""
        return self.in_steps, self.host_bound, self.in_sparse_steps

    def step_launched(self) -> None:
        """The step's launches are done (nothing has waited for the GPU since they ended)."""
        if self.step_timer is not None:
            self.step_timer.stop()

    def may_step_aside(self, evaluation: Optional[tuple], knowledge_version: int) -> bool:
        """Whether this evaluation may run without the Scope: the one before it was like it (``evaluation``,
        sampling.evaluation_key), sent every call to ComfyUI's attention, and nothing ``decide`` reads has
        changed since (the knowledge, the step window, the pace, no device out of memory). Else forgets it."""
        aside = self.aside
        if aside is None:
            return False
        if evaluation is not None and aside.holds(evaluation, knowledge_version, self.in_steps, self.host_bound,
                                                  self.in_sparse_steps):
            return True
        self.aside = None
        return False

    def count_stepped_aside(self) -> None:
        """Counts an evaluation the Scope stepped aside from with the routes its calls had the time before."""
        for device, profile in self.aside.calls.items():
            tally = self.tallies[device]
            tally.add(profile)
            tally.counted_from_routes += profile.calls()

    def count_evaluation(self, calls: dict, reason) -> None:
        """Counts an evaluation run without the Scope because of its step's timing (``reason``), its calls
        (``calls``: per device, those of an evaluation like it) kept on ComfyUI's attention."""
        for device, profile in calls.items():
            tally = self.tallies[device]
            tally.declined[reason] += profile.calls()
            tally.counted_from_routes += profile.calls()

    def calls_since(self, before: dict[str, Tally]) -> dict[str, Tally]:
        """Per device, what was counted after ``before`` (save_tallies), where anything was."""
        changes = {}
        for device, tally in self.tallies.items():
            change = tally.since(before.get(device))
            if change.calls():
                changes[device] = change
        return changes

    def note_step(self, evaluation: Optional[tuple], knowledge_version: int, before: dict[str, Tally],
                  calls: int) -> None:
        """After an evaluation the Scope routed: where every one of its ``calls`` went to ComfyUI's attention
        for a reason ``decide`` gives (no kernel ran, none failed), the next one like it may step aside."""
        self.aside = None
        if evaluation is None or calls == 0:
            return
        profile = {}
        for device, tally in self.tallies.items():
            change = tally.since(before.get(device))
            if change.kernel or sum(change.faults.values()):
                return
            if change.calls():
                profile[device] = change
        if sum(change.calls() for change in profile.values()) == calls:
            self.aside = StepAside(evaluation, knowledge_version, self.in_steps, self.host_bound, profile,
                                   self.in_sparse_steps)

    def take_bad_keys(self) -> set[CheckKey]:
        """Keys with a NaN or inf in a kernel output since the last call (a sum is finite only where every
        element is): one test and one sync per device."""
        flags, self.flags = self.flags, []
        bad = set()
        for device in {flag.device for _, flag in flags}:
            on_device = [(key, flag) for key, flag in flags if flag.device == device]
            finite = torch.isfinite(torch.stack([flag for _, flag in on_device])).tolist()
            bad.update(key for (key, _), ok in zip(on_device, finite) if not ok)
        return bad

    def save_tallies(self) -> dict[str, Tally]:
        return {device: tally.copy() for device, tally in self.tallies.items()}

    def restore_tallies(self, saved: dict[str, Tally]) -> None:
        """Back to ``saved`` (a step run again: its discarded pass uncounted)."""
        self.tallies.clear()
        self.tallies.update((device, tally.copy()) for device, tally in saved.items())
