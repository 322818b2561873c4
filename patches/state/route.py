"""What a call's route is made of: the candidates a call may run on (``Candidate``, with the rule its first
call is judged by), what ``decide`` rules (``Ruling``), and the route the router counts and remembers for
the run (``Route``)."""
from __future__ import annotations

from typing import NamedTuple, Optional

import torch

from ..backends import Bound
from ..checks import CheckKey, CheckResult, judge
from .ledger import COMFY_ROUTE, Tally
from ..reasons import Reason
from ..timing import BucketKey


class CheckRule:
    """How a candidate's first call of a kind is judged against ComfyUI's result: within exact rounding
    for an exact kernel, within the quantised bound for the rest, and only where first_call_check is on
    (``always``: whatever it says). A tier brings its own rule (the sparse gate)."""
    name = "Attention kernel first-call check"
    always = False
    fallback = "these calls keep ComfyUI's attention for this session"

    def judge(self, key: CheckKey, result: torch.Tensor, reference: torch.Tensor, exact: bool) -> CheckResult:
        return judge(key, result, reference, exact=exact)


FIRST_CALL_CHECK = CheckRule()


class Candidate(NamedTuple):
    """A kernel a call may run on, with the keys its first-call check and its measured decision are kept
    under, the rule its check follows, and the tier that offered it ("": the kernel choice's own)."""
    bound: Bound
    check_key: CheckKey
    bucket: BucketKey
    rule: CheckRule = FIRST_CALL_CHECK
    tier: str = ""

    @property
    def name(self) -> str:
        return self.bound.backend.name


class Route(NamedTuple):
    """Where a call goes, as its device's Tally counts it on arrival (``count_into``; a call a kernel
    takes is counted on the kernel once it ran: ``Router.run``), and what the router needs to send a
    call like it there again without deciding it anew."""
    device: str
    reason: Optional[Reason]                  # why it keeps ComfyUI's attention; None: a kernel runs it
    comfy_bucket: Optional[BucketKey] = None  # the shape bucket measured for ComfyUI's attention (the routing
    #                                           table counts its calls), or None
    unplaced: bool = False                    # a block window is set but the model gives the call no block
    kernel: Optional[Candidate] = None        # the kernel that runs it (None: declined, or to be timed)
    eligible: tuple[Candidate, ...] = ()      # those it may run on (a route to be timed times them)
    tier_declined: Optional[Reason] = None    # why a tier (sparse) did not offer its candidate, where one asked

    def count_into(self, tally: Tally) -> None:
        if self.tier_declined is not None:
            tally.tier_declined[self.tier_declined] += 1
        if self.unplaced:
            tally.no_block_positions += 1
        if self.reason is not None:
            tally.declined[self.reason] += 1
        if self.comfy_bucket is not None:
            tally.routes[self.comfy_bucket, COMFY_ROUTE] += 1


class Ruling(NamedTuple):
    """What ``decide`` says of a call. ``reason``: why it keeps ComfyUI's attention (None: a kernel runs
    it). ``kernel``: the candidate that runs it; None with no reason means the candidates in ``eligible``
    have yet to be checked or timed on this shape (the router does that on this call)."""
    reason: Optional[Reason]
    kernel: Optional[Candidate] = None
    eligible: tuple[Candidate, ...] = ()
