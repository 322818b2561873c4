"""One sampling run (a generation) of one scoped model: the one state a run keeps. Its router holds it for
the thread that samples, opened and closed by the sampling wrappers (sampling.py), the way ComfyUI's
EasyCache keeps its holder in the model's options and resets it from its sampling wrapper; only that
thread writes it, so it needs no lock. At its end the ledger adds it to the run's record and the
session's totals.

Whatever a run remembers (the routes of its calls, the evaluation it steps aside from) and what it reads
of the session's (the step trial under way, the step verdicts) holds under one rule: it was made in the
same ``Epoch``, the same knowledge and the same windows and pace."""
from __future__ import annotations

import collections
import dataclasses
import time
from typing import NamedTuple, Optional

import torch

from ..checks import CheckKey
from .ledger import Tally
from .route import Route
from ..timing import StepTimer


class Epoch(NamedTuple):
    """Everything outside a call that ``decide`` reads: what the pack has learned (the knowledge's
    ``version``), the step's windows, its pace and the devices out of memory. What was decided, timed or
    stepped aside from in one epoch holds in that epoch alone."""
    knowledge: int
    in_steps: bool
    in_sparse_steps: bool
    host_bound: bool
    out_of_memory: frozenset


class CondPart(NamedTuple):
    cond: int            # the cond's id
    taking_part: bool    # inside its own timestep range at this step (ComfyUI leaves it out elsewhere)


class EvaluationKey(NamedTuple):
    """What makes one model evaluation's attention calls those of another: the latent's shape, dtype and
    device, and which conds take part."""
    latent_shape: tuple
    dtype: torch.dtype
    device: torch.device
    conds: tuple[CondPart, ...]


class StepShape(NamedTuple):
    """What a step's verdict holds for, across generations: the model and its evaluation's shape."""
    model: str
    latent_shape: tuple
    dtype: torch.dtype
    device: torch.device
    conds_taking_part: int


@dataclasses.dataclass(frozen=True)
class StepAside:
    """An evaluation whose calls all went to ComfyUI's attention in ``epoch``; ``calls``: per device, what
    its calls came to (counted again for each evaluation stepped aside from)."""
    evaluation: EvaluationKey
    epoch: Epoch
    calls: dict[str, Tally]


@dataclasses.dataclass
class StepTrial:
    """Evaluations of one shape timed in turns with the Scope's settled routes and without the Scope, in one
    epoch, until they make a verdict (step_trial.trial_verdict)."""
    shape: StepShape
    epoch: Epoch
    calls: dict[str, Tally]  # per device, what an evaluation's calls came to
    scope_ms: list[float] = dataclasses.field(default_factory=list)
    comfy_ms: list[float] = dataclasses.field(default_factory=list)

    def comfy_turn(self) -> bool:
        """Whether the next evaluation of the trial runs without the Scope."""
        return len(self.comfy_ms) < len(self.scope_ms)


class Generation:
    def __init__(self, model_label: str = "", run_id=None):
        self.model_label, self.run_id = model_label, run_id
        self.tallies: dict[str, Tally] = collections.defaultdict(Tally)  # device -> what became of its calls
        self.oom: set[str] = set()         # devices that ran out of memory in this run
        self.in_steps = True               # the current step lies inside the step window
        self.in_sparse_steps = False       # and inside the sparse window (sparse asked for)
        self.text_tokens = 0               # the text tokens of the evaluation under way (its context's length)
        self.flags: list[tuple[CheckKey, torch.Tensor]] = []  # kernel outputs' sums, read once a step
        self.hooks: dict[int, list] = {}   # ControlNet model id -> its hook handles (override_hooks.py)
        self.calls_seen = 0                # attention calls that reached the router
        self.started, self.measuring_ms = time.perf_counter(), 0.0
        self.said_override = False         # the override found at a step is not the Scope's: said once
        self.host_bound = False            # the host set the last step's pace (measured routing reads it)
        self.step_timer: StepTimer | None = None  # times the step under way (CUDA)
        self.waited = False                # the step under way waited for the GPU (a check, a timing)
        # The routes of this run's calls by signature (call.signature), made in ``routes_epoch``: a call like
        # one of them goes the same way without being decided again (router.py).
        self.routes: dict[tuple, Route] = {}
        self.routes_epoch: Optional[Epoch] = None
        self.current = self.epoch_now(-1)  # the epoch under way: made anew where the run's part of it changes
        self.aside: Optional[StepAside] = None  # the evaluation the Scope may step aside from (step_trial.py)

    def epoch(self, knowledge_version: int) -> Epoch:
        """The epoch under way, with the knowledge at ``knowledge_version`` (asked on every call: the run's
        part is made where it changes, at a step's start and on running out of memory)."""
        if self.current.knowledge != knowledge_version:
            self.current = self.current._replace(knowledge=knowledge_version)
        return self.current

    def epoch_now(self, knowledge_version: int) -> Epoch:
        return Epoch(knowledge_version, self.in_steps, self.in_sparse_steps, self.host_bound, frozenset(self.oom))

    def route(self, signature: Optional[tuple], epoch: Epoch) -> Optional[Route]:
        """The route of a call made earlier in ``epoch`` with this signature, else None (the routes of an
        earlier epoch are forgotten here)."""
        if epoch != self.routes_epoch:
            self.routes.clear()
            self.routes_epoch = epoch
            return None
        return self.routes.get(signature)

    def ran_out_of_memory(self, device: str) -> None:
        """The kernel ran out of memory on ``device``: the rest of this run uses ComfyUI's attention there."""
        self.oom.add(device)
        self.current = self.epoch_now(self.current.knowledge)

    def elapsed_ms(self) -> float:
        return (time.perf_counter() - self.started) * 1e3

    def step_started(self, device) -> None:
        """Reads the pace of the step before (where it said: a step that waited for the GPU says nothing
        of it) and starts timing this one on a GPU. The step's windows (``in_steps``, ``in_sparse_steps``) are
        set already."""
        pace = self.step_timer.host_bound() if self.step_timer is not None and not self.waited else None
        if pace is not None:
            self.host_bound = pace
        self.waited = False
        self.current = self.epoch_now(self.current.knowledge)
        self.step_timer = StepTimer(device) if isinstance(device, torch.device) and device.type == "cuda" else None

    def step_launched(self) -> None:
        """The step's launches are done (nothing has waited for the GPU since they ended)."""
        if self.step_timer is not None:
            self.step_timer.stop()

    def calls_since(self, before: dict[str, Tally]) -> dict[str, Tally]:
        """Per device, what was counted after ``before`` (save_tallies), where anything was."""
        changes = {}
        for device, tally in self.tallies.items():
            change = tally.since(before.get(device))
            if change.calls():
                changes[device] = change
        return changes

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
