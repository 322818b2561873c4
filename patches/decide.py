"""The one decision, pure: may this call run on the kernel, and if not, why not. It reads the call's
facts, the backend's declaration, the settings, what the pack knows about the machine and what the
generation knows, and writes nothing; the eager override and the compiled path's op both ask it."""
from __future__ import annotations

from typing import Optional

import torch

from .backends import Backend
from .call import Call, MaskKind
from .checks import CheckKey
from .generation import Generation
from .knowledge import Knowledge
from .reasons import Reason
from .settings import ROUTING_MEASURED, Settings
from .timing import BucketKey, bucket

SHORT_KEYS = 512  # accuracy depends on the key length too (1.0.6: wrong at 77 keys, right at 4k)


def check_key(call: Call, backend: Backend) -> CheckKey:
    return CheckKey(call.device_name, str(call.q.dtype)[6:], call.head_dim, backend.name,
                    "short" if call.kv_len < SHORT_KEYS else "long")


def bucket_key(call: Call, backend: Backend) -> BucketKey:
    return BucketKey(call.device_name, backend.name, str(call.q.dtype)[6:], call.head_dim, bucket(call.q_len),
                     bucket(call.kv_len))


def decide(call: Call, backend: Optional[Backend], settings: Settings, knowledge: Knowledge,
           generation: Generation) -> Optional[Reason]:
    """None: run the kernel; else the Reason the call stays on SDPA. ``knowledge`` says what the pack
    learned about the machine (retired devices, checks, measured decisions), ``generation`` what this
    run knows (``oom``, ``in_steps``, ``host_bound``). The call's own arguments are ruled on first (cheapest first),
    then the windows, the device's and kernel's record, the mask (its test costs a sync), and measured
    routing."""
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
    if not generation.in_steps:
        return Reason.OUTSIDE_STEPS
    if call.block is not None:  # blocks kept at each end of the block type: the user's, else the kernel's
        first, last = (own if own >= 0 else default for own, default in
                       zip((settings.first_blocks, settings.last_blocks), backend.edge_blocks))
        if call.block[1] < first or call.block[1] >= call.block[2] - last:
            return Reason.OUTSIDE_BLOCKS
    device = call.device_name
    if knowledge.retired_why(device) is not None:
        return Reason.DEVICE_RETIRED
    if device in generation.oom:
        return Reason.OOM_EARLIER
    check = knowledge.check(check_key(call, backend))
    if check is not None and not check.passed:
        return Reason.CHECK_FAILED
    if call.mask is not None and call.mask_kind is MaskKind.MASKS and not (
            backend.masks and (call.mask.dtype == torch.bool or call.mask.is_floating_point())):  # as SDPA takes them
        return Reason.MASK  # (a no-op mask is dropped; a key-padding mask's keys are sliced off)
    if settings.routing == ROUTING_MEASURED:
        measured = knowledge.decision(bucket_key(call, backend))
        if measured is not None and not measured.use_sage_when(generation.host_bound):
            return Reason.MEASURED_SLOWER
    return None
