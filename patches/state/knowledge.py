"""What the pack has learned about this machine, for as long as ComfyUI runs: which kernel each choice
binds on each device, the first-call checks' verdicts, measured routing's decisions per shape bucket,
and the devices retired after repeated kernel errors. ``decide`` and the router read it; nothing here
is a count or a report (that is the ledger's). Every write holds the lock: models sample on more than
one thread (two prompts, two GPUs). Every write that can change a decision also moves ``version`` on,
so that what was decided under an earlier version is decided again (``generation.Epoch``)."""
from __future__ import annotations

import collections
import threading
from typing import Callable, Optional

import torch

from .. import backends, timing
from ..checks import CheckKey, CheckResult
from ..reasons import TRITON_RETIRE_AFTER, Fault
from ..timing import BucketKey, Decision


class Knowledge:
    def __init__(self, *, store=None, clock: timing.Clock = timing.event_clock,
                 finder: backends.Finder = backends.Finder(), step_clock: Optional[timing.StepClock] = None):
        self.lock = threading.RLock()
        self.clock, self.finder, self.store = clock, finder, store
        self.step_clock = timing.StepClock() if step_clock is None else step_clock
        self.resolutions: dict[tuple[str, str], backends.Resolution] = {}
        self.library_versions: dict[str, Optional[str]] = {}  # module -> its distribution's version (None: none)
        self.checks: dict[CheckKey, CheckResult] = {}
        self.decisions: dict[BucketKey, Decision] = {}
        self.step_verdicts: dict[tuple, timing.StepVerdict] = {}  # (StepShape, Epoch) -> verdict (step_trial.py)
        self.step_trials: dict = {}  # StepShape -> its trial under way (generation.StepTrial), in the epoch it names
        self.retired: dict[str, str] = {}  # device -> why
        self.triton_streak: collections.Counter = collections.Counter()  # device -> Triton faults in a row
        self.version = 0  # writes that can change a decision, so far (read without the lock: one int)

    # -- kernels --------------------------------------------------------------------------------

    def backend(self, name: str) -> Optional[backends.Backend]:
        return self.finder.kernels.get(name)

    def is_exact(self, name: str) -> bool:
        """Whether the kernel called ``name`` is exact (torch's SDPA backends)."""
        backend = self.backend(name)
        return backend is not None and backend.exact

    def names(self) -> list[str]:
        """Every kernel choice the pack knows: ``auto``, ``exact`` and each kernel by name."""
        # (a sparse kernel is no kernel choice: the sparse input asks for it, and its gate comes with it)
        return [backends.AUTO_CHOICE, backends.EXACT_CHOICE,
                *(name for name, backend in self.finder.kernels.items() if not backend.sparse)]

    def usable(self, devices: list[torch.device]) -> list[str]:
        """``auto``, ``exact`` where an exact kernel binds, and every kernel bound on one of ``devices``."""
        return [backends.AUTO_CHOICE] + [n for n in self.names()[1:] if any(self.kernel(n, d).bound for d in devices)]

    def library_version(self, module: str) -> Optional[str]:
        """The installed version of the library ``module`` is of, found once (Status asks on every render)."""
        if module not in self.library_versions:
            with self.lock:
                self.library_versions[module] = self.finder.versions(module)
        return self.library_versions[module]

    def kernel(self, choice: str, device: torch.device | str) -> backends.Resolution:
        """The candidates ``choice`` binds on ``device`` (found once, then remembered), or why none does."""
        key = (choice, str(device))
        found = self.resolutions.get(key)
        if found is None:
            with self.lock:
                found = self.resolutions.setdefault(key, self.finder.find(choice, torch.device(device)))
        return found

    # -- first-call checks ----------------------------------------------------------------------

    def verdict(self, key: CheckKey) -> Optional[CheckResult]:
        return self.checks.get(key)

    def record_verdict(self, result: CheckResult) -> None:
        with self.lock:
            self.checks[result.key] = result
            self.version += 1

    def switch_off(self, key: CheckKey) -> None:
        """A kernel that returned NaN/inf after passing its check: its calls of that kind keep ComfyUI's attention."""
        self.record_verdict(CheckResult(key, False))

    # -- measured routing -----------------------------------------------------------------------

    def decision(self, key: BucketKey) -> Optional[Decision]:
        return self.decisions.get(key)

    def record_decision(self, decision: Decision) -> Decision:
        """Keeps the bucket's first decision (two threads may time one bucket at once); returns the one kept."""
        with self.lock:
            self.version += 1
            return self.decisions.setdefault(decision.key, decision)

    def measure(self, kernels: dict, run_comfy: Callable, device: torch.device) -> tuple[float, dict]:
        """Decides a bucket for each candidate of ``kernels`` (bucket key -> (a call of it, its version)):
        the decision earlier sessions agreed on, else timed now, the rest together in one timing. Returns
        the ms spent timing and the errors of the kernels that raised while timed (they lose the bucket)."""
        to_time = {}
        for key, (run, version) in kernels.items():
            saved = self._saved(key, version)
            if saved is None:
                to_time[key] = run
            else:
                self.record_decision(Decision(key, saved["kernel_ms"], saved["comfy_ms"], True,
                                              saved.get("host_extra_ms", 0.0)))
        if not to_time:
            return 0.0, {}
        timed = timing.time_arms(self.clock, to_time, run_comfy, device)
        for key in to_time:
            decision = self.record_decision(Decision(key, timed.kernel_ms[key], timed.comfy_ms,
                                                     host_extra_ms=timed.host_extra_ms[key]))
            if self.store is not None and key not in timed.errors:
                self.store.offer(*self._where(key, kernels[key][1]), decision.use_kernel, decision.kernel_ms,
                                 decision.comfy_ms, decision.host_extra_ms)
        return timed.spent_ms, timed.errors

    def _where(self, key: BucketKey, version: str) -> tuple[str, str]:
        """Where the routing store keeps the bucket's decision: the setup's fingerprint and the bucket."""
        return timing.fingerprint(key.device, version), key.with_kernel()

    def _saved(self, key: BucketKey, version: str) -> Optional[dict]:
        if self.store is None:
            return None
        return self.store.agreed(*self._where(key, version))

    # -- whole steps ----------------------------------------------------------------------------

    def step_verdict(self, shape, epoch) -> Optional[timing.StepVerdict]:
        """The verdict on evaluations of ``shape`` (step_trial.StepShape) in ``epoch`` (generation.Epoch): it
        holds while nothing its routes were decided on has changed."""
        return self.step_verdicts.get((shape, epoch))

    def record_step_verdict(self, shape, epoch, verdict: timing.StepVerdict) -> None:
        """Kept for the session; the trial that made it ends. (No ``version`` move: the calls' decisions are
        the same.)"""
        with self.lock:
            self.step_verdicts[shape, epoch] = verdict
            self.step_trials.pop(shape, None)

    def step_trial(self, shape, epoch):
        """The trial under way for evaluations of ``shape`` in ``epoch``, from this generation or one before
        (a short generation leaves its samples to the next), or None."""
        trial = self.step_trials.get(shape)
        return trial if trial is not None and trial.epoch == epoch else None

    def keep_step_trial(self, trial) -> None:
        """``trial`` is the one under way for its shape (one of an earlier epoch is dropped)."""
        with self.lock:
            self.step_trials[trial.shape] = trial

    def end_step_trial(self, shape) -> None:
        with self.lock:
            self.step_trials.pop(shape, None)

    # -- devices --------------------------------------------------------------------------------

    def retired_why(self, device: str) -> Optional[str]:
        return self.retired.get(device)

    def note_fault(self, device: str, fault: Optional[Fault]) -> bool:
        """Counts Triton faults in a row (anything else ends the row); True when one retires the device.
        Every kernel call ends a row: where none is open, that is read without the lock."""
        if fault is not Fault.TRITON and not self.triton_streak.get(device):
            return False
        with self.lock:
            self.triton_streak[device] = self.triton_streak[device] + 1 if fault is Fault.TRITON else 0
            if device not in self.retired and self.triton_streak[device] >= TRITON_RETIRE_AFTER:
                self.retired[device] = f"{self.triton_streak[device]} Triton errors in a row"
                self.version += 1
                return True
        return False

    def snapshot(self) -> dict[str, dict]:
        """Per device: why it is retired (or None), its checks' results, its routing decisions and its step
        verdicts (frozen records, read without the lock after this)."""
        with self.lock:
            steps = {}  # device -> [(step shape, verdict)]
            for (shape, _epoch), verdict in self.step_verdicts.items():
                steps.setdefault(str(shape.device), []).append((shape, verdict))
            devices = sorted({*self.retired, *(k.device for k in self.checks), *(k.device for k in self.decisions),
                              *steps})
            return {device: {
                "retired": self.retired.get(device),
                "checks": [result for result in self.checks.values() if result.key.device == device],
                "decisions": [d for d in self.decisions.values() if d.key.device == device],
                "steps": steps.get(device, [])} for device in devices}
