"""What a Scope node asks for, validated once, frozen."""
from __future__ import annotations

import dataclasses

from .timing import ROUTING_MEASURED, ROUTINGS

# Calls whose query or key sequence is shorter than this stay on SDPA.
# From the H200 crossover sweep (docs/sage-attention.md, "Thresholds"): SageAttention 2's
# sm90 kernel reaches SDPA (within 5%) from 12k tokens at head size 128 and is faster above
# (LTX-2 video 13.7k tokens 1.22x, FLUX/Qwen/Z-Image 2048^2 ~16.5k tokens 1.18-1.21x);
# below that every Sage kernel carries a fixed ~0.2 ms cost SDPA does not. The key length
# bound also keeps 77-token text cross-attention away from SageAttention 1.0.6, whose output
# there is wrong (relative L2 0.28).
DEFAULT_MIN_SEQ_LEN = 12288

KERNEL_AUTO = "auto"


@dataclasses.dataclass(frozen=True)
class Settings:
    enabled: bool = True
    kernel: str = KERNEL_AUTO
    min_seq_len: int = DEFAULT_MIN_SEQ_LEN
    first_call_check: bool = True
    smooth_k: bool = False
    routing: str = ROUTING_MEASURED

    def __post_init__(self):
        if isinstance(self.min_seq_len, bool) or not isinstance(self.min_seq_len, int):
            raise TypeError(f"min_seq_len must be an integer number of tokens, got {self.min_seq_len!r}")
        if self.min_seq_len < 1:
            raise ValueError(
                f"min_seq_len must be at least 1 token, got {self.min_seq_len}. "
                f"Use {DEFAULT_MIN_SEQ_LEN} (the measured default) or a positive length."
            )
        if not isinstance(self.kernel, str) or not self.kernel:
            raise ValueError(f"kernel must be 'auto' or a kernel name, got {self.kernel!r}")
        if self.routing not in ROUTINGS:
            raise ValueError(f"routing must be one of {', '.join(ROUTINGS)}, got {self.routing!r}")
