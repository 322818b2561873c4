"""The sparse tier: comfy-kitchen's sparse attention offered on the long self-attention calls of a
family that says where its text tokens sit, a candidate before the dense ones. It plugs into the router
through the router's ``tiers``: ``enter_step`` at each model evaluation (the sparse window), and
``offer`` for each call, which returns either the sparse candidate or the reason the call runs dense (the
ledger counts it apart). The sparse candidate carries its own
first-call rule, the gate (``checks.gate``): its first call of each kind is always compared with dense
on the user's own activations, and above the gate that kind runs dense for the session."""
from __future__ import annotations

import logging
from typing import NamedTuple, Optional

from ..backends import Bound
from ..backends.kitchen import SOL_ATTN
from ..call import Call
from ..checks import CheckKey, CheckResult, gate
from ..decide import argument_refusal, bucket_key
from ..state.route import Candidate, CheckRule
from ..state.generation import Generation
from ..reasons import Reason
from ..state.session import Session
from ..settings import SPARSE_SOL, Settings
from ..timing import bucket

log = logging.getLogger(__name__)

KERNELS = {SPARSE_SOL: SOL_ATTN}  # the node's sparse choice -> the kernel that serves it
TIER = "sparse"                   # how the ledger counts the calls this tier's kernel ran


class Offer(NamedTuple):
    """What a tier says of one call: its candidate (put before the dense ones), or why the call runs dense."""
    candidate: Optional[Candidate]
    reason: Optional[Reason]


class GateRule(CheckRule):
    """A sparse kernel's first call of a kind against dense, within the node's ``sparse_gate``: always
    checked, whatever first_call_check says (the gate is what makes sparse safe to use)."""
    name = "Sparse attention gate"
    always = True
    fallback = "these calls run dense for this session"

    def __init__(self, max_rel_l2: float):
        self.max_rel_l2 = max_rel_l2

    def judge(self, key: CheckKey, result, reference, exact: bool) -> CheckResult:
        return gate(key, result, reference, self.max_rel_l2)


def tiers_for(settings: Settings, session: Session, family) -> tuple:
    """The tiers a Scope with ``settings`` offers its model's calls: the sparse tier where it asks for one."""
    if not settings.sparse_on:
        return ()
    text_at = family.text_position() if family is not None else ""
    return (SparseTier(settings, session, text_at),)


class SparseTier:
    """The sparse tier of one scoped model (its settings, its family's text position)."""

    def __init__(self, settings: Settings, session: Session, text_at: str):
        self.settings, self.session, self.text_at = settings, session, text_at
        self.name = f"{KERNELS[settings.sparse]} {settings.sparse_density()}"  # checks and timings per density
        self.rule = GateRule(settings.sparse_gate)

    def enter_step(self, generation: Generation, model_sampling, sigma: float) -> None:
        """Whether the step under way lies inside the sparse window (from ``sparse_start_percent`` on)."""
        generation.in_sparse_steps = sigma <= model_sampling.percent_to_sigma(self.settings.sparse_start_percent)

    def offer(self, call: Call, generation: Generation) -> Offer:
        """The sparse candidate for ``call``, or why the call runs dense (it then goes to the dense routing)."""
        bound = self.kernel(call)
        reason = self.refusal(call, bound, generation)
        if reason is not None:
            return Offer(None, reason)
        candidate = self.candidate(call, bound)
        verdict = self.session.knowledge.verdict(candidate.check_key)
        if verdict is not None and not verdict.passed:
            return Offer(None, Reason.SPARSE_GATE)
        call.text_at, call.text_tokens = self.text_at, generation.text_tokens  # its sink blocks stay exact
        return Offer(candidate, None)

    def kernel(self, call: Call) -> Optional[Bound]:
        """The sparse kernel bound on the call's device, or None (said once a device)."""
        found = self.session.knowledge.kernel(KERNELS[self.settings.sparse], call.device_name)
        if found.bound is None and self.session.ledger.first_time("sparse-unavailable", call.device_name):
            log.warning("Sage Attention Scope: sparse %s asked for, but %s on %s; these calls run dense. "
                        "comfy-kitchen 0.2.40 or newer has sol_attn (pip install -U comfy-kitchen).",
                        self.settings.sparse, found.why, call.device_name)
        return found.bound

    def refusal(self, call: Call, bound: Optional[Bound], generation: Generation) -> Optional[Reason]:
        """Why the sparse kernel does not take ``call``, in order: none here, a family that does not say where
        its text sits, before the sparse window, cross-attention, too short, arguments it cannot take, a mask
        (sol_attn honours a bias only in its sink blocks), the first block of its type; else None."""
        if bound is None:
            return Reason.SPARSE_UNAVAILABLE
        if not self.text_at:
            return Reason.SPARSE_UNDECLARED
        if not generation.in_sparse_steps:
            return Reason.SPARSE_BEFORE_START
        if call.q_len != call.kv_len:
            return Reason.SPARSE_CROSS
        if call.q_len < self.settings.sparse_min_tokens:
            return Reason.SPARSE_SHORT
        reason = argument_refusal(call, bound.backend)
        if reason is not None:
            return reason
        if call.mask is not None:
            return Reason.MASK
        if call.block is not None and call.block.index == 0:
            return Reason.SPARSE_FIRST_BLOCK
        return None

    def candidate(self, call: Call, bound: Bound) -> Candidate:
        """The sparse candidate for ``call``. Its gate is kept per kind of call (device, dtype, head size,
        density, block type, key-length bucket: how far sparse lands from dense depends on the layer and the
        length); its timing per density."""
        block_type = call.block.kind if call.block is not None else ""
        kind = f"{block_type} {bucket(call.kv_len)}".strip()
        check = CheckKey(call.device_name, call.dtype_name, call.head_dim, self.name, kind)
        return Candidate(bound, check, bucket_key(call, bound.backend)._replace(kernel=self.name), self.rule, TIER)
