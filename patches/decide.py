"""The one decision, pure: which of a call's candidates may run it, which one does, and if none, why the
call keeps ComfyUI's own attention. It reads the call's facts, the candidates' declarations, the
settings, what the pack knows about the machine and what the generation knows, and writes nothing; the
eager override and the compiled path's op both ask it through the router.

The refusals come in one order, cheapest first, each with its typed reason: the node's own switch and
floors, the call's arguments, the step window, the block window, the device's record, each candidate's
record and the mask (its test costs a sync), and last measured routing. Where no candidate is left, the
reason is the one the first (the preferred) candidate was refused for."""
from __future__ import annotations

from typing import Callable, Optional, Sequence

import torch

from .backends import Backend, Bound
from .call import Call, MaskKind
from .checks import CheckKey
from .state.generation import Generation
from .state.knowledge import Knowledge
from .state.route import Candidate, Ruling
from .reasons import Reason
from .settings import ROUTING_MEASURED, Settings
from .timing import TIE_MARGIN, BucketKey, Decision, bucket, median

SHORT_KEYS = 512  # a quantised kernel's accuracy depends on the key length too: short keys are checked apart


def check_key(call: Call, backend: Backend) -> CheckKey:
    return CheckKey(call.device_name, call.dtype_name, call.head_dim, backend.name,
                    "short" if call.kv_len < SHORT_KEYS else "long")


def bucket_key(call: Call, backend: Backend) -> BucketKey:
    return BucketKey(call.device_name, backend.name, call.dtype_name, call.head_dim, bucket(call.q_len),
                     bucket(call.kv_len))


def candidate_of(call: Call, bound: Bound) -> Candidate:
    return Candidate(bound, check_key(call, bound.backend), bucket_key(call, bound.backend))


def decide(call: Call, bounds: Sequence[Bound], settings: Settings, knowledge: Knowledge, generation: Generation,
           offered: Sequence[Candidate] = ()) -> Ruling:
    """The ruling on ``call`` among ``offered`` (a tier's candidates, first) and ``bounds`` (the kernel
    choice's, in order of preference)."""
    floor_q, floor_kv = settings.floors()
    if not settings.enabled:
        return Ruling(Reason.DISABLED)
    if call.q_len < floor_q or call.kv_len < floor_kv:
        return Ruling(Reason.TOO_SHORT)
    if not bounds and not offered:
        if call.device.type != "cuda":
            return Ruling(Reason.NOT_CUDA)
        return Ruling(Reason.NO_KERNEL)
    if not call.low_precision:
        return Ruling(Reason.LOW_PRECISION_OPT_OUT)
    candidates = [*offered, *(candidate_of(call, bound) for bound in bounds)]
    candidates, reason = _kept(candidates, lambda c: argument_refusal(call, c.bound.backend))
    if not candidates:
        return Ruling(reason)
    if not generation.in_steps:
        return Ruling(Reason.OUTSIDE_STEPS)
    candidates, reason = _kept(candidates, lambda c: _block_refusal(call, c.bound.backend, settings))
    if not candidates:
        return Ruling(reason)
    if knowledge.retired_why(call.device_name) is not None:
        return Ruling(Reason.DEVICE_RETIRED)
    if call.device_name in generation.oom:
        return Ruling(Reason.OOM_EARLIER)
    eligible, reason = _kept(candidates, lambda c: _record_refusal(call, c, knowledge))
    if not eligible:
        return Ruling(reason)
    eligible = tuple(eligible)
    if settings.routing != ROUTING_MEASURED:
        return Ruling(None, eligible[0], eligible)
    decisions = [knowledge.decision(candidate.bucket) for candidate in eligible]
    if any(decision is None for decision in decisions):
        return Ruling(None, None, eligible)
    winner = fastest(eligible, decisions, generation.host_bound)
    if winner is None:
        return Ruling(Reason.MEASURED_SLOWER, None, eligible)
    return Ruling(None, winner, eligible)


def fastest(eligible: Sequence[Candidate], decisions: Sequence[Optional[Decision]],
            host_bound: bool) -> Optional[Candidate]:
    """The candidate that serves a shape bucket (``serving`` over their decisions), or None where ComfyUI's
    attention keeps it."""
    return serving([(candidate, candidate.bound.backend.exact, decision)
                    for candidate, decision in zip(eligible, decisions)], host_bound)


def serving(entries: list[tuple], host_bound: bool):
    """The first item of the entry that serves a shape bucket, from ``(item, exact, decision)`` entries in
    order of preference: the fastest kernel whose decision says it beats ComfyUI's attention in a step of
    this pace (earlier entries win exact ties). A quantised winner must also beat the fastest exact kernel
    by ``TIE_MARGIN``: a near tie goes to the exact kernel, as a near tie with ComfyUI's goes to ComfyUI's.
    None where ComfyUI's attention keeps the bucket."""
    timed = [(decision.kernel_ms, item, exact) for item, exact, decision in entries
             if decision is not None and decision.use_kernel_when(host_bound)]
    if not timed:
        return None
    winner_ms, winner, winner_exact = min(timed, key=lambda entry: entry[0])
    exact = [entry for entry in timed if entry[2]]
    if winner_exact or not exact:
        return winner
    exact_ms, best_exact, _ = min(exact, key=lambda entry: entry[0])
    if winner_ms * (1.0 + TIE_MARGIN) >= exact_ms:
        return best_exact
    return winner


def bucket_verdicts(decisions: list[Decision], is_exact: Callable[[str], bool]) -> list[dict]:
    """Per shape bucket of ``decisions`` (their keys less the kernel), what serves it where the GPU sets
    the step's pace: the winner (a kernel's name, or "ComfyUI"), its margin (ComfyUI's ms over the
    winner's), every candidate's ms (None: it failed while timed), ComfyUI's, and whether every decision
    came from the routing store (agreed on by earlier sessions)."""
    shapes: dict[BucketKey, list] = {}
    for decision in decisions:
        shapes.setdefault(decision.key._replace(kernel=""), []).append(decision)
    verdicts = []
    for shape, group in shapes.items():
        winner = serving([(d, is_exact(d.key.kernel), d) for d in group], host_bound=False)
        verdicts.append({
            "bucket": shape.describe(),
            "winner": winner.key.kernel if winner is not None else "ComfyUI",
            "margin": winner.margin if winner is not None else None,
            "candidates": {d.key.kernel: d.kernel_ms for d in group},
            "comfy_ms": winner.comfy_ms if winner is not None else median([d.comfy_ms for d in group]),
            "saved": all(d.saved for d in group)})
    return verdicts


def _kept(candidates: Sequence[Candidate], refusal: Callable[[Candidate], Optional[Reason]]):
    """(the candidates ``refusal`` lets through, the first one's reason where it refused it, else the
    first reason given)."""
    kept, first = [], None
    for candidate in candidates:
        reason = refusal(candidate)
        if reason is None:
            kept.append(candidate)
        elif first is None:
            first = reason
    return kept, first


def argument_refusal(call: Call, backend: Backend) -> Optional[Reason]:
    """Why ``backend`` cannot take the call's arguments as they are, or None."""
    if call.dtype not in backend.dtypes:
        return Reason.DTYPE
    if call.unusable_layout or not (call.layout in backend.layouts or backend.transposed_views):
        return Reason.LAYOUT
    if call.head_dim not in backend.head_dims:
        return Reason.HEAD_DIM
    if call.scale is not None and not backend.custom_scale and abs(call.scale - call.head_dim ** -0.5) > 1e-6:
        return Reason.SCALE
    if call.kv_heads != call.heads and not backend.grouped_query:
        return Reason.GROUPED_QUERY
    return None


def _block_refusal(call: Call, backend: Backend, settings: Settings) -> Optional[Reason]:
    """OUTSIDE_BLOCKS where the call's block is among those kept at each end of its block type (the
    user's number, else the kernel's own), else None."""
    if call.block is None:
        return None
    first = settings.first_blocks if settings.first_blocks >= 0 else backend.edge_blocks[0]
    last = settings.last_blocks if settings.last_blocks >= 0 else backend.edge_blocks[1]
    if call.block.index < first or call.block.index >= call.block.count - last:
        return Reason.OUTSIDE_BLOCKS
    return None


def _record_refusal(call: Call, candidate: Candidate, knowledge: Knowledge) -> Optional[Reason]:
    """Why the candidate's record (its first-call check) or the mask rules it out, or None."""
    check = knowledge.verdict(candidate.check_key)
    if check is not None and not check.passed:
        return Reason.CHECK_FAILED
    backend = candidate.bound.backend
    if call.mask is not None and call.mask_kind is MaskKind.MASKS and not (
            backend.masks and (call.mask.dtype == torch.bool or call.mask.is_floating_point())):  # as SDPA takes them
        return Reason.MASK  # (a no-op mask is dropped; a key-padding mask's keys are sliced off)
    return None
