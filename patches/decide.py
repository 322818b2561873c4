"""The one decision, pure: which of the kernel choice's candidates may run this call, which one does,
and if none, why the call keeps ComfyUI's own attention. It reads the call's facts, the candidates'
declarations, the settings, what the pack knows about the machine and what the generation knows, and
writes nothing; the eager override and the compiled path's op both ask it."""
from __future__ import annotations

from typing import Callable, NamedTuple, Optional, Sequence

import torch

from .backends import Backend, Bound
from .backends.kitchen import SOL_ATTN
from .call import Call, MaskKind
from .checks import CheckKey
from .generation import Generation
from .knowledge import Knowledge
from .reasons import Reason
from .settings import ROUTING_MEASURED, SPARSE_SOL, Settings
from . import timing
from .timing import BucketKey, Decision, bucket

SHORT_KEYS = 512  # accuracy depends on the key length too (1.0.6: wrong at 77 keys, right at 4k)
SPARSE_KERNELS = {SPARSE_SOL: SOL_ATTN}  # the node's sparse choice -> the kernel that serves it


class Candidate(NamedTuple):
    """A kernel a call may run on, with the keys its first-call check and its measured decision are
    kept under (built once, by ``decide``)."""
    bound: Bound
    check: CheckKey
    bucket: BucketKey

    @property
    def name(self) -> str:
        return self.bound.backend.name


class Ruling(NamedTuple):
    """What ``decide`` says of a call. ``reason``: why it keeps ComfyUI's attention (None: a kernel runs
    it). ``kernel``: the candidate that runs it; None with no reason means the candidates in ``eligible``
    have yet to be checked or timed on this shape (the router does that on this call)."""
    reason: Optional[Reason]
    kernel: Optional[Candidate] = None
    eligible: tuple[Candidate, ...] = ()


def check_key(call: Call, backend: Backend) -> CheckKey:
    return CheckKey(call.device_name, str(call.q.dtype)[6:], call.head_dim, backend.name,
                    "short" if call.kv_len < SHORT_KEYS else "long")


def bucket_key(call: Call, backend: Backend) -> BucketKey:
    return BucketKey(call.device_name, backend.name, str(call.q.dtype)[6:], call.head_dim, bucket(call.q_len),
                     bucket(call.kv_len))


def sparse_name(backend: Backend, settings: Settings) -> str:
    """A sparse kernel at the density asked for: how its gates and timings are kept apart."""
    return f"{backend.name} {settings.sparse_density()}"


def candidate_of(call: Call, bound: Bound, settings: Settings) -> Candidate:
    """The candidate ``bound`` is for ``call``. A sparse kernel's gate is kept per kind of call: device,
    dtype, head size, density, block type and key-length bucket (how far sparse lands from dense
    depends on the layer and the length); its timing per density."""
    backend = bound.backend
    if not backend.sparse:
        return Candidate(bound, check_key(call, backend), bucket_key(call, backend))
    name = sparse_name(backend, settings)
    block_type = call.block[0] if call.block is not None else ""
    kind = f"{block_type} {bucket(call.kv_len)}".strip()
    return Candidate(bound, CheckKey(call.device_name, str(call.q.dtype)[6:], call.head_dim, name, kind),
                     bucket_key(call, backend)._replace(kernel=name))


def sparse_refusal(call: Call, bound: Optional[Bound], settings: Settings, knowledge: Knowledge,
                   generation: Generation, text_at: str) -> Optional[Reason]:
    """Why the sparse kernel (``bound``: the one the node's sparse choice binds on the call's device, or
    None) does not take ``call``, which then runs dense; None where it may (a candidate before the dense
    ones). It takes the long self-attention calls of a family that says where its text tokens sit
    (``text_at``), from the sparse window's start, past each block type's first block, unmasked, in a
    dtype and head size it takes, of a kind whose gate has not failed."""
    if bound is None:
        return Reason.SPARSE_UNAVAILABLE
    if not text_at:
        return Reason.SPARSE_UNDECLARED
    if not generation.in_sparse_steps:
        return Reason.SPARSE_BEFORE_START
    if call.q_len != call.kv_len:
        return Reason.SPARSE_CROSS
    if call.q_len < settings.sparse_min_tokens:
        return Reason.SPARSE_SHORT
    argument_reason = _argument_refusal(call, bound.backend)
    if argument_reason is not None:
        return argument_reason
    if call.mask is not None:  # (sol_attn honours a bias only in its sink blocks)
        return Reason.MASK
    if call.block is not None and call.block[1] == 0:
        return Reason.SPARSE_FIRST_BLOCK
    gate = knowledge.check(candidate_of(call, bound, settings).check)
    if gate is not None and not gate.passed:
        return Reason.SPARSE_GATE
    return None


def decide(call: Call, candidates: Sequence[Bound], settings: Settings, knowledge: Knowledge,
           generation: Generation) -> Ruling:
    """The ruling on ``call`` among ``candidates`` (the kernel choice's, in order of preference).
    ``knowledge`` says what the pack learned about the machine (retired devices, checks, measured
    decisions), ``generation`` what this run knows (``oom``, ``in_steps``, ``host_bound``). The call's own
    arguments are ruled on first (cheapest first), then the windows, the device's and each candidate's
    record, the mask (its test costs a sync), and measured routing. Where no candidate is left, the
    reason is the one the first candidate (the preferred) was refused for."""
    floor_q, floor_kv = settings.floors()
    if not settings.enabled:
        return Ruling(Reason.DISABLED)
    if call.q_len < floor_q or call.kv_len < floor_kv:
        return Ruling(Reason.TOO_SHORT)
    if not candidates:
        if call.device.type != "cuda":
            return Ruling(Reason.NOT_CUDA)
        return Ruling(Reason.NO_KERNEL)
    if not call.low_precision:
        return Ruling(Reason.LOW_PRECISION_OPT_OUT)
    candidates, reason = _kept(candidates, lambda bound: _argument_refusal(call, bound.backend))
    if not candidates:
        return Ruling(reason)
    if not generation.in_steps:
        return Ruling(Reason.OUTSIDE_STEPS)
    candidates, reason = _kept(candidates, lambda bound: _block_refusal(call, bound.backend, settings))
    if not candidates:
        return Ruling(reason)
    device = call.device_name
    if knowledge.retired_why(device) is not None:
        return Ruling(Reason.DEVICE_RETIRED)
    if device in generation.oom:
        return Ruling(Reason.OOM_EARLIER)
    eligible, reason = [], None
    for bound in candidates:
        candidate = candidate_of(call, bound, settings)
        refused = _record_refusal(call, candidate, knowledge)
        if refused is None:
            eligible.append(candidate)
        elif reason is None:
            reason = refused
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
    """The candidate that serves a shape bucket (``timing.fastest`` over their decisions), or None where
    ComfyUI's attention keeps it."""
    return timing.fastest([(candidate, candidate.bound.backend.exact, decision)
                           for candidate, decision in zip(eligible, decisions)], host_bound)


def _kept(candidates: Sequence[Bound], refusal: Callable[[Bound], Optional[Reason]]):
    """(the candidates ``refusal`` lets through, the first one's reason where it refused it, else the
    first reason given)."""
    kept, first = [], None
    for bound in candidates:
        reason = refusal(bound)
        if reason is None:
            kept.append(bound)
        elif first is None:
            first = reason
    return kept, first


def _argument_refusal(call: Call, backend: Backend) -> Optional[Reason]:
    """Why ``backend`` cannot take the call's arguments as they are, or None."""
    if call.dtype not in backend.dtypes:
        return Reason.DTYPE
    if call.layout_problem() or not (call.layout in backend.layouts or backend.transposed_views):
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
    if call.block[1] < first or call.block[1] >= call.block[2] - last:
        return Reason.OUTSIDE_BLOCKS
    return None


def _record_refusal(call: Call, candidate: Candidate, knowledge: Knowledge) -> Optional[Reason]:
    """Why the candidate's record (its first-call check) or the mask rules it out, or None."""
    check = knowledge.check(candidate.check)
    if check is not None and not check.passed:
        return Reason.CHECK_FAILED
    backend = candidate.bound.backend
    if call.mask is not None and call.mask_kind is MaskKind.MASKS and not (
            backend.masks and (call.mask.dtype == torch.bool or call.mask.is_floating_point())):  # as SDPA takes them
        return Reason.MASK  # (a no-op mask is dropped; a key-padding mask's keys are sliced off)
    return None
