"""The one decision: may this call run on the kernel, and if not, why not.

Pure: it reads the call's facts, the backend's declaration, the settings and what the run knows
(``State``) and writes nothing. The eager override and the compiled path's op both ask it.
"""
from __future__ import annotations

from typing import Optional, Protocol

from .backends import Backend
from .call import Call, MaskKind
from .reasons import Reason
from .settings import ROUTING_MEASURED, Settings
from .trials import BucketKey, CheckKey, CheckResult, Decision, bucket


class State(Protocol):
    retired: dict[str, str]                  # device -> why it was retired (the session)
    checks: dict[CheckKey, CheckResult]      # (the session)
    decisions: dict[BucketKey, Decision]     # measured routing (the session)
    oom: set[str]                            # devices out of memory in this generation
    in_steps: bool                           # this step lies inside the step window


def check_key(call: Call, backend: Backend) -> CheckKey:
    """Accuracy depends on the key length too (1.0.6 is wrong at 77 keys, right at 4k): short keys
    are checked apart from long ones."""
    return CheckKey(str(call.device), str(call.q.dtype)[6:], call.head_dim, backend.name,
                    "short" if call.kv_len < SHORT_KEYS else "long")


def bucket_key(call: Call, backend: Backend) -> BucketKey:
    return BucketKey(str(call.device), backend.name, str(call.q.dtype)[6:], call.head_dim, bucket(call.q_len),
                     bucket(call.kv_len))


SHORT_KEYS = 512


def edge_blocks(settings: Settings, backend: Backend) -> tuple[int, int]:
    """Blocks kept on SDPA at the start and the end of each block type."""
    first, last = settings.first_blocks, settings.last_blocks
    return (backend.edge_blocks[0] if first < 0 else first, backend.edge_blocks[1] if last < 0 else last)


def decide(call: Call, backend: Optional[Backend], settings: Settings, state: State) -> Optional[Reason]:
    """None: run the kernel. Otherwise the Reason the call stays on SDPA: what the call's own
    arguments rule out first (cheapest first), then the windows, the device's and the kernel's
    record, the mask (its test costs a sync), and measured routing."""
    floor_q, floor_kv = settings.floors()
    if not settings.enabled:
        return Reason.DISABLED
    if call.q_len < floor_q or call.kv_len < floor_kv:
        return Reason.TOO_SHORT
    if backend is None:
        return Reason.NOT_CUDA if call.device.type != "cuda" else Reason.NO_KERNEL
    if not call.low_precision:
        return Reason.LOW_PRECISION_OPT_OUT
    if call.dtype not in backend.dtypes:
        return Reason.DTYPE
    if call.layout_problem() or not (call.layout in backend.layouts or backend.transposed_views):
        return Reason.LAYOUT
    if call.head_dim not in backend.head_dims:
        return Reason.HEAD_DIM
    if call.scale is not None and not backend.custom_scale and abs(call.scale - call.head_dim ** -0.5) > 1e-6:
        return Reason.SCALE
    if not state.in_steps:
        return Reason.OUTSIDE_STEPS
    if call.block is not None:
        first, last = edge_blocks(settings, backend)
        if call.block[1] < first or call.block[1] >= call.block[2] - last:
            return Reason.OUTSIDE_BLOCKS
    device = str(call.device)
    if device in state.retired:
        return Reason.DEVICE_RETIRED
    if device in state.oom:
        return Reason.OOM_EARLIER
    check = state.checks.get(check_key(call, backend))
    if check is not None and not check.passed:
        return Reason.CHECK_FAILED
    if call.mask is not None and call.mask_kind is MaskKind.MASKS and not (backend.masks and call.sdpa_style_mask):
        return Reason.MASK
    if settings.routing == ROUTING_MEASURED:
        measured = state.decisions.get(bucket_key(call, backend))
        if measured is not None and not measured.use_sage:
            return Reason.MEASURED_SLOWER
    return None
