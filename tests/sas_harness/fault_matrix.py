"""Faults injected through the kernel boundary, for every family: each generation must complete,
its output within SDPA tolerance of the fault-free run, its counters saying what happened.
Shared by tests/test_fault_matrix.py and bench/fault_matrix.py (which prints them)."""
from __future__ import annotations

import dataclasses
import logging
from typing import Callable

import torch
import triton.compiler.errors

from sage_attention_scope.nodes.status import payload
from sage_attention_scope.patches import Fault, Reason, Session, Settings, apply_scope, families
from sage_attention_scope.patches.reasons import TRITON_RETIRE_AFTER
from .doubles import RecordingKernel, make_kernel, nan_after_first_call, non_finite, raising, registered, \
    wrong_shape
from .families import SAGE, Case, routing_table, sample_case

STEPS = 2
TOLERANCE = dict(rtol=1e-3, atol=1e-3)  # the routed fault-free run against SDPA passes this too
PACK_LOGGER = "sage_attention_scope"


@dataclasses.dataclass(frozen=True)
class FaultKind:
    name: str
    behave: Callable[[], Callable]
    expected: Callable[[int], dict]  # eligible calls in the generation -> routing table + faults


def _table(sdpa: dict, faults: dict, sage: int = 0) -> dict:
    table = {**sdpa, "faults": faults}
    if sage:
        table[SAGE] = sage
    return table


FAULTS = [
    FaultKind("out of memory", lambda: raising(lambda: torch.OutOfMemoryError("CUDA out of memory. Tried to "
                                                                               "allocate 2.00 GiB")),
              lambda n: _table({Reason.KERNEL_FAULT: 1, **({Reason.OOM_EARLIER: n - 1} if n > 1 else {})},
                               {Fault.OOM: 1})),
    FaultKind("Triton compile error", lambda: raising(lambda: triton.compiler.errors.CompilationError(
        "def _attn_fwd(...)", None, "ptxas fatal: unresolved extern function")),
              lambda n: _table({Reason.KERNEL_FAULT: min(n, TRITON_RETIRE_AFTER),
                                **({Reason.DEVICE_RETIRED: n - TRITON_RETIRE_AFTER} if n > TRITON_RETIRE_AFTER
                                   else {})}, {Fault.TRITON: min(n, TRITON_RETIRE_AFTER)})),
    FaultKind("Triton cache not writable", lambda: raising(lambda: PermissionError(
        13, "Permission denied", "/root/.triton/cache/3f2a/_attn_fwd.cubin")),
              lambda n: _table({Reason.KERNEL_FAULT: min(n, TRITON_RETIRE_AFTER),
                                **({Reason.DEVICE_RETIRED: n - TRITON_RETIRE_AFTER} if n > TRITON_RETIRE_AFTER
                                   else {})}, {Fault.TRITON: min(n, TRITON_RETIRE_AFTER)})),
    FaultKind("RuntimeError", lambda: raising(lambda: RuntimeError("CUDA error: an illegal memory access")),
              lambda n: _table({Reason.KERNEL_FAULT: n}, {Fault.OTHER: n})),
    FaultKind("non-finite output", lambda: non_finite,
              lambda n: _table({Reason.CHECK_FAILED: n}, {Fault.NON_FINITE: 1})),
    # Every family's step makes two or more eligible calls: the second call of step 1 is the
    # first NaN, read at the end of the step, which then runs again with the key failed (and
    # the discarded pass uncounted), so every call ends on SDPA.
    FaultKind("non-finite after the check", nan_after_first_call,
              lambda n: _table({Reason.CHECK_FAILED: n}, {Fault.NON_FINITE: 1})),
    FaultKind("wrong output shape", lambda: wrong_shape,
              lambda n: _table({Reason.KERNEL_FAULT: n}, {Fault.WRONG_SHAPE: n})),
]


@dataclasses.dataclass
class Outcome:
    family: str
    fault: str
    completed: bool
    within_tolerance: bool
    counters: dict
    expected: dict
    warnings: list[str]

    @property
    def counted_as_expected(self) -> bool:
        return self.counters == self.expected


class _Warnings(logging.Handler):
    def __init__(self):
        super().__init__(logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record):
        self.messages.append(record.getMessage())


def _counters(counts: dict) -> dict:
    table = {k: v for k, v in routing_table(counts).items()}
    table["faults"] = {Fault(k): v for k, v in counts["faults"].items()}
    return table


def run(case: Case, fault: FaultKind, model, reference: torch.Tensor) -> Outcome:
    """One generation of ``case`` with ``fault`` injected, in a session of its own."""
    session = Session(store=None)
    handler = _Warnings()
    logger = logging.getLogger(PACK_LOGGER)
    logger.addHandler(handler)
    completed, within, counters = False, False, {}
    eligible = STEPS * case.per_step[SAGE]
    expected = fault.expected(eligible)
    sdpa_by_structure = {r: STEPS * n for r, n in case.per_step.items() if r != SAGE}
    expected = {**expected, **{r: expected.get(r, 0) + n for r, n in sdpa_by_structure.items()}}
    try:
        with registered(session, make_kernel("fault", RecordingKernel(fault.behave()))):
            scoped = apply_scope(model, Settings(kernel="fault", min_seq_len=case.min_seq_len, routing="always"),
                                 session, families.REGISTRY[case.family])
            out = sample_case(scoped, case, steps=STEPS)
        completed = True
        within = bool(torch.allclose(out, reference, **TOLERANCE)) and bool(torch.isfinite(out).all())
        counters = _counters(payload(session)["devices"][str(model.load_device)]["last_generation"])
    finally:
        logger.removeHandler(handler)
    return Outcome(case.family, fault.name, completed, within, counters, expected, handler.messages)
