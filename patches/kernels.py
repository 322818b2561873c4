"""Which SageAttention kernel serves a device, and one adapter that calls it safely.

sageattention 1.x (PyPI) exports a single Triton ``sageattn``; 2.x exports one function per
kernel family. We call the specific functions, never 2.x's ``sageattn``: it forwards none of
``smooth_k`` / ``pv_accum_dtype`` / ``qk_quant_gran`` and its ``**kwargs`` swallows them.
"""
from __future__ import annotations

import contextlib
import dataclasses
import importlib
import importlib.metadata
import importlib.util
import inspect
import logging
import threading
from typing import Any, Callable, Mapping

import torch

from .settings import KERNEL_AUTO

log = logging.getLogger(__name__)

HALF_DTYPES = frozenset({torch.float16, torch.bfloat16})

# The arguments every adapter call passes; the installed function must name each one.
_CALL_ARGS = ("tensor_layout", "is_causal", "sm_scale", "smooth_k")


@dataclasses.dataclass(frozen=True)
class KernelSpec:
    """What one kernel function takes. ``head_dims`` are the sizes it runs without padding
    copies; ``fixed_kwargs`` are passed on every call."""

    name: str
    function_name: str
    head_dims: frozenset[int]
    dtypes: frozenset[torch.dtype] = HALF_DTYPES
    device_types: frozenset[str] = frozenset({"cuda"})
    fixed_kwargs: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    # sageattention 1.x's smooth_k subtracts the mean from k *in place*; we then smooth a
    # copy ourselves and pass smooth_k=False, so the caller's k is never written.
    smooth_k_in_place: bool = False


@dataclasses.dataclass(frozen=True)
class Kernel:
    spec: KernelSpec
    function: Callable[..., torch.Tensor]
    version: str

    @property
    def name(self) -> str:
        return self.spec.name

    def run(self, q, k, v, *, layout: str, sm_scale: float | None, smooth_k: bool) -> torch.Tensor:
        """q/k/v in ``layout`` ("HND" = B,H,N,D or "NHD" = B,N,H,D); output in the same layout."""
        native_smooth = smooth_k
        if smooth_k and self.spec.smooth_k_in_place:
            # Softmax is invariant to a per-(batch, head) shift of k along the sequence.
            k = k - k.mean(dim=2 if layout == "HND" else 1, keepdim=True)
            native_smooth = False
        guard = torch.cuda.device(q.device) if q.device.type == "cuda" else contextlib.nullcontext()
        # SageAttention 2 calls torch.cuda.set_device(v.device) itself; the guard restores
        # the caller's current device afterwards, and Triton launches on the right one.
        with guard:
            return self.function(
                q, k, v, tensor_layout=layout, is_causal=False, sm_scale=sm_scale,
                smooth_k=native_smooth, **self.spec.fixed_kwargs,
            )


SA1_TRITON = KernelSpec("sageattn_1x_triton", "sageattn", frozenset({64, 96, 128}), smooth_k_in_place=True)
# SageAttention 2 pads other head sizes below 128 with copies of q, k and v; we leave those
# calls on SDPA instead (reason head_dim).
_SA2_HEAD_DIMS = frozenset({64, 128})
SA2_FP16_CUDA = KernelSpec("qk_int8_pv_fp16_cuda", "sageattn_qk_int8_pv_fp16_cuda", _SA2_HEAD_DIMS,
                           fixed_kwargs={"pv_accum_dtype": "fp32"})
SA2_FP16_TRITON = KernelSpec("qk_int8_pv_fp16_triton", "sageattn_qk_int8_pv_fp16_triton", _SA2_HEAD_DIMS)
SA2_FP8_CUDA = KernelSpec("qk_int8_pv_fp8_cuda", "sageattn_qk_int8_pv_fp8_cuda", _SA2_HEAD_DIMS,
                          fixed_kwargs={"pv_accum_dtype": "fp32+fp16"})
SA2_FP8_CUDA_SM120 = dataclasses.replace(
    SA2_FP8_CUDA, fixed_kwargs={"qk_quant_gran": "per_warp", "pv_accum_dtype": "fp32+fp16"})
SA2_FP8_CUDA_SM90 = KernelSpec("qk_int8_pv_fp8_cuda_sm90", "sageattn_qk_int8_pv_fp8_cuda_sm90", _SA2_HEAD_DIMS,
                               fixed_kwargs={"pv_accum_dtype": "fp32+fp32"})

SA2_KERNELS = (SA2_FP16_CUDA, SA2_FP16_TRITON, SA2_FP8_CUDA, SA2_FP8_CUDA_SM90)
# What upstream 2.x's own sageattn dispatches to, per compute capability. sm87 (Orin) has no
# kernel; sm100 upstream raises.
SA2_AUTO = {
    (8, 0): SA2_FP16_CUDA,
    (8, 6): SA2_FP16_TRITON,
    (8, 9): SA2_FP8_CUDA,
    (9, 0): SA2_FP8_CUDA_SM90,
    (12, 0): SA2_FP8_CUDA_SM120,
    (12, 1): SA2_FP8_CUDA_SM120,
}
SA1_MIN_CAPABILITY = (8, 0)

KERNEL_NAMES = (SA1_TRITON.name,) + tuple(spec.name for spec in SA2_KERNELS)


@dataclasses.dataclass(frozen=True)
class Installed:
    """What ``import sageattention`` gave: version and module, or why it failed."""

    version: str | None
    module: Any = None
    error: str | None = None

    @property
    def major(self) -> int | None:
        try:
            return int(str(self.version).split(".")[0])
        except ValueError:
            return None


@dataclasses.dataclass(frozen=True)
class Resolution:
    """The kernel for one device and kernel choice, or ``None`` and why not."""

    kernel: Kernel | None
    why: str
    not_cuda: bool = False


_lock = threading.Lock()
_installed: Installed | None = None
_resolutions: dict[tuple[str, str], Resolution] = {}
_epoch = 0  # see epoch()
_test_kernels: dict[str, Kernel] = {}

NOT_INSTALLED_HINT = "SageAttention not installed: pip install sageattention"


def installed() -> Installed:
    """Imports sageattention once (lazily: it pulls in Triton) and remembers the outcome."""
    global _installed
    with _lock:
        if _installed is None:
            _installed = _import_sageattention()
        return _installed


def _import_sageattention() -> Installed:
    if importlib.util.find_spec("sageattention") is None:
        return Installed(None, error=NOT_INSTALLED_HINT)
    try:
        version = importlib.metadata.version("sageattention")
    except importlib.metadata.PackageNotFoundError:
        version = "unknown"
    try:
        module = importlib.import_module("sageattention")
    except Exception as exc:  # a broken build or a missing Triton must not break loading
        return Installed(version, error=f"sageattention {version} is installed but failed to import: {exc!r}")
    return Installed(version, module)


def epoch() -> int:
    """Bumped whenever the per-device choices are forgotten: what a router worked out from an
    earlier choice is then out of date."""
    return _epoch


def _forget_resolutions() -> None:
    global _epoch
    _resolutions.clear()
    _epoch += 1


def register_test_kernel(kernel: Kernel) -> None:
    """Makes a named kernel (a test double or a benchmark arm) selectable by name."""
    with _lock:
        _test_kernels[kernel.name] = kernel
        _forget_resolutions()


def unregister_test_kernel(name: str) -> None:
    with _lock:
        _test_kernels.pop(name, None)
        _forget_resolutions()


def reset_caches() -> None:
    """Forgets the import outcome and per-device choices (tests; a reinstalled package)."""
    global _installed
    with _lock:
        _installed = None
        _forget_resolutions()


def available_kernel_names() -> list[str]:
    """Names a node may offer: auto first, then every kernel this pack knows."""
    return [KERNEL_AUTO, *KERNEL_NAMES, *sorted(_test_kernels)]


def resolve(choice: str, device: torch.device) -> Resolution:
    """Kernel for ``choice`` ('auto' or a name) on ``device``; cached per (choice, device)."""
    key = (choice, str(device))
    with _lock:
        cached = _resolutions.get(key)
    if cached is not None:
        return cached
    resolution = _resolve_uncached(choice, device)
    with _lock:
        _resolutions[key] = resolution
    return resolution


def peek(choice: str, device: torch.device) -> Resolution | None:
    """The cached resolution, or None; no lock, so torch.compile can trace it (a dict read is
    atomic under the GIL)."""
    return _resolutions.get((choice, str(device)))


def _resolve_uncached(choice: str, device: torch.device) -> Resolution:
    if choice in _test_kernels:
        kernel = _test_kernels[choice]
        if device.type not in kernel.spec.device_types:
            return Resolution(None, f"{choice} does not run on {device.type}", not_cuda=device.type != "cuda")
        return Resolution(kernel, f"{choice} (registered)")
    if device.type != "cuda":
        return Resolution(None, f"SageAttention needs a CUDA device, got {device}", not_cuda=True)
    inst = installed()
    if inst.module is None:
        return Resolution(None, inst.error or NOT_INSTALLED_HINT)
    capability = torch.cuda.get_device_capability(device)
    arch = f"sm{capability[0]}{capability[1]}"
    if choice == KERNEL_AUTO:
        spec, why = _auto_spec(inst, capability, arch)
        if spec is None:
            return Resolution(None, why)
    else:
        spec = _named_spec(choice, inst)
        if spec is None:
            return Resolution(None, f"kernel {choice!r} is not provided by sageattention {inst.version}")
        if spec is SA2_FP8_CUDA and capability[0] == 12:
            spec = SA2_FP8_CUDA_SM120
        why = f"forced {spec.name} on {arch}"
    return _bind(spec, inst, why)


def _auto_spec(inst: Installed, capability: tuple[int, int], arch: str) -> tuple[KernelSpec | None, str]:
    if inst.major == 1:
        if capability < SA1_MIN_CAPABILITY:
            return None, f"sageattention {inst.version} needs sm80 or newer, this GPU is {arch}"
        return SA1_TRITON, f"auto: sageattention {inst.version} has one kernel ({SA1_TRITON.name})"
    spec = SA2_AUTO.get(capability)
    if spec is None:
        return None, f"auto: sageattention {inst.version} has no kernel for {arch}"
    return spec, f"auto: {arch} -> {spec.name}"


def _named_spec(choice: str, inst: Installed) -> KernelSpec | None:
    if inst.major == 1:
        return SA1_TRITON if choice == SA1_TRITON.name else None
    return next((spec for spec in SA2_KERNELS if spec.name == choice), None)


def _bind(spec: KernelSpec, inst: Installed, why: str) -> Resolution:
    function = getattr(inst.module, spec.function_name, None)
    if function is None:
        return Resolution(None, f"sageattention {inst.version} does not export {spec.function_name}")
    missing = missing_parameters(function, (*_CALL_ARGS, *spec.fixed_kwargs))
    if missing:
        return Resolution(None, f"{spec.function_name} of sageattention {inst.version} does not take "
                                f"{', '.join(missing)}; refusing to pass arguments it would ignore")
    return Resolution(Kernel(spec, function, inst.version or "unknown"), why)


def missing_parameters(function: Callable, names) -> list[str]:
    """Names that ``function`` does not declare (a ``**kwargs`` catch-all does not count)."""
    try:
        params = inspect.signature(function).parameters
    except (TypeError, ValueError):
        return list(names)
    declared = {n for n, p in params.items() if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}
    return [n for n in names if n not in declared]
