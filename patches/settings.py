"""What a Scope node asks for, validated once, frozen: the one place its defaults are written (the
node's widgets, the engine and scripts/write_docs.py read them here)."""
from __future__ import annotations

import dataclasses

KERNEL_AUTO = "auto"
ROUTING_MEASURED, ROUTING_ALWAYS = "measured", "always"
ROUTINGS = (ROUTING_MEASURED, ROUTING_ALWAYS)
MAX_SEQ_LEN = 1 << 22
# min_seq_len 0 (auto): calls with a query under 1024 tokens or a key under 512 keep ComfyUI's attention on
# every GPU: its whole call there is shorter than the fixed cost of a quantised kernel's call (launches,
# quantisation; docs/measured.md has the figures), and InvokeAI's RTX 4090 floor (1536/512) is at or above it.
# Above it, measured routing decides per shape and GPU.
AUTO_FLOOR = (1024, 512)
SPARSE_OFF, SPARSE_SOL = "off", "sol-attn"
SPARSE_METHODS = (SPARSE_OFF, SPARSE_SOL)
# sparse_min_tokens 12288: comfy-kitchen's own advice (below roughly 12k tokens dense is usually faster),
# and ComfyUI's Model Sparse Attention node's default; measured routing still times sparse against dense.
SPARSE_MIN_TOKENS = 12288
BOOLEANS = ("enabled", "first_call_check", "smooth_k")
WHOLE_NUMBERS = {"min_seq_len": (0, MAX_SEQ_LEN), "first_blocks": (-1, 1000), "last_blocks": (-1, 1000),
                 "sparse_min_tokens": (0, MAX_SEQ_LEN)}
# Numbers with a range: the step window's fractions, the sparse density (tau in sigmas, or the top-k
# fraction of key blocks), the sparse window's start and the gate (relative L2 against dense; 1.0 opens it).
FRACTIONS = {"start_percent": (0.0, 1.0), "end_percent": (0.0, 1.0), "sparse_tau": (0.05, 4.0),
             "sparse_topk": (0.0, 1.0), "sparse_start_percent": (0.0, 1.0), "sparse_gate": (0.0, 1.0)}


def problem(name: str, value) -> str | None:
    """What is wrong with ``value`` for the Settings field ``name``, in one sentence naming the value
    and what is allowed; None if nothing is. (The Scope node checks each input with it as the prompt
    is queued: nodes/scope.py.)"""
    if name in BOOLEANS:
        return None if isinstance(value, bool) else f"{name} must be true or false, got {value!r}"
    if name in WHOLE_NUMBERS:
        low, high = WHOLE_NUMBERS[name]
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
            return f"{name} must be a whole number from {low} to {high}, got {value!r}"
    elif name in FRACTIONS:  # NaN fails the comparison, infinity the range
        low, high = FRACTIONS[name]
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not low <= value <= high:
            return f"{name} must be a number from {low} to {high}, got {value!r}"
    elif name == "kernel":
        if not isinstance(value, str) or not value:
            return f"kernel must be 'auto' or a kernel name, got {value!r}"
    elif name == "routing" and (not isinstance(value, str) or value not in ROUTINGS):
        return f"routing must be one of {', '.join(ROUTINGS)}, got {value!r}"
    elif name == "sparse" and (not isinstance(value, str) or value not in SPARSE_METHODS):
        return f"sparse must be one of {', '.join(SPARSE_METHODS)}, got {value!r}"
    return None


def order_problem(start_percent, end_percent) -> str:
    return f"start_percent ({start_percent}) must not be above end_percent ({end_percent})"


@dataclasses.dataclass(frozen=True)
class Settings:
    enabled: bool = True
    kernel: str = KERNEL_AUTO
    min_seq_len: int = 0           # 0: AUTO_FLOOR; else calls with query or key shorter keep ComfyUI's attention
    first_call_check: bool = True
    smooth_k: bool = False
    routing: str = ROUTING_MEASURED
    start_percent: float = 0.0     # the step window, in ComfyUI's percent of the schedule
    end_percent: float = 1.0
    first_blocks: int = -1         # blocks left to ComfyUI's attention at each end of a block type; -1: kernel's own
    last_blocks: int = -1
    sparse: str = SPARSE_OFF       # sol-attn: comfy-kitchen's sparse attention on the long self-attention calls
    sparse_tau: float = 1.0        # its density: routing threshold in sigmas (higher: sparser)
    sparse_topk: float = 0.0       # above 0: keep this fraction of key blocks instead (tau ignored)
    sparse_start_percent: float = 0.2  # steps before this point of the schedule stay dense
    sparse_min_tokens: int = SPARSE_MIN_TOKENS  # self-attention calls shorter stay dense
    sparse_gate: float = 0.05      # a kind of call whose first sparse call is further from dense stays dense

    def __post_init__(self):
        for field in dataclasses.fields(self):
            wrong = problem(field.name, getattr(self, field.name))
            if wrong and field.name in BOOLEANS:
                raise TypeError(wrong)
            if wrong:
                raise ValueError(wrong)
        if self.start_percent > self.end_percent:
            raise ValueError(order_problem(self.start_percent, self.end_percent))

    @property
    def places_blocks(self) -> bool:
        """Whether the user set a block window (the kernel's own edge blocks aside)."""
        return max(self.first_blocks, self.last_blocks) > 0

    @property
    def sparse_on(self) -> bool:
        return self.enabled and self.sparse != SPARSE_OFF

    def sparse_density(self) -> str:
        """The density asked for, in words: it names the sparse kernel's checks and shape buckets."""
        if self.sparse_topk > 0:
            return f"top-k {self.sparse_topk:g}"
        return f"tau {self.sparse_tau:g}"

    def floors(self) -> tuple[int, int]:
        """(query, key) lengths below which a call keeps ComfyUI's attention."""
        return AUTO_FLOOR if self.min_seq_len == 0 else (self.min_seq_len, self.min_seq_len)
