"""What a Scope node asks for: the one place its inputs, defaults and help are written.

The node builds its widgets from ``INPUTS``, the engine reads ``Settings``, and
scripts/write_docs.py writes the docs' input table from both.
"""
from __future__ import annotations

import dataclasses

KERNEL_AUTO = "auto"
ROUTING_MEASURED, ROUTING_ALWAYS = "measured", "always"
ROUTINGS = (ROUTING_MEASURED, ROUTING_ALWAYS)
MAX_SEQ_LEN = 1 << 22


@dataclasses.dataclass(frozen=True)
class Settings:
    enabled: bool = True
    kernel: str = KERNEL_AUTO
    # Calls whose query or key is shorter stay on SDPA. On the H200 SageAttention 2's sm90
    # kernel reaches SDPA from about 12k tokens at head size 128 (docs/sage-attention.md).
    min_seq_len: int = 12288
    first_call_check: bool = True
    smooth_k: bool = False
    routing: str = ROUTING_MEASURED

    def __post_init__(self):
        for name in ("enabled", "first_call_check", "smooth_k"):
            if not isinstance(getattr(self, name), bool):
                raise TypeError(f"{name} must be true or false, got {getattr(self, name)!r}")
        if isinstance(self.min_seq_len, bool) or not isinstance(self.min_seq_len, int):
            raise TypeError(f"min_seq_len must be an integer number of tokens, got {self.min_seq_len!r}")
        if not 1 <= self.min_seq_len <= MAX_SEQ_LEN:
            raise ValueError(f"min_seq_len must be at least 1 token (at most {MAX_SEQ_LEN}), got "
                             f"{self.min_seq_len}. Use {Settings.min_seq_len} (the default) or a positive length.")
        if not isinstance(self.kernel, str) or not self.kernel:
            raise ValueError(f"kernel must be 'auto' or a kernel name, got {self.kernel!r}")
        if self.routing not in ROUTINGS:
            raise ValueError(f"routing must be one of {', '.join(ROUTINGS)}, got {self.routing!r}")


# name -> what it does (node tooltips, docs). Defaults are the Settings fields'.
INPUTS = {
    "enabled": "Off: every call keeps SDPA; the output is identical to no node.",
    "kernel": "auto picks the kernel for this GPU and what is installed; or pick one by name.",
    "min_seq_len": "Calls whose query or key is shorter (tokens) stay on SDPA, where a kernel's fixed cost "
                   "outweighs its gain. The default was measured on an H200.",
    "first_call_check": "Compare the first call per device, dtype, head size and kernel with SDPA; a mismatch "
                        "keeps SDPA for those calls for the session.",
    "smooth_k": "Subtract each head's mean key before quantising (SageAttention's smooth_k): can help with "
                "outlier keys, hurt accuracy on Qwen-Image. Off by default.",
    "routing": "measured: time the kernel against SDPA once per shape and keep the faster (never slower than "
               "SDPA). always: every eligible call on the kernel.",
}
assert set(INPUTS) == {f.name for f in dataclasses.fields(Settings)}
