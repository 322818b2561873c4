"""Measured routing's clock: every candidate kernel a call may run on timed against ComfyUI's own
attention on a real call, once per shape bucket. The arms run in interleaved rounds (ComfyUI's first
in each) and each arm's median round counts, so one transient cannot lock a bucket to the wrong side;
a kernel must win by ``TIE_MARGIN`` (a near tie goes to ComfyUI's attention). Every arm is warm (the
call and its first-call check ran it), so a round is one call each: a bucket of two candidates costs
nine calls, a small part of a generation's attention calls (Status and the log report the time).
``fingerprint`` is what a decision depends on besides its bucket (the routing store keys saved
decisions on it).

On a GPU the clock times the device. Where the GPU sets a step's pace, the host's time is hidden
behind the queue of launched work; where the host sets it, each call's host time (Python and
launches) is paid in full instead. So each arm's host time is taken too, and where the step is
host-bound a kernel must also win by more than it costs the host over ComfyUI's attention. Which of
the two a step is, ``StepTimer`` reads from the step before."""
from __future__ import annotations

import dataclasses
import time
from pathlib import Path
from typing import Callable, NamedTuple, Optional

import torch

REPEATS, ROUNDS, TIE_MARGIN = 1, 3, 0.03
HOST_PACE_SLACK = 1.1  # a step whose GPU span is within 10% of its host time kept the GPU waiting on the host
RULE = "candidates"  # in the fingerprint: decisions saved under an earlier rule are measured again
COMFY_ARM, KERNEL_ARM = "comfy", "kernel"  # how the clock is told which arm it times
Clock = Callable[..., float]  # (arm, fn, device, bucket) -> ms a call of fn takes


class BucketKey(NamedTuple):  # a tuple: made and hashed on every kernel call, so cheap to make
    device: str
    kernel: str
    dtype: str
    head_dim: int
    q_bucket: int  # the query and key lengths, rounded up to powers of two
    kv_bucket: int

    def describe(self) -> str:
        return f"{self.device} {self.q_bucket}x{self.kv_bucket} tokens, {self.dtype} d{self.head_dim}"

    def with_kernel(self) -> str:
        """The bucket and its kernel in words: the routing store's key, and Status's."""
        return f"{self.kernel} {self.describe()}"


@dataclasses.dataclass(frozen=True)
class Decision:
    """One candidate kernel timed against ComfyUI's attention on one shape bucket (``key`` names both)."""
    key: BucketKey
    kernel_ms: Optional[float]  # None: the kernel failed while timed
    comfy_ms: float
    saved: bool = False       # from the store: agreed on by earlier sessions
    host_extra_ms: float = 0.0  # the kernel arm's host time over ComfyUI's, a call (GPU only)

    @property
    def use_kernel(self) -> bool:
        """Whether the kernel wins where the GPU sets the step's pace: on the device, by ``TIE_MARGIN``."""
        if self.kernel_ms is None:
            return False
        return self.kernel_ms * (1.0 + TIE_MARGIN) < self.comfy_ms

    def use_kernel_when(self, host_bound: bool) -> bool:
        """Whether the kernel wins in a step of this pace: where the host sets it (``host_bound``), the
        kernel must also gain more on the device than it costs the host."""
        if not self.use_kernel:
            return False
        if not host_bound:
            return True
        return self.host_extra_ms < self.comfy_ms - self.kernel_ms

    @property
    def margin(self) -> Optional[float]:
        """ComfyUI's time over the kernel's (above 1: the kernel is faster), or None where it failed."""
        if self.kernel_ms is None or self.kernel_ms <= 0:
            return None
        return self.comfy_ms / self.kernel_ms

    def describe(self) -> str:
        kernel = self.key.kernel
        timed = "failed" if self.kernel_ms is None else f"{self.kernel_ms:.3f} ms"
        host = f", host +{self.host_extra_ms:.3f} ms" if self.host_extra_ms > 0 else ""
        verdict = kernel if self.use_kernel else "ComfyUI"
        if self.use_kernel and not self.use_kernel_when(True):
            verdict += " (ComfyUI where the host sets the step's pace)"
        saved = " (saved)" if self.saved else ""
        return f"{self.key.describe()}: {kernel} {timed}{host} vs ComfyUI {self.comfy_ms:.3f} ms -> {verdict}{saved}"


@dataclasses.dataclass(frozen=True)
class Timing:
    """What one timing of a bucket's candidates found: per candidate (by its bucket key) the median ms a
    call, or None where it raised (``errors`` holds why); ComfyUI's median ms; each candidate's host ms
    a call over ComfyUI's (GPU only); and the ms the timing took, as the clock counts it."""
    kernel_ms: dict
    comfy_ms: float
    host_extra_ms: dict
    spent_ms: float
    errors: dict


def bucket(length: int) -> int:
    return 1 << max(0, int(length) - 1).bit_length()


def event_clock(arm: str, fn: Callable[[], object], device: torch.device, bucket=None, repeats=REPEATS) -> float:
    """Median ms of ``repeats`` calls back to back as in a model (the host's cost shows only where it
    starves the GPU): CUDA events on a GPU, else the wall clock."""
    cuda = device.type == "cuda"

    def mark():
        if not cuda:
            return time.perf_counter()
        event = torch.cuda.Event(enable_timing=True)
        event.record(torch.cuda.current_stream(device))
        return event
    marks = [mark()]
    for _ in range(repeats):
        fn()
        marks.append(mark())
    if cuda:
        marks[-1].synchronize()
    return sorted(a.elapsed_time(b) if cuda else (b - a) * 1e3 for a, b in zip(marks, marks[1:]))[repeats // 2]


def time_arms(clock: Clock, kernels: dict, run_comfy: Callable, device: torch.device) -> Timing:
    """Each kernel of ``kernels`` (bucket key -> a call of it) against ``run_comfy``, in ``ROUNDS``
    interleaved rounds, ComfyUI's arm first in each; a kernel that raises leaves the rounds, its error
    kept, and the others go on."""
    first_key = next(iter(kernels))
    comfy_times, comfy_host = [], []
    times = {key: [] for key in kernels}
    host = {key: [] for key in kernels}
    errors = {}
    for _ in range(ROUNDS):
        comfy_times.append(clock(COMFY_ARM, _host_timed(run_comfy, comfy_host), device, first_key))
        for key, run in kernels.items():
            if key in errors:
                continue
            try:
                times[key].append(clock(KERNEL_ARM, _host_timed(run, host[key]), device, key))
            except Exception as exc:  # noqa: BLE001 - a kernel failing while timed loses the bucket, nothing more
                errors[key] = exc
    spent = REPEATS * (sum(comfy_times) + sum(sum(t) for t in times.values()))
    kernel_ms, host_extra = {}, {}
    for key in kernels:
        kernel_ms[key] = None if key in errors else median(times[key])
        host_extra[key] = 0.0
        if device.type == "cuda" and key not in errors:  # on the CPU the clock's time is the host's already
            host_extra[key] = median(host[key]) - median(comfy_host)
    return Timing(kernel_ms, median(comfy_times), host_extra, spent, errors)


@dataclasses.dataclass(frozen=True)
class StepVerdict:
    """Model evaluations timed with the Scope's routes and like ones without the Scope (the medians of
    ``pairs`` of each): the per-call timings can miss what a kernel costs inside a step (its host time in a
    host-bound step, its launches among the model's), so the whole step has the last word. ``calls``: per
    device, the calls such an evaluation makes (counted for each evaluation the verdict steps aside from)."""
    scope_ms: float
    comfy_ms: float
    calls: dict
    pairs: int = 1

    @property
    def keep_scope(self) -> bool:
        """Whether the Scope's routes win the step, by ``TIE_MARGIN`` (a near tie goes to ComfyUI's)."""
        return self.scope_ms * (1.0 + TIE_MARGIN) < self.comfy_ms

    def describe(self) -> str:
        verdict = "the Scope's routes" if self.keep_scope else "ComfyUI's attention (the Scope steps aside)"
        samples = f" (medians of {self.pairs} each)" if self.pairs > 1 else ""
        return f"a step {self.scope_ms:.1f} ms with the Scope, {self.comfy_ms:.1f} ms without -> {verdict}{samples}"


class StepClock:
    """Times whole model evaluations for the step trial, on a GPU: there a kernel's cost inside a step can
    differ from its time alone (its host time in a host-bound step, its launches among the model's). On the
    CPU the per-call clock already reads the wall clock, host time and all, so steps are not tried there."""

    @staticmethod
    def times(device) -> bool:
        return isinstance(device, torch.device) and device.type == "cuda"

    def __call__(self, arm: str, run: Callable[[], object], device) -> tuple[object, float]:
        """(``run``'s result, the ms from its start to the device's last work: synchronised before and after;
        a few evaluations a shape in a session)."""
        torch.cuda.synchronize(device)
        started = time.perf_counter()
        out = run()
        torch.cuda.synchronize(device)
        return out, (time.perf_counter() - started) * 1e3


def host_sets_pace(host_ms: float, gpu_ms: float) -> bool:
    """Whether the host set a step's pace: the GPU's span from the step's first launch to its last
    work is within ``HOST_PACE_SLACK`` of the host's time launching it (it ran as fast as the host
    launched); a GPU-bound step's span runs well past the host's, its queue draining."""
    return gpu_ms < host_ms * HOST_PACE_SLACK


class StepTimer:
    """One model evaluation's host time and its GPU span (CUDA events at its start and end), read at
    the next evaluation's start, when the end event has long been reached unless the GPU is still
    behind the host. Three event calls and a query a step; CUDA only."""

    def __init__(self, device: torch.device):
        self.stream = torch.cuda.current_stream(device)
        self.start, self.end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        self.start.record(self.stream)
        self.started, self.host_ms = time.perf_counter(), None

    def stop(self) -> None:
        """At the end of the step's launches (before anything waits for the GPU); once."""
        if self.host_ms is None:
            self.host_ms = (time.perf_counter() - self.started) * 1e3
            self.end.record(self.stream)

    def host_bound(self) -> Optional[bool]:
        """Whether the host set the step's pace; False where the GPU has not finished it yet (it is behind
        the host), None for a step that never stopped."""
        if self.host_ms is None:
            return None
        if not self.end.query():
            return False
        return host_sets_pace(self.host_ms, self.start.elapsed_time(self.end))


def _host_timed(run: Callable, into: list) -> Callable:
    """``run``, noting the host's ms for each call (until it returns, before any synchronisation)."""
    def timed():
        started = time.perf_counter()
        out = run()
        into.append((time.perf_counter() - started) * 1e3)
        return out
    return timed


def median(values: list) -> float:
    """The middle value (the upper one of an even count), or 0 of none."""
    return sorted(values)[len(values) // 2] if values else 0.0


def fingerprint(device: str, kernel_version: Optional[str]) -> str:
    """What a decision depends on besides its bucket."""
    dev, parts = torch.device(device), [f"torch {torch.__version__}", f"kernel {kernel_version}", f"rule {RULE}"]
    if dev.type == "cuda":
        parts += [torch.cuda.get_device_name(dev), "sm%d%d" % torch.cuda.get_device_capability(dev),
                  f"CUDA {torch.version.cuda}", f"driver {driver_version()}"]
    return " | ".join(parts + ([] if dev.type == "cuda" else [dev.type]))


def driver_version() -> str:
    try:  # the kernel module's own report (Linux); elsewhere decisions key on everything else
        return Path("/proc/driver/nvidia/version").read_text().split("Kernel Module")[1].split()[0]
    except (OSError, IndexError):
        return "unknown"
