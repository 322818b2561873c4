"""Measured routing: per shape bucket, time SageAttention against SDPA once, keep the faster.

On an H200, PyPI sageattention 1.0.6 is slower than SDPA at every shape and SageAttention 2
is faster only on long sequences (docs/sage-attention.md), so which side wins depends on the
GPU, the kernel and the shape. The router asks ``decision(key)`` on every call (one dict
lookup); the first call of a bucket without a decision is timed both ways here.

A bucket is device x kernel x dtype x head size x (query, key) lengths rounded up to a power
of two. The two arms are timed in interleaved rounds (SDPA, Sage, SDPA, Sage, ...; a few
repetitions each, CUDA events, one synchronise per arm) and each arm's median round counts, so
one transient - a clock dip, a neighbour's burst - cannot lock a bucket to the wrong side for
the session (seen on the H200: one three-repetition sample once put FLUX's 2048² bucket on
SDPA, where SageAttention 2 is 1.2x faster). That costs some tens of milliseconds per bucket;
a diffusion model has one to three buckets. Decisions that two sessions agreed on are kept in
ComfyUI's user directory (``routing_store``) and reused without timing.
"""
from __future__ import annotations

import dataclasses
import threading
import time
from typing import Callable, Optional, Protocol

import torch

from . import routing_store

ROUTING_MEASURED = "measured"
ROUTING_ALWAYS = "always"
ROUTINGS = (ROUTING_MEASURED, ROUTING_ALWAYS)

WARMUP = 1
REPEATS = 3
ROUNDS = 3
# SageAttention must beat SDPA by more than this to take a bucket: a near-tie goes to SDPA,
# the exact kernel.
TIE_MARGIN = 0.03


@dataclasses.dataclass(frozen=True)
class BucketKey:
    device: str
    kernel: str
    dtype: str
    head_dim: int
    q_bucket: int
    kv_bucket: int

    def label(self) -> str:
        return f"{self.device} {_tokens(self.q_bucket)}x{_tokens(self.kv_bucket)} tokens, {self.dtype} d{self.head_dim}"


@dataclasses.dataclass(frozen=True)
class Decision:
    key: BucketKey
    sage_ms: Optional[float]  # None: the kernel failed while being timed
    sdpa_ms: float
    saved: bool = False       # taken from the store (measured and agreed on in earlier sessions)

    @property
    def use_sage(self) -> bool:
        return self.sage_ms is not None and self.sage_ms * (1.0 + TIE_MARGIN) < self.sdpa_ms

    def describe(self) -> str:
        winner = "Sage" if self.use_sage else "SDPA"
        sage = "failed" if self.sage_ms is None else f"{self.sage_ms:.3f} ms"
        return (f"{self.key.label()}: Sage {sage} vs SDPA {self.sdpa_ms:.3f} ms -> {winner}"
                + (" (saved)" if self.saved else ""))


def bucket(length: int) -> int:
    """The power of two at or above ``length``."""
    return 1 << max(0, int(length) - 1).bit_length()


def bucket_key(device: str, kernel: str, dtype: str, head_dim: int, q_len: int, kv_len: int) -> BucketKey:
    return BucketKey(device, kernel, dtype, head_dim, bucket(q_len), bucket(kv_len))


ARM_SAGE = "sage"
ARM_SDPA = "sdpa"


class Clock(Protocol):
    def __call__(self, arm: str, fn: Callable[[], object], device: torch.device) -> float:
        """Milliseconds one call of ``fn`` (the ``arm``) takes, median of a few."""


def event_clock(arm: str, fn: Callable[[], object], device: torch.device, warmup: int = WARMUP,
                repeats: int = REPEATS) -> float:
    """CUDA events on a CUDA device, the wall clock elsewhere; median of ``repeats`` after
    ``warmup``. The calls run back to back with one synchronise at the end, so the host runs
    ahead as it does in a model, and its overhead shows only where it starves the GPU."""
    for _ in range(warmup):
        fn()
    times = []
    if device.type == "cuda":
        with torch.cuda.device(device):
            stream = torch.cuda.current_stream()
            stream.synchronize()
            events = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
                      for _ in range(repeats)]
            for start, end in events:
                start.record(stream)
                fn()
                end.record(stream)
            end.synchronize()
            times = [start.elapsed_time(end) for start, end in events]
    else:
        for _ in range(repeats):
            t0 = time.perf_counter()
            fn()
            times.append((time.perf_counter() - t0) * 1e3)
    return _median(times)


def _median(values: list[float]) -> float:
    return sorted(values)[len(values) // 2]


_DEFAULT_STORE = object()  # resolved on first use: ComfyUI's user directory, if any


class _Decisions:
    def __init__(self):
        self.lock = threading.Lock()
        self.by_key: dict[BucketKey, Decision] = {}
        self.clock: Clock = event_clock
        self.store = _DEFAULT_STORE


_state = _Decisions()


def decision(key: BucketKey) -> Optional[Decision]:
    return _state.by_key.get(key)


def measure(key: BucketKey, run_sage: Callable[[], object], run_sdpa: Callable[[], object],
            device: torch.device, sageattention_version: Optional[str] = None) -> Decision:
    """Times both arms and keeps the decision for the session - or takes the one earlier
    sessions agreed on. An arm that raises never wins: a failing SageAttention gives
    ``sage_ms=None`` (and is not saved); a failing SDPA propagates (it is the path ComfyUI would
    have taken anyway)."""
    store = _store()
    if store is not None:
        print_, name = routing_store.fingerprint(key.device, sageattention_version), _stored_name(key)
        saved = store.agreed(print_, name)
        if saved is not None:
            result = Decision(key, saved["sage_ms"], saved["sdpa_ms"], saved=True)
            _keep(result)
            return result
    clock = _state.clock
    sdpa_rounds, sage_rounds = [], []
    for _ in range(ROUNDS):
        sdpa_rounds.append(clock(ARM_SDPA, run_sdpa, device))
        try:
            sage_rounds.append(clock(ARM_SAGE, run_sage, device))
        except Exception:  # noqa: BLE001 - a failing arm loses; the caller counts the fault
            _keep(Decision(key, None, _median(sdpa_rounds)))
            raise
    result = Decision(key, _median(sage_rounds), _median(sdpa_rounds))
    _keep(result)
    if store is not None:
        store.offer(print_, name, result.use_sage, result.sage_ms, result.sdpa_ms)
    return result


def _stored_name(key: BucketKey) -> str:
    return f"{key.kernel} {key.label()}"


def _store() -> Optional[routing_store.Store]:
    if _state.store is _DEFAULT_STORE:
        _state.store = routing_store.default_store()
    return _state.store


def use_store(store: Optional[routing_store.Store]):
    """Replaces the decision store (None: keep nothing between sessions); returns the previous."""
    previous, _state.store = _state.store, store
    return previous


def _keep(result: Decision) -> None:
    with _state.lock:
        _state.by_key.setdefault(result.key, result)


def all_decisions() -> list[Decision]:
    with _state.lock:
        return list(_state.by_key.values())


def use_clock(clock: Clock) -> Clock:
    """Replaces the clock (tests pass a fake one); returns the previous clock."""
    previous, _state.clock = _state.clock, clock
    return previous


def reset() -> None:
    with _state.lock:
        _state.by_key.clear()


def _tokens(n: int) -> str:
    return f"{n // 1024}k" if n >= 1024 and n % 1024 == 0 else str(n)
