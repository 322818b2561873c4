"""The one decision: may this call run on the kernel, and if not, why not.

Pure: it reads the call's facts, the backend's declaration, the settings and what the run knows
(``state``: devices retired or out of memory, first-call checks, routing decisions) and writes
nothing. The eager override and the compiled path's op both ask it, at run time.
"""
from __future__ import annotations

from typing import Optional, Protocol

from .backends import Backend
from .call import Call, MaskKind
from .reasons import Reason
from .settings import ROUTING_MEASURED, Settings
from .trials import BucketKey, CheckKey, CheckResult, Decision, bucket


class State(Protocol):
    def retired(self, device: str) -> Optional[str]: ...
    def out_of_memory(self, device: str) -> bool: ...
    def check(self, key: CheckKey) -> Optional[CheckResult]: ...
    def decision(self, key: BucketKey) -> Optional[Decision]: ...


def check_key(call: Call, backend: Backend) -> CheckKey:
    return CheckKey(str(call.device), str(call.q.dtype).removeprefix("torch."), call.head_dim, backend.name)


def bucket_key(call: Call, backend: Backend) -> BucketKey:
    return BucketKey(str(call.device), backend.name, str(call.q.dtype).removeprefix("torch."), call.head_dim,
                     bucket(call.q_len), bucket(call.kv_len))


def decide(call: Call, backend: Optional[Backend], settings: Settings, state: State) -> Optional[Reason]:
    """None: run the kernel. Otherwise the Reason the call stays on SDPA. What the call's own
    arguments rule out comes first (cheapest first), then the device's and the kernel's record,
    then the mask (its test costs a sync), then measured routing."""
    if not settings.enabled:
        return Reason.DISABLED
    if call.q_len < settings.min_seq_len or call.kv_len < settings.min_seq_len:
        return Reason.TOO_SHORT
    if backend is None:
        return Reason.NOT_CUDA if call.device.type != "cuda" else Reason.NO_KERNEL
    if not call.low_precision:
        return Reason.LOW_PRECISION_OPT_OUT
    if call.dtype not in backend.dtypes:
        return Reason.DTYPE
    if call.layout not in backend.layouts or call.layout_problem() is not None:
        return Reason.LAYOUT
    if call.head_dim not in backend.head_dims:
        return Reason.HEAD_DIM
    if call.scale is not None and not backend.custom_scale and abs(call.scale - call.head_dim ** -0.5) > 1e-6:
        return Reason.SCALE
    device = str(call.device)
    if state.retired(device):
        return Reason.DEVICE_RETIRED
    if state.out_of_memory(device):
        return Reason.OOM_EARLIER
    check = state.check(check_key(call, backend))
    if check is not None and not check.passed:
        return Reason.CHECK_FAILED
    if call.mask is not None and call.mask_kind is MaskKind.MASKS and not (backend.masks and call.sdpa_style_mask):
        return Reason.MASK
    if settings.routing == ROUTING_MEASURED:
        measured = state.decision(bucket_key(call, backend))
        if measured is not None and not measured.use_sage:
            return Reason.MEASURED_SLOWER
    return None
