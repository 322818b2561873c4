"""What a Scope node asks for, validated once, frozen: the one place its defaults are written (the
node's widgets, the engine and scripts/write_docs.py read them here)."""
from __future__ import annotations

import dataclasses

KERNEL_AUTO = "auto"
ROUTING_MEASURED, ROUTING_ALWAYS = "measured", "always"
ROUTINGS = (ROUTING_MEASURED, ROUTING_ALWAYS)
MAX_SEQ_LEN = 1 << 22
# min_seq_len 0 (auto): calls with a query under 1024 tokens or a key under 512 stay on SDPA on every
# GPU: SDPA's whole call there (H200, d128: 0.05 ms at 1024x1024, 0.14 ms at 16k x 256) is under the
# ~0.2 ms any SageAttention call costs (launches, quantisation); InvokeAI's RTX 4090 floor (1536/512)
# is at or above it. Above it, measured routing decides per shape and GPU.
AUTO_FLOOR = (1024, 512)


@dataclasses.dataclass(frozen=True)
class Settings:
    enabled: bool = True
    kernel: str = KERNEL_AUTO
    min_seq_len: int = 0           # 0: AUTO_FLOOR; else calls with query or key shorter stay on SDPA
    first_call_check: bool = True
    smooth_k: bool = False
    routing: str = ROUTING_MEASURED
    start_percent: float = 0.0     # the step window, in ComfyUI's percent of the schedule
    end_percent: float = 1.0
    first_blocks: int = -1         # blocks kept on SDPA at each end of a block type; -1: the kernel's default
    last_blocks: int = -1

    def __post_init__(self):
        for name in ("enabled", "first_call_check", "smooth_k"):
            if not isinstance(getattr(self, name), bool):
                raise TypeError(f"{name} must be true or false, got {getattr(self, name)!r}")
        for name, low, high in (("min_seq_len", 0, MAX_SEQ_LEN), ("first_blocks", -1, 1000), ("last_blocks", -1, 1000)):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
                raise ValueError(f"{name} must be a whole number from {low} to {high}, got {value!r}")
        for name, value in (("start_percent", self.start_percent), ("end_percent", self.end_percent)):
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0.0 <= value <= 1.0:
                raise ValueError(f"{name} must be a number from 0.0 to 1.0, got {value!r}")
        if self.start_percent > self.end_percent:
            raise ValueError(f"start_percent ({self.start_percent}) must not be above end_percent ({self.end_percent})")
        if not isinstance(self.kernel, str) or not self.kernel:
            raise ValueError(f"kernel must be 'auto' or a kernel name, got {self.kernel!r}")
        if self.routing not in ROUTINGS:
            raise ValueError(f"routing must be one of {', '.join(ROUTINGS)}, got {self.routing!r}")

    def floors(self) -> tuple[int, int]:
        """(query, key) lengths below which a call stays on SDPA."""
        return AUTO_FLOOR if self.min_seq_len == 0 else (self.min_seq_len, self.min_seq_len)
