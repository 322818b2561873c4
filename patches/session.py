"""All mutable state of the pack, in one object that lives as long as the ComfyUI process.

The pack makes one at load (nodes/__init__.py) and hands it to every router it builds; a test
makes its own. Facts about this machine (kernel choices, first-call checks, routing decisions,
retired devices) stay for the session; counters and per-run records are what a reset clears.
"""
from __future__ import annotations

import collections
import dataclasses
import importlib.metadata
import logging
import re
import threading
from typing import Any, Callable, Optional

import torch

from . import backends, routing_store, trials
from .reasons import MASK_DROPPED, SAGE, TRITON_RETIRE_AFTER, Fault, Reason
from .settings import KERNEL_AUTO

log = logging.getLogger(__name__)
_DEFAULT = object()


@dataclasses.dataclass(frozen=True)
class Resolution:
    """The bound kernel for one device and kernel choice, or None and why not."""
    bound: Optional[backends.Bound]
    why: str


class Generation:
    """One sampling run of a scoped model: its counters per device, what it learned, and the
    ``decide.State`` it reads the session through."""

    def __init__(self, session: "Session", label: str = ""):
        self.session, self.label = session, label
        self.counts: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
        self.oom: set[str] = set()                    # devices out of memory in this run
        self.flags: list[tuple[trials.CheckKey, torch.Tensor]] = []  # finite flags of kernel outputs
        self.hooks: dict[int, list] = {}               # ControlNet model id -> hook handles

    def retired(self, device: str) -> Optional[str]:
        return self.session.retired.get(device)

    def out_of_memory(self, device: str) -> bool:
        return device in self.oom

    def check(self, key: trials.CheckKey) -> Optional[trials.CheckResult]:
        return self.session.checks.get(key)

    def decision(self, key: trials.BucketKey) -> Optional[trials.Decision]:
        return self.session.decisions.get(key)

    def copy_counts(self) -> dict[str, collections.Counter]:
        return {device: collections.Counter(c) for device, c in self.counts.items()}

    def take_bad_keys(self) -> set[trials.CheckKey]:
        """Keys whose kernel output since the last call held NaN or inf: one sync per device."""
        flags, self.flags = self.flags, []
        by_device = collections.defaultdict(list)
        for key, flag in flags:
            by_device[flag.device].append((key, flag))
        return {key for group in by_device.values()
                for (key, _), ok in zip(group, torch.stack([f for _, f in group]).tolist()) if not ok}


class Session:
    def __init__(self, *, store: Any = _DEFAULT, clock: trials.Clock = trials.event_clock,
                 modules: Callable[[str], Any] = backends.import_module,
                 versions: Optional[Callable[[str], Optional[str]]] = None,
                 capability: Optional[Callable[[torch.device], tuple[int, int]]] = None):
        self.lock = threading.RLock()
        self.clock, self.modules = clock, modules
        self._store = store
        self._versions = versions or _distribution_version
        self._capability = capability or torch.cuda.get_device_capability
        self.extra_backends: dict[str, backends.Backend] = {}  # test doubles, benchmark probes
        self.resolutions: dict[tuple[str, str], Resolution] = {}
        self.checks: dict[trials.CheckKey, trials.CheckResult] = {}
        self.decisions: dict[trials.BucketKey, trials.Decision] = {}
        self.retired: dict[str, str] = {}
        self.triton_streak: collections.Counter = collections.Counter()
        self.logged: set[tuple] = set()
        self.reset_counters()

    def reset_counters(self) -> None:
        """What the Status node's reset clears: counters and per-run records."""
        with self.lock:
            self.totals: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
            self.last: dict[str, collections.Counter] = {}
            self.generations = 0
            self.models: dict[str, bool] = {}
            self.kernel_lines: dict[str, dict[str, dict]] = {}

    # -- backends -----------------------------------------------------------------------------

    def backend(self, name: str) -> Optional[backends.Backend]:
        return self.extra_backends.get(name) or backends.REGISTRY.get(name)

    def add_backend(self, backend: backends.Backend) -> None:
        with self.lock:
            self.extra_backends[backend.name] = backend
            self.resolutions.clear()

    def remove_backend(self, name: str) -> None:
        with self.lock:
            self.extra_backends.pop(name, None)
            self.resolutions.clear()

    def names(self) -> list[str]:
        return [KERNEL_AUTO, *backends.REGISTRY, *self.extra_backends]

    def usable(self, devices: list[torch.device]) -> list[str]:
        """``auto`` and every kernel that binds on one of ``devices``."""
        return [KERNEL_AUTO] + [n for n in self.names()[1:] if any(self.resolve(n, d).bound for d in devices)]

    def resolve(self, choice: str, device: torch.device) -> Resolution:
        key = (choice, str(device))
        found = self.resolutions.get(key)
        if found is None:
            with self.lock:
                found = self.resolutions[key] = self._resolve(choice, torch.device(device))
        return found

    def _resolve(self, choice: str, device: torch.device) -> Resolution:
        capability = self._capability(device) if device.type == "cuda" else None
        if choice != KERNEL_AUTO:
            backend = self.backend(choice)
            if backend is None:
                return Resolution(None, f"no kernel is called {choice!r}; known: {', '.join(self.names())}")
            why = backend.unusable_on(device, capability)
            bound = why or backends.bind(backend, device, self.modules, self.version_label)
            return Resolution(bound, f"{choice} chosen") if isinstance(bound, backends.Bound) else Resolution(None, bound)
        if device.type != "cuda":
            return Resolution(None, f"SageAttention needs a CUDA device, got {device}")
        tried = []
        for name in backends.auto_candidates(capability):
            backend = self.backend(name)
            bound = backend.unusable_on(device, capability) or backends.bind(backend, device, self.modules,
                                                                              self.version_label)
            if isinstance(bound, backends.Bound):
                return Resolution(bound, f"auto: sm{capability[0]}{capability[1]} -> {name}")
            tried.append(bound)
        return Resolution(None, "auto: " + ("; ".join(tried) or f"no kernel for sm{capability[0]}{capability[1]}"))

    def version_label(self, backend: backends.Backend) -> str:
        """The library's version as its distribution says, and where that disagrees with the API
        found in the module, both (a SageAttention 2 build whose metadata says 1.0.6)."""
        version = self._versions(backend.module) if backend.module else None
        if not backend.module:  # a function handed over as it is (a test double)
            return backend.library
        major = re.search(r"(\d+)$", backend.library)
        if version is None:
            return f"{backend.library}, version unknown (no distribution metadata for {backend.module})"
        if major and not version.startswith(major.group(1)):
            return f"{backend.library} (its distribution metadata says {backend.module} {version})"
        return f"{backend.library} ({backend.module} {version})"

    # -- facts about this machine ---------------------------------------------------------

    def record_check(self, result: trials.CheckResult) -> None:
        self.checks[result.key] = result

    def store(self) -> Optional[routing_store.Store]:
        if self._store is _DEFAULT:
            self._store = routing_store.default_store()
        return self._store

    def measure(self, key: trials.BucketKey, run_sage, run_sdpa, device: torch.device, version: str):
        """The bucket's decision: the one earlier sessions agreed on, else timed now. A kernel that
        raises while timed loses the bucket, and the error propagates to be counted."""
        store = self.store()
        if store is not None:
            print_, name = routing_store.fingerprint(key.device, version), f"{key.kernel} {key.label()}"
            saved = store.agreed(print_, name)
            if saved is not None:
                return self.decisions.setdefault(key, trials.Decision(key, saved["sage_ms"], saved["sdpa_ms"], True))
        try:
            sage_ms, sdpa_ms = trials.time_both(self.clock, run_sage, run_sdpa, device)
        except Exception:
            self.decisions.setdefault(key, trials.Decision(key, None, float("nan")))
            raise
        decision = self.decisions.setdefault(key, trials.Decision(key, sage_ms, sdpa_ms))
        if store is not None:
            store.offer(print_, name, decision.use_sage, sage_ms, sdpa_ms)
        return decision

    def note_success(self, device: str) -> None:
        if self.triton_streak.get(device):
            self.triton_streak[device] = 0

    def note_fault(self, device: str, fault: Fault) -> bool:
        """Counts a Triton fault in a row (a success resets it); True when it retires the device."""
        if fault is not Fault.TRITON:
            return False
        with self.lock:
            self.triton_streak[device] += 1
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

    # -- counters -------------------------------------------------------------------------

    def count_outside(self, device: str) -> None:
        with self.lock:
            self.totals[device][Reason.OUTSIDE_SCOPE] += 1

    def end_generation(self, generation: Generation) -> None:
        with self.lock:
            self.generations += 1
            if generation.counts:
                self.last = generation.copy_counts()
            for device, counts in generation.counts.items():
                self.totals[device].update(counts)

    def note_model(self, message: str, scoped: bool) -> None:
        with self.lock:
            self.models[message] = scoped

    def note_kernel(self, device: str, choice: str, resolution: Resolution) -> None:
        bound = resolution.bound
        with self.lock:
            self.kernel_lines.setdefault(device, {})[choice] = {
                "kernel": bound.name if bound else None, "why": resolution.why,
                "version": bound.version if bound else None}

    def snapshot(self) -> dict[str, Any]:
        """Plain data for the Status node."""
        with self.lock:
            devices = sorted(set(self.totals) | set(self.retired) | set(self.kernel_lines)
                             | {k.device for k in self.checks} | {k.device for k in self.decisions})
            out = {d: {"kernels": dict(self.kernel_lines.get(d, {})), "session": as_dict(self.totals.get(d)),
                        "last_generation": as_dict(self.last.get(d)), "retired": self.retired.get(d),
                        "checks": [dataclasses.asdict(r) | {"key": r.key.label()}
                                   for r in self.checks.values() if r.key.device == d],
                        "routing": [{"bucket": m.key.label(), "kernel": m.key.kernel, "sage_ms": m.sage_ms,
                                     "sdpa_ms": m.sdpa_ms, "use_sage": m.use_sage, "text": m.describe()}
                                    for m in self.decisions.values() if m.key.device == d]} for d in devices}
            libraries = {b.module: self._versions(b.module) for b in backends.REGISTRY.values()}
            return {"generations": self.generations, "devices": out, "libraries": libraries,
                    "models": [{"model": m, "scoped": s} for m, s in self.models.items()],
                    "thresholds": {"min_cosine": trials.MIN_COSINE, "max_rel_l2": trials.MAX_REL_L2}}


def as_dict(counts: Optional[collections.Counter]) -> dict[str, Any]:
    """A device's counters in the payload's shape."""
    counts = counts or collections.Counter()
    sdpa = {r.value: n for r, n in sorted(counts.items()) if isinstance(r, Reason) and n}
    return {"sage": counts[SAGE], "sdpa": sdpa, "sdpa_total": sum(sdpa.values()),
            "faults": {f.value: n for f, n in sorted(counts.items()) if isinstance(f, Fault) and n},
            "masks_dropped": counts[MASK_DROPPED]}


def _distribution_version(module: str) -> Optional[str]:
    for name in (module, module.replace("_", "-")):
        try:
            return importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            continue
    return None
