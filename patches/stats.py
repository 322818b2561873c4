"""Counters per generation and per session, per device; device health; the read API.

A *generation* is one sampling run of a scoped model (the OUTER_SAMPLE wrapper), or one
diffusion-model forward made outside a sampler. Its counters fold into the session's when it
ends. ``snapshot()`` is what the status nodes read.
"""
from __future__ import annotations

import collections
import dataclasses
import logging
import threading
from typing import Any

from . import checks, kernels, timing
from .faults import TRITON_RETIRE_AFTER
from .reasons import Reason

log = logging.getLogger(__name__)


@dataclasses.dataclass
class Counters:
    sage: int = 0
    sdpa: collections.Counter = dataclasses.field(default_factory=collections.Counter)
    faults: collections.Counter = dataclasses.field(default_factory=collections.Counter)
    masks_dropped: int = 0

    def add(self, other: "Counters") -> None:
        self.sage += other.sage
        self.sdpa.update(other.sdpa)
        self.faults.update(other.faults)
        self.masks_dropped += other.masks_dropped

    @property
    def total(self) -> int:
        return self.sage + sum(self.sdpa.values())

    def as_dict(self) -> dict[str, Any]:
        return {
            "sage": self.sage,
            "sdpa": {r.value: n for r, n in sorted(self.sdpa.items(), key=lambda kv: kv[0].value)},
            "sdpa_total": sum(self.sdpa.values()),
            "faults": {f.value: n for f, n in sorted(self.faults.items(), key=lambda kv: kv[0].value)},
            "masks_dropped": self.masks_dropped,
        }

    def summary(self) -> str:
        parts = [f"{self.sage} on SageAttention"]
        parts += [f"{n} SDPA ({r.value})" for r, n in sorted(self.sdpa.items(), key=lambda kv: -kv[1])]
        parts += [f"{n} {f.value} faults" for f, n in self.faults.items()]
        if self.masks_dropped:
            parts.append(f"{self.masks_dropped} no-op masks dropped")
        return ", ".join(parts)


class Generation:
    """Counters of one generation, and the devices that ran out of memory in it."""

    def __init__(self, label: str = ""):
        self.label = label
        self.devices: dict[str, Counters] = collections.defaultdict(Counters)
        self.oom_devices: set[str] = set()
        # Calls the router's too-short shortcut sent to SDPA, keyed by ``Tensor.get_device()`` (an
        # int: cheaper to read than ``.device``), each key's device named once in ``short_devices``.
        # Plain dicts of ints because that path is host-bound: there a Counter's += costs ~2 us,
        # this a fraction. Folded into ``devices`` before they are copied or read (``fold``).
        # Cleared in place, never rebound: the router's active scope holds this very dict.
        self.too_short: dict = {}
        self.short_devices: dict = {}

    def counters(self, device: str) -> Counters:
        return self.devices[device]

    def fold(self) -> None:
        """Moves the shortcut's counts into the per-device counters."""
        for key, n in self.too_short.items():  # an unnamed key is a bookkeeping slip: count it, never fail
            self.devices[str(self.short_devices.get(key, f"device {key}"))].sdpa[Reason.TOO_SHORT] += n
        self.too_short.clear()

    def copy_counters(self) -> dict[str, Counters]:
        self.fold()
        return {device: Counters(c.sage, collections.Counter(c.sdpa), collections.Counter(c.faults), c.masks_dropped)
                for device, c in self.devices.items()}

    def restore_counters(self, saved: dict[str, Counters]) -> None:
        """Back to ``copy_counters``' state: a step that runs again is counted once."""
        self.too_short.clear()
        self.devices.clear()
        self.devices.update(saved)


@dataclasses.dataclass
class DeviceHealth:
    triton_streak: int = 0
    retired: str | None = None  # why, once retired


class _Session:
    def __init__(self):
        self.lock = threading.Lock()
        self.devices: dict[str, Counters] = collections.defaultdict(Counters)
        self.health: dict[str, DeviceHealth] = collections.defaultdict(DeviceHealth)
        self.kernel_lines: dict[str, dict[str, str]] = {}
        self.models: dict[str, bool] = {}  # what the Scope node recognised -> whether it opened
        self.last_generation: dict[str, Counters] = {}
        self.generations = 0
        self.logged: set[tuple] = set()


_session = _Session()


def begin_generation(label: str = "") -> Generation:
    return Generation(label)


def end_generation(gen: Generation) -> None:
    """Folds ``gen`` into the session; its counts at DEBUG."""
    gen.fold()
    with _session.lock:
        _session.generations += 1
        if gen.devices:
            _session.last_generation = {d: c for d, c in gen.devices.items()}
        for device, counters in gen.devices.items():
            _session.devices[device].add(counters)
    if log.isEnabledFor(logging.DEBUG):
        for device, counters in gen.devices.items():
            log.debug("Sage Attention Scope generation %s on %s: %s", gen.label, device, counters.summary())


def count_outside_scope(device: str) -> None:
    with _session.lock:
        _session.devices[device].sdpa[Reason.OUTSIDE_SCOPE] += 1


def is_retired(device: str) -> str | None:
    return _session.health[device].retired if device in _session.health else None


def note_kernel_success(device: str) -> None:
    health = _session.health.get(device)
    if health is not None and health.triton_streak:
        health.triton_streak = 0


def note_triton_fault(device: str) -> bool:
    """Counts one Triton fault in a row; True when this one retires the device."""
    with _session.lock:
        health = _session.health[device]
        health.triton_streak += 1
        if health.retired is None and health.triton_streak >= TRITON_RETIRE_AFTER:
            health.retired = f"{health.triton_streak} Triton errors in a row"
            return True
    return False


def retire(device: str, why: str) -> None:
    with _session.lock:
        _session.health[device].retired = why


def set_kernel_line(device: str, kernel_choice: str, line: dict[str, str]) -> None:
    with _session.lock:
        _session.kernel_lines.setdefault(device, {})[kernel_choice] = line


def note_model(message: str, scoped: bool) -> None:
    """What a Scope node made of its model ("FLUX.1 (Flux)", "SD1.5 is not supported: ...")."""
    with _session.lock:
        _session.models[message] = scoped


def first_time(*key) -> bool:
    """True the first time ``key`` is seen this session: for log-once messages."""
    with _session.lock:
        if key in _session.logged:
            return False
        _session.logged.add(key)
        return True


def _device_entry(counters: Counters | None = None, last: Counters | None = None,
                  health: DeviceHealth | None = None, kernel_lines: dict | None = None) -> dict[str, Any]:
    return {
        "kernels": dict(kernel_lines or {}),
        "session": (counters or Counters()).as_dict(),
        "last_generation": (last or Counters()).as_dict(),
        "retired": health.retired if health else None,
        "checks": [],
        "routing": [],
    }


def snapshot() -> dict[str, Any]:
    """Plain-data view of everything the status nodes show."""
    inst = kernels.installed()
    with _session.lock:
        devices = sorted(set(_session.devices) | set(_session.health) | set(_session.kernel_lines))
        per_device = {d: _device_entry(_session.devices.get(d), _session.last_generation.get(d),
                                       _session.health.get(d), _session.kernel_lines.get(d)) for d in devices}
        generations = _session.generations
        models = [{"model": message, "scoped": scoped} for message, scoped in _session.models.items()]
    for measured in timing.all_decisions():
        per_device.setdefault(measured.key.device, _device_entry())["routing"].append(
            {"bucket": measured.key.label(), "kernel": measured.key.kernel, "sage_ms": measured.sage_ms,
             "sdpa_ms": measured.sdpa_ms, "use_sage": measured.use_sage, "text": measured.describe()})
    for res in checks.all_results():
        per_device.setdefault(res.key.device, _device_entry())["checks"].append(
            {"key": res.key.label(), "passed": res.passed, "cosine": res.cosine, "rel_l2": res.rel_l2,
             "finite": res.finite})
    return {
        "sageattention": {"version": inst.version, "error": inst.error},
        "generations": generations,
        "models": models,
        "devices": per_device,
        "thresholds": {"min_cosine": checks.MIN_COSINE, "max_rel_l2": checks.MAX_REL_L2},
    }


def reset_session() -> None:
    """Forgets counters, device health, check results and log-once keys."""
    global _session
    _session = _Session()
    checks.reset()
    timing.reset()


def reset_counters() -> None:
    """Zeroes the counters only (the status node's reset); health and checks stay."""
    with _session.lock:
        _session.devices.clear()
        _session.last_generation = {}
        _session.generations = 0

