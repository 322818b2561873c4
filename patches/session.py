"""All mutable state of the pack, in one object that lives as long as the ComfyUI process (made at
load in nodes/__init__.py, handed to every router; a test makes its own). What it learns about the
machine stays; a reset clears the counters and per-run records."""
from __future__ import annotations

import collections
import logging
import threading
import time
from typing import Optional

import torch

from . import backends, trials
from .reasons import TRITON_RETIRE_AFTER, Fault

log = logging.getLogger(__name__)


class Generation:
    """One sampling run of a scoped model: its counters per device, and the state ``decide`` reads."""

    def __init__(self, session: "Session", label: str = "", run_id=None):
        self.session, self.label, self.run_id = session, label, run_id
        self.retired, self.checks, self.decisions = session.retired, session.checks, session.decisions
        self.counts: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
        self.oom: set[str] = set()         # devices that ran out of memory in this run
        self.in_steps = True               # the current step lies inside the step window
        self.flags: list[tuple[trials.CheckKey, torch.Tensor]] = []  # kernel outputs' finite flags
        self.hooks: dict[int, list] = {}   # ControlNet model id -> its hook handles
        self.started, self.measuring_ms = time.perf_counter(), 0.0
        self.said_override = False         # the override found at a step is not the Scope's: said once

    def take_bad_keys(self) -> set[trials.CheckKey]:
        """Keys with a NaN or inf in a kernel output since the last call: one sync per device."""
        flags, self.flags = self.flags, []
        finite = {d: iter(torch.stack([f for _, f in flags if f.device == d]).tolist())
                  for d in {f.device for _, f in flags}}
        return {key for key, flag in flags if not next(finite[flag.device])}


class Session:
    def __init__(self, *, store=None, clock: trials.Clock = trials.event_clock,
                 finder: backends.Finder = backends.Finder()):
        self.lock = threading.RLock()
        self.clock, self.finder, self.store = clock, finder, store
        self.extra_backends: dict[str, backends.Backend] = {}  # test doubles, benchmark probes
        self.resolutions: dict[tuple[str, str], backends.Resolution] = {}
        self.checks: dict[trials.CheckKey, trials.CheckResult] = {}
        self.decisions: dict[trials.BucketKey, trials.Decision] = {}
        self.retired: dict[str, str] = {}  # device -> why
        self.triton_streak, self.logged = collections.Counter(), set()
        self.labels: tuple = (None, {})  # (run, a model's name -> the ids of the models of that name in it)
        self.reset_counters()

    def reset_counters(self) -> None:
        """What the Status node's reset clears: counters and per-run records."""
        with self.lock:
            self.totals: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
            self.last: dict[str, collections.Counter] = {}  # the last generation's counters
            self.last_ms, self.generations = (0.0, 0.0), 0  # its wall time, and the part spent timing kernels
            self.models: dict[str, str] = {}  # model label -> what the Scope did with it, this session
            self.kernel_lines: dict[str, dict[str, dict]] = {}
            self.run_id, self.run = None, {}  # this run (a prompt): model label -> its record

    def backend(self, name: str) -> Optional[backends.Backend]:
        return self.extra_backends.get(name) or backends.REGISTRY.get(name)

    def add_backend(self, backend: Optional[backends.Backend], name: str = "") -> None:
        """Adds ``backend`` (None: takes back ``name``); what was resolved before is forgotten."""
        with self.lock:
            if backend is None:
                self.extra_backends.pop(name, None)
            else:
                self.extra_backends[backend.name] = backend
            self.resolutions.clear()

    def names(self) -> list[str]:
        return ["auto", *backends.REGISTRY, *self.extra_backends]

    def usable(self, devices: list[torch.device]) -> list[str]:  # auto and every kernel bound on one of them
        return ["auto"] + [n for n in self.names()[1:] if any(self.resolve(n, d).bound for d in devices)]

    def resolve(self, choice: str, device: torch.device, note: bool = False) -> backends.Resolution:
        """The kernel ``choice`` binds on ``device``; with ``note``, said once in the log and the status."""
        key = (choice, str(device))
        if key not in self.resolutions:
            with self.lock:
                self.resolutions[key] = self.finder.resolve(choice, torch.device(device), self.backend)
        found, bound = self.resolutions[key], self.resolutions[key].bound
        if note and choice not in self.kernel_lines.get(str(device), {}):  # again after a reset
            with self.lock:
                self.kernel_lines.setdefault(str(device), {})[choice] = {
                    "kernel": bound and bound.backend.name, "why": found.why, "version": bound and bound.version}
            if self.first_time("kernel", str(device), choice):
                log.info("Sage Attention Scope on %s: %s", device,
                         f"{bound.backend.name}, {bound.version} ({found.why})" if bound else f"SDPA only: {found.why}")
        return found

    def measure(self, key: trials.BucketKey, run_sage, run_sdpa, device: torch.device, version: str,
                generation: Generation):
        """The bucket's decision: the one earlier sessions agreed on, else timed now (its cost added to
        ``generation``). A kernel that raises while timed loses the bucket; the error propagates."""
        store, where = self.store, (trials.fingerprint(key.device, version), f"{key.kernel} {key.label()}")
        saved = store.agreed(*where) if store is not None else None
        if saved is not None:
            return self.decisions.setdefault(key, trials.Decision(key, saved["sage_ms"], saved["sdpa_ms"], True))
        try:
            sage_ms, sdpa_ms, spent = trials.time_both(self.clock, run_sage, run_sdpa, device, key)
            generation.measuring_ms += spent
        except Exception:
            self.decisions.setdefault(key, trials.Decision(key, None, float("nan")))
            raise
        decision = self.decisions.setdefault(key, trials.Decision(key, sage_ms, sdpa_ms))
        if store is not None:
            store.offer(*where, decision.use_sage, sage_ms, sdpa_ms)
        return decision

    def note_fault(self, device: str, fault: Optional[Fault]) -> bool:
        """Counts Triton faults in a row (anything else ends the row); True when one retires the device."""
        with self.lock:
            self.triton_streak[device] = self.triton_streak[device] + 1 if fault is Fault.TRITON else 0
            if device not in self.retired and self.triton_streak[device] >= TRITON_RETIRE_AFTER:
                self.retired[device] = f"{self.triton_streak[device]} Triton errors in a row"
                return True
        return False

    def first_time(self, *key) -> bool:
        """True the first time ``key`` is seen this session: for log-once messages."""
        with self.lock:
            new = key not in self.logged
            self.logged.add(key)
            return new

    def end_generation(self, generation: Generation) -> None:
        with self.lock:
            self.generations += 1
            self.last_ms = ((time.perf_counter() - generation.started) * 1e3, generation.measuring_ms)
            record = self.record(generation.run_id, generation.label)
            record["sampling_ms"] = record["sampling_ms"] + self.last_ms[0]
            record["timing_ms"] = record["timing_ms"] + self.last_ms[1]
            if generation.counts:
                self.last = {device: collections.Counter(c) for device, c in generation.counts.items()}
            for device, counts in generation.counts.items():
                self.totals[device].update(counts)
                record["counts"].setdefault(device, collections.Counter()).update(counts)

    def record(self, run_id, label: str) -> dict:
        """The model's record in run ``run_id`` (a prompt); a new run forgets the last one's."""
        with self.lock:
            if run_id != self.run_id:
                self.run_id, self.run = run_id, {}
            return self.run.setdefault(label, {"note": self.models.get(label, "scoped"), "counts": {},
                                               "sampling_ms": 0.0, "timing_ms": 0.0})

    def label(self, message: str, model, run_id=None) -> str:
        """``message``, numbered where another model of this run has it too (Wan 2.2's two experts, in
        the order their Scopes ran); a new run (prompt) numbers afresh, as ComfyUI may reload models."""
        with self.lock:
            if self.labels[0] != run_id:
                self.labels = (run_id, {})
            seen = self.labels[1].setdefault(message, [])
            seen += [] if id(model) in seen else [id(model)]
            return message if seen.index(id(model)) == 0 else f"{message} #{seen.index(id(model)) + 1}"

    def note_model(self, label: str, note: str, run_id=None) -> None:
        """What the Scope did with a model ("scoped", "passed through unchanged: ...", "replaced by ...")."""
        with self.lock:
            self.models[label] = self.record(run_id, label)["note"] = note
