"""What the pack reports: what became of each attention call (``Tally``, per device), per generation,
per run (a prompt) and per session, what the Scope did with each model, and which kernel each device
uses. The Status and Compare nodes render ``Ledger.snapshot``; nothing here steers a call (that is the
knowledge's). Written under the lock: generations end on more than one thread."""
from __future__ import annotations

import collections
import dataclasses
import threading
from typing import Any, Optional

from ..reasons import Reason

COMFY_ROUTE = "ComfyUI"  # a measured bucket's route when its calls keep ComfyUI's attention; else the kernel's name


def _counter() -> collections.Counter:
    return dataclasses.field(default_factory=collections.Counter)


def _calls(says: str) -> int:
    """A count of calls, with the line Status shows it on where it is not 0 (``{n}``: the count)."""
    return dataclasses.field(default=0, metadata={"says": says})


@dataclasses.dataclass
class Tally:
    """What became of one device's attention calls: on a kernel, or on ComfyUI's attention and why. Each
    counter is declared once, here: adding, subtracting and copying tallies go over these fields."""
    kernel: int = 0                   # calls a kernel ran
    declined: collections.Counter = _counter()  # Reason -> calls kept on ComfyUI's attention
    faults: collections.Counter = _counter()    # Fault -> calls
    masks_dropped: int = _calls("masks dropped or the keys they mask left out: {n}")  # a mask that masks nothing
    copied: int = _calls("q/k/v copied for the kernel (grouped-query k/v, or a last dimension not contiguous): "
                         "{n}")  # call.Call.copies
    counted_from_routes: int = _calls(  # calls of steps the Scope stepped aside from
        "{n} of these calls counted from the routes already known: every call kept ComfyUI's attention, so the "
        "Scope stepped aside from those steps")
    no_block_positions: int = _calls(  # a block window could not place the call (the model says no block)
        "block window not applied to {n} calls: this model does not say which block calls (every block stays in)")
    routes: collections.Counter = _counter()    # (BucketKey, route) -> calls
    tiers: collections.Counter = _counter()     # tier -> of the kernel's calls, those a tier's kernel ran
    tier_declined: collections.Counter = _counter()  # Reason -> calls a tier asked for did not take

    def add(self, other: "Tally") -> None:
        for field in dataclasses.fields(self):
            mine, theirs = getattr(self, field.name), getattr(other, field.name)
            if isinstance(mine, collections.Counter):
                mine.update(theirs)
            else:
                setattr(self, field.name, mine + theirs)

    def calls(self) -> int:
        """The calls counted: on a kernel or kept on ComfyUI's attention."""
        return self.kernel + sum(self.declined.values())

    def since(self, earlier: Optional["Tally"]) -> "Tally":
        """What was counted after ``earlier`` (a copy of this tally made before; None: since it was empty)."""
        change = self.copy()
        if earlier is None:
            return change
        for field in dataclasses.fields(self):
            mine, theirs = getattr(change, field.name), getattr(earlier, field.name)
            if isinstance(mine, collections.Counter):
                mine.subtract(theirs)
                for key in [key for key, n in mine.items() if n == 0]:
                    del mine[key]
            else:
                setattr(change, field.name, mine - theirs)
        return change

    def copy(self) -> "Tally":
        copied = Tally()
        copied.add(self)
        return copied

    def as_dict(self) -> dict[str, Any]:
        """The Status payload's counters (stable keys: the Reason and Fault values)."""
        sdpa = {reason.value: n for reason, n in sorted(self.declined.items(), key=lambda kv: kv[0].value) if n}
        counters = {
            "kernel": self.kernel, "declined": sdpa, "declined_total": sum(sdpa.values()),
            "faults": {fault.value: n for fault, n in sorted(self.faults.items(), key=lambda kv: kv[0].value) if n},
            **{name: getattr(self, name) for name in SAID}}
        tier_declined = {reason.value: n for reason, n in sorted(self.tier_declined.items(),
                                                                  key=lambda kv: kv[0].value) if n}
        if self.tiers or tier_declined:  # (only where a tier was asked for: the sparse tier is the one there is)
            counters["sparse"] = {"calls": sum(self.tiers.values()), "dense": tier_declined}
        return counters



# The counts Status shows each on a line of its own, as their fields say them (name -> line).
SAID = {field.name: field.metadata["says"] for field in dataclasses.fields(Tally) if "says" in field.metadata}

@dataclasses.dataclass
class RunRecord:
    """One model's part of a run (a prompt): what the Scope did with it, its calls and sampling time."""
    note: str
    declined_to: Optional[str] = None  # the override the Scope hands the calls it declines, or None (ComfyUI's own)
    tallies: dict = dataclasses.field(default_factory=dict)  # device -> Tally
    sampling_ms: float = 0.0
    timing_ms: float = 0.0  # of which spent timing kernels (measured routing)


class Ledger:
    def __init__(self):
        self.lock = threading.RLock()
        self.said: set = set()  # keys of log lines said once a session (first_time)
        self.run_id = None      # the run (prompt) whose records ``run`` holds: the one place that says so
        self.run: dict[str, RunRecord] = {}
        self.names_in_run: dict[str, list[int]] = {}  # a model's name -> the ids of this run's models of that name
        # What each model's Scope said when it last ran, (note, declined_to): ComfyUI serves a Scope node
        # whose inputs did not change from its cache, so a later run of its model starts from this, and
        # what happened in an earlier run (another node's override replaced it) stays that run's.
        self.scope_notes: dict[str, tuple[str, Optional[str]]] = {}
        self.reset()

    def reset(self) -> None:
        """What the Status node's reset clears: the counters and per-run records."""
        with self.lock:
            self.totals: dict[str, Tally] = collections.defaultdict(Tally)
            self.last: dict[str, Tally] = {}  # the last generation's, per device
            self.last_ms = (0.0, 0.0)         # its wall time, and the part spent timing kernels
            self.generations = 0
            self.models: dict[str, str] = {}  # model label -> what became of it in its latest run, this session
            # device -> override name -> calls the Scope declined and handed to that override (of totals')
            self.handed: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
            self.kernel_lines: dict[str, dict[str, dict]] = {}  # device -> kernel choice -> what it bound
            self.run = {}

    def first_time(self, *key) -> bool:
        """True the first time ``key`` is seen this session: for log-once messages."""
        with self.lock:
            new = key not in self.said
            self.said.add(key)
            return new

    def _enter_run(self, run_id) -> None:
        """A new run (prompt) forgets the last one's records and model numbering (ComfyUI may reload models)."""
        if run_id != self.run_id:
            self.run_id, self.run, self.names_in_run = run_id, {}, {}

    def record(self, run_id, label: str) -> RunRecord:
        """The model's record in run ``run_id``; a new one says what the model's Scope said when it last ran."""
        with self.lock:
            self._enter_run(run_id)
            if label not in self.run:
                note, declined_to = self.scope_notes.get(label, ("scoped", None))
                self.run[label] = RunRecord(note, declined_to)
                self.models[label] = note
            return self.run[label]

    def model_label(self, name: str, model, run_id=None) -> str:
        """``name``, numbered where another model of this run has it too (Wan 2.2's two experts, in the
        order their Scopes ran)."""
        with self.lock:
            self._enter_run(run_id)
            seen = self.names_in_run.setdefault(name, [])
            seen += [] if id(model) in seen else [id(model)]
            return name if seen.index(id(model)) == 0 else f"{name} #{seen.index(id(model)) + 1}"

    def note_model(self, label: str, note: str, run_id=None, declined_to: Optional[str] = None) -> None:
        """What the Scope did with a model when its node ran ("scoped", "passed through unchanged: ...");
        ``declined_to``: the override it hands the calls it declines (one set before it), if any."""
        with self.lock:
            self.scope_notes[label] = (note, declined_to)
            record = self.record(run_id, label)
            record.note, record.declined_to = note, declined_to
            self.models[label] = note

    def note_run(self, label: str, note: str, run_id) -> None:
        """What became of a model in run ``run_id`` alone ("replaced by ...", "below ..."): said while it
        sampled; a later run starts again from what its Scope said."""
        with self.lock:
            self.record(run_id, label).note = note
            self.models[label] = note

    def note_kernel(self, device: str, choice: str, kernel: Optional[str], version: Optional[str], why: str) -> bool:
        """The kernel ``choice`` bound on ``device``, for Status; True where this session had not said it yet.
        Every routed call asks: the common answer (noted already) is read without the lock."""
        if choice in self.kernel_lines.get(device, {}):
            return False
        with self.lock:
            if choice in self.kernel_lines.get(device, {}):
                return False
            self.kernel_lines.setdefault(device, {})[choice] = {"kernel": kernel, "why": why, "version": version}
            return self.first_time("kernel", device, choice)

    def count_outside_scope(self, device: str) -> None:
        """A call of a scoped model made while no generation is open (a forward outside sampling)."""
        with self.lock:
            self.totals[device].declined[Reason.OUTSIDE_SCOPE] += 1

    def end_generation(self, generation, wall_ms: float) -> None:
        """Adds a finished ``generation.Generation`` (``wall_ms`` long) to its run's record and the session's
        totals; it is the last generation, calls or none (another node's override may have taken them all)."""
        with self.lock:
            self.generations += 1
            self.last_ms = (wall_ms, generation.measuring_ms)
            record = self.record(generation.run_id, generation.model_label)
            record.sampling_ms += self.last_ms[0]
            record.timing_ms += self.last_ms[1]
            self.last = {device: tally.copy() for device, tally in generation.tallies.items()}
            for device, tally in generation.tallies.items():
                self.totals[device].add(tally)
                record.tallies.setdefault(device, Tally()).add(tally)
                if record.declined_to is not None:
                    self.handed[device][record.declined_to] += tally.as_dict()["declined_total"]

    def snapshot(self, run_id=None) -> dict[str, Any]:
        """What the ledger holds, as plain data (``run``: the models of run ``run_id``, empty where that
        prompt scoped none), plus each device's calls per measured bucket (``bucket_calls``) and the calls
        it handed to another override (``handed``, part of ``session``'s declined count)."""
        with self.lock:
            run = self.run if run_id is None or run_id == self.run_id else {}
            devices = sorted({*self.totals, *self.kernel_lines})
            return {
                "generations": self.generations,
                "last_ms": {"sampling": self.last_ms[0], "timing": self.last_ms[1]},
                "run": [{"model": label, "note": r.note, "declined_to": r.declined_to, "sampling_ms": r.sampling_ms,
                         "timing_ms": r.timing_ms, "devices": {d: t.as_dict() for d, t in r.tallies.items()}}
                        for label, r in run.items()],
                "models": [{"model": label, "note": note} for label, note in self.models.items()],
                "devices": {d: {"kernels": dict(self.kernel_lines.get(d, {})),
                                "session": (self.totals.get(d) or Tally()).as_dict(),
                                "last_generation": (self.last.get(d) or Tally()).as_dict(),
                                "handed": dict(self.handed.get(d, {})),
                                "bucket_calls": {"last": dict(_calls_per_bucket(self.last.get(d))),
                                                 "session": dict(_calls_per_bucket(self.totals.get(d)))},
                                "route_calls": {"last": _calls_per_route(self.last.get(d)),
                                                "session": _calls_per_route(self.totals.get(d))}}
                            for d in devices}}


def _calls_per_bucket(tally: Optional[Tally]) -> collections.Counter:
    """Calls per measured bucket, keyed as ``BucketKey.with_kernel`` says it."""
    counts = collections.Counter()
    for (bucket, _route), n in (tally.routes.items() if tally else ()):
        counts[bucket.with_kernel()] += n
    return counts


def _calls_per_route(tally: Optional[Tally]) -> dict[str, dict[str, int]]:
    """Calls per shape bucket (described, its kernel left out) and route (a kernel's name, or ComfyUI)."""
    counts: dict[str, dict[str, int]] = {}
    for (bucket, route), n in (tally.routes.items() if tally else ()):
        shape = counts.setdefault(bucket._replace(kernel="").describe(), {})
        shape[route] = shape.get(route, 0) + n
    return counts
