"""Measured routing's clock: a kernel timed against SDPA on a real call, once per shape bucket. The
arms run in interleaved rounds and each arm's median round counts, so one transient cannot lock a
bucket to the wrong side; the kernel must win by ``TIE_MARGIN`` (a near tie goes to SDPA, the exact
kernel). Both arms are warm (the call and its check ran them), so a round is one call each: a bucket
costs six calls, under 1% of a 20-step FLUX generation's 1140 attention calls. ``fingerprint`` is
what a decision depends on besides its bucket (the routing store keys saved decisions on it).

On a GPU the clock times the device. Where the GPU sets a step's pace, the host's time is hidden
behind the queue of launched work (FLUX.1 1024², 180 ms of GPU work a step: the kernel is 1.11× a
step, H100, ComfyUI 0.33, 2026-12-06); where the host sets it, each call's host time (Python and
launches) is paid in full instead (LTX-Video 2B at 5k tokens, 66 ms a step). So each arm's host
time is taken too, and where the step is host-bound the kernel must also win by more than it costs
the host over SDPA. Which of the two a step is, ``StepTimer`` reads from the step before."""
from __future__ import annotations

import dataclasses
import time
from pathlib import Path
from typing import Callable, NamedTuple, Optional

import torch

REPEATS, ROUNDS, TIE_MARGIN = 1, 3, 0.03
HOST_PACE_SLACK = 1.1  # a step whose GPU span is within 10% of its host time kept the GPU waiting on the host
RULE = "host-aware"  # in the fingerprint: decisions saved under an earlier rule are measured again
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
    key: BucketKey
    sage_ms: Optional[float]  # None: the kernel failed while timed
    sdpa_ms: float
    saved: bool = False       # from the store: agreed on by earlier sessions
    host_extra_ms: float = 0.0  # the kernel arm's host time over SDPA's, a call (GPU only)

    @property
    def use_sage(self) -> bool:
        """Whether the kernel wins where the GPU sets the step's pace: on the device, by ``TIE_MARGIN``."""
        return self.sage_ms is not None and self.sage_ms * (1.0 + TIE_MARGIN) < self.sdpa_ms

    def use_sage_when(self, host_bound: bool) -> bool:
        """Whether the kernel wins in a step of this pace: where the host sets it (``host_bound``), the
        kernel must also gain more on the device than it costs the host."""
        return self.use_sage and (not host_bound or self.host_extra_ms < self.sdpa_ms - self.sage_ms)

    def describe(self) -> str:
        sage = "failed" if self.sage_ms is None else f"{self.sage_ms:.3f} ms"
        host = f", host +{self.host_extra_ms:.3f} ms" if self.host_extra_ms > 0 else ""
        verdict = "Sage" if self.use_sage else "SDPA"
        if self.use_sage and not self.use_sage_when(True):
            verdict += " (SDPA where the host sets the step's pace)"
        return (f"{self.key.describe()}: Sage {sage}{host} vs SDPA {self.sdpa_ms:.3f} ms -> {verdict}"
                + (" (saved)" if self.saved else ""))


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


def time_both(clock: Clock, run_sage, run_sdpa, device: torch.device,
              key: BucketKey) -> tuple[float, float, float, float]:
    """(kernel ms, SDPA ms), each the median of ``ROUNDS`` interleaved rounds; the ms the timing itself
    took, as the clock counts it; and on a GPU, the kernel arm's median host ms a call over SDPA's (on
    the CPU the clock's time is the host's already: 0)."""
    times, host = {"sage": [], "sdpa": []}, {"sage": [], "sdpa": []}
    for _ in range(ROUNDS):
        for arm, run in (("sdpa", run_sdpa), ("sage", run_sage)):
            times[arm].append(clock(arm, _host_timed(run, host[arm]), device, key))
    spent = REPEATS * sum(map(sum, times.values()))
    host_extra = _median(host["sage"]) - _median(host["sdpa"]) if device.type == "cuda" else 0.0
    return _median(times["sage"]), _median(times["sdpa"]), spent, host_extra


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


def _median(values: list) -> float:
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
