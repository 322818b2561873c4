"""The first-call check: a candidate's output on a real call against ComfyUI's attention. A quantised
kernel passes within ``MAX_REL_L2`` and ``MIN_COSINE`` both (a kernel can keep a cosine near 1 while its
relative L2 shows it wrong, so cosine alone cannot tell); an exact one within ``MAX_REL_L2_EXACT``, bf16
rounding with room (two exact backends differ by their rounding alone). docs/measured.md has the
figures these bounds were set from."""
from __future__ import annotations

import dataclasses
from typing import NamedTuple

import torch

MIN_COSINE, MAX_REL_L2 = 0.99, 0.10
MAX_REL_L2_EXACT = 0.02


class CheckKey(NamedTuple):  # a tuple: made and hashed on every kernel call, so cheap to make
    device: str
    dtype: str
    head_dim: int
    kernel: str
    keys: str = "long"  # key-length class, "short" or "long" (decide.SHORT_KEYS); a tier's kind of call

    def describe(self) -> str:
        return f"{self.device} {self.dtype} d{self.head_dim} {self.keys} keys {self.kernel}"


@dataclasses.dataclass(frozen=True)
class CheckResult:
    key: CheckKey
    passed: bool
    cosine: float = float("nan")
    rel_l2: float = float("inf")
    finite: bool = False  # a key whose kernel later returned NaN or inf keeps CheckResult(key, False)
    max_rel_l2: float = MAX_REL_L2
    gated: bool = False   # a sparse kernel's gate (relative L2 against dense alone), not the check

    def describe(self) -> str:
        if self.gated:
            limit = "gate open" if self.max_rel_l2 == float("inf") else f"gate {self.max_rel_l2}"
            return (f"{'passed' if self.passed else 'FAILED'}: relative L2 {self.rel_l2:.4f} against dense ({limit})"
                    + ("" if self.finite else ", kernel output not finite"))
        return (f"{'passed' if self.passed else 'FAILED'}: cosine {self.cosine:.5f} (min {MIN_COSINE}), relative L2 "
                f"{self.rel_l2:.4f} (max {self.max_rel_l2})" + ("" if self.finite else ", kernel output not finite"))


def compare(out: torch.Tensor, ref: torch.Tensor) -> tuple[float, float, bool]:
    """(cosine, relative L2, whether ``out`` is finite) of ``out`` against ``ref``, in fp32."""
    o, r = out.detach().reshape(-1).float(), ref.detach().reshape(-1).float()
    if not bool(torch.isfinite(o).all()):
        return float("nan"), float("inf"), False
    rel = torch.linalg.vector_norm(o - r) / torch.linalg.vector_norm(r).clamp_min(1e-12)
    return float(torch.nn.functional.cosine_similarity(o, r, dim=0, eps=1e-12)), float(rel), True


def judge(key: CheckKey, out: torch.Tensor, ref: torch.Tensor, exact: bool = False) -> CheckResult:
    """The verdict on ``out`` against ComfyUI's ``ref``; ``exact`` holds a candidate to exact rounding."""
    cosine, rel_l2, finite = compare(out, ref)
    max_rel_l2 = MAX_REL_L2_EXACT if exact else MAX_REL_L2
    passed = finite and cosine >= MIN_COSINE and rel_l2 <= max_rel_l2
    return CheckResult(key, passed, cosine, rel_l2, finite, max_rel_l2)


def gate(key: CheckKey, out: torch.Tensor, dense: torch.Tensor, max_rel_l2: float) -> CheckResult:
    """The sparse gate: a sparse kernel's output against the ``dense`` result on the user's own call,
    passed within ``max_rel_l2`` (1.0 or more: open, only a finite output asked for). Sparse attention
    leaves out part of the attention by design, so the cosine floor of the check does not apply."""
    cosine, rel_l2, finite = compare(out, dense)
    limit = float("inf") if max_rel_l2 >= 1.0 else max_rel_l2
    return CheckResult(key, finite and rel_l2 <= limit, cosine, rel_l2, finite, limit, gated=True)
