"""The first-call check: the first eligible call per device x dtype x head size x kernel
also runs SDPA, and the kernel keeps that key only if the two agree.

Thresholds, from the H200 figures (docs/sage-attention.md, "First-call check"): SageAttention 2
lands at relative L2 <= 0.042 and cosine >= 0.999 on normal calls; PyPI sageattention 1.0.6 at
key length 77 gives relative L2 0.28 (cosine 0.999, so cosine alone cannot catch it). 0.10
sits 2.4x above the first and 2.8x below the second.
"""
from __future__ import annotations

import dataclasses
import threading

import torch

MIN_COSINE = 0.99
MAX_REL_L2 = 0.10


@dataclasses.dataclass(frozen=True)
class CheckKey:
    device: str
    dtype: str
    head_dim: int
    kernel: str

    def label(self) -> str:
        return f"{self.device} {self.dtype} d{self.head_dim} {self.kernel}"


@dataclasses.dataclass(frozen=True)
class CheckResult:
    key: CheckKey
    passed: bool
    cosine: float
    rel_l2: float
    finite: bool

    def describe(self) -> str:
        verdict = "passed" if self.passed else "FAILED"
        extra = "" if self.finite else ", kernel output not finite"
        return (f"{verdict}: cosine {self.cosine:.5f} (min {MIN_COSINE}), relative L2 {self.rel_l2:.4f} "
                f"(max {MAX_REL_L2}){extra}")


def compare(out: torch.Tensor, ref: torch.Tensor) -> tuple[float, float, bool]:
    """(cosine, relative L2, kernel output finite) of ``out`` against ``ref``, in fp32."""
    o = out.detach().reshape(-1).float()
    r = ref.detach().reshape(-1).float()
    finite = bool(torch.isfinite(o).all())
    if not finite:
        return float("nan"), float("inf"), False
    r_norm = torch.linalg.vector_norm(r)
    rel = torch.linalg.vector_norm(o - r) / r_norm.clamp_min(1e-12)
    cos = torch.nn.functional.cosine_similarity(o, r, dim=0, eps=1e-12)
    return float(cos), float(rel), True


def judge(key: CheckKey, out: torch.Tensor, ref: torch.Tensor) -> CheckResult:
    cosine, rel_l2, finite = compare(out, ref)
    passed = finite and cosine >= MIN_COSINE and rel_l2 <= MAX_REL_L2
    return CheckResult(key, passed, cosine, rel_l2, finite)


_lock = threading.Lock()
_results: dict[CheckKey, CheckResult] = {}


def result(key: CheckKey) -> CheckResult | None:
    return _results.get(key)


def record(res: CheckResult) -> None:
    with _lock:
        _results[res.key] = res


def all_results() -> list[CheckResult]:
    with _lock:
        return list(_results.values())


def reset() -> None:
    with _lock:
        _results.clear()
