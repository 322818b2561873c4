"""Attention kernels: the candidates a call can run on besides ComfyUI's own attention. Each module here
declares one library's kernels (``Backend``: what each takes, how it is called) and registers them at
import: torch's exact SDPA backends pinned one at a time (torch_sdpa), SageAttention 1, 2 and 3,
comfy-kitchen's INT8, FlashAttention 4 (flash4) and cuDNN's SDPA through its frontend (cudnn_frontend). A
kernel is bound to its library's function only where that function declares every argument its adapter
passes (``**kwargs`` does not count): what is installed is read from the module itself; its distribution
metadata only labels it. A kernel that builds per configuration (a cuDNN graph) keeps what it built in what
its ``per_binding`` makes once per binding, which lives as long as the session that bound it. A kernel
choice binds a tuple of candidates on a device (``Finder.find``): ``auto`` every candidate the GPU runs,
``exact`` the exact ones, a name that one kernel."""
from __future__ import annotations

import contextlib
import dataclasses
import importlib
import importlib.metadata
import inspect
import re
from typing import Callable, NamedTuple, Optional

import torch

from ..reasons import WrongShape

HALF = frozenset({torch.float16, torch.bfloat16})


@dataclasses.dataclass(frozen=True)
class Backend:
    name: str                        # the node's kernel choice
    label: str                       # in words: tooltip and status
    library: str                     # what it belongs to, e.g. "SageAttention 2"
    module: str                      # where its function lives ("" for a function handed over: ``fn``)
    function: str
    params: tuple[str, ...]          # the arguments ``run`` passes by name
    run: Callable                    # run(fn, q, k, v, call, layout, settings) -> output in ``layout``
    head_dims: frozenset[int]
    dtypes: frozenset = HALF
    layouts: frozenset = frozenset({"HND", "NHD"})
    transposed_views: bool = False   # reads (B, H, N, D) views of (B, N, H, D) tensors
    masks: bool = False              # takes an attention mask as SDPA does
    custom_scale: bool = True        # takes a softmax scale other than head_dim ** -0.5
    min_capability: tuple[int, int] = (8, 0)
    capabilities: Optional[frozenset] = None   # exactly these, where given
    devices: frozenset = frozenset({"cuda"})
    edge_blocks: tuple[int, int] = (0, 0)      # first/last blocks it leaves to SDPA unless the user says
    available: Optional[str] = None  # a function of the module: (device) -> whether it runs there
    fn: Optional[Callable] = None
    exact: bool = False              # computes attention without quantising: output within exact rounding
    grouped_query: bool = True       # may get grouped-query calls (their k/v repeated to the query's heads)
    grouped_query_unsafe_on: frozenset = frozenset()  # capabilities where it must not (wrong output there)
    version_function: Optional[str] = None  # a function of the module: () -> its version in words
    sparse: bool = False             # leaves out part of the attention: held to the sparse gate, not the check
    per_binding: Optional[Callable] = None  # (module, fn) -> what run gets as fn, made once per binding (a session's,
    #                                          per device): where a kernel keeps what it builds per configuration

    def unusable_on(self, device: torch.device, capability: Optional[tuple[int, int]]) -> Optional[str]:
        if device.type not in self.devices:
            return f"{self.name} does not run on {device.type}"
        needs = (" or ".join("sm%d%d" % c for c in sorted(self.capabilities)) if self.capabilities
                 else "sm%d%d or newer" % self.min_capability)
        fits = capability is None or (capability in self.capabilities if self.capabilities
                                      else capability >= self.min_capability)
        return None if fits else f"{self.label} needs {needs}; this GPU is sm{capability[0]}{capability[1]}"


@dataclasses.dataclass(frozen=True)
class Bound:
    """A backend found in its installed library: ``(output, its layout) = bound(call, settings)``."""
    backend: Backend
    fn: Callable
    version: str

    name = property(lambda self: self.backend.name)

    def __call__(self, call, settings) -> tuple[torch.Tensor, str]:
        layout = call.layout if call.layout in self.backend.layouts else "HND"
        q, k, v = call.views(layout)
        # SageAttention 2 calls torch.cuda.set_device itself: where q is not on the current device, the guard
        # restores the caller's (entering it costs a few microseconds a call, so only there).
        off_device = q.is_cuda and q.device.index != torch.cuda.current_device()
        with torch.cuda.device(q.device) if off_device else contextlib.nullcontext():
            out = self.backend.run(self.fn, q, k, v, call, layout, settings)
        if not isinstance(out, torch.Tensor) or out.shape != q.shape:  # attention keeps q's shape
            raise WrongShape(f"{self.name} returned {getattr(out, 'shape', type(out).__name__)}, "
                             f"expected {tuple(q.shape)}")
        return out, layout


class Resolution(NamedTuple):
    """The candidates a kernel choice binds on a device, in order of preference (none: the Scope keeps
    ComfyUI's attention there), and why."""
    candidates: tuple[Bound, ...]
    why: str

    @property
    def bound(self) -> Optional[Bound]:
        """The first candidate (the one ``routing=always`` runs), or None."""
        return self.candidates[0] if self.candidates else None


REGISTRY: dict[str, Backend] = {}  # filled at import by the modules below; never changed after

# Compute capability -> the quantised kernels ``auto`` offers, in order of preference (``routing=always``
# runs the first that binds). SageAttention 2 as its sageattn dispatches, but sm86 and sm120/121 take the
# CUDA kernel with fp32 P.V accumulation (the fp16 Triton one renders Qwen-Image black on sm86, ComfyUI
# #9773; FP8 P.V is noise past ~160k tokens on sm120, #15263), as do sm87 and sm100, which its sageattn
# refuses. Then SageAttention 1, then cuDNN's FP8 SDPA where cuDNN runs it (Hopper and datacenter Blackwell),
# then comfy-kitchen. SageAttention 3 (FP4) changes images more: only where the user picks it. After them every
# choice but a named kernel offers the exact kernels (EXACT): torch's SDPA backends, then FlashAttention 4 and
# cuDNN's frontend SDPA.
SAGE2_BY_ARCH = {(8, 0): "sage2_fp16_cuda", (8, 6): "sage2_fp16_cuda", (8, 7): "sage2_fp16_cuda",
                 (8, 9): "sage2_fp8_cuda", (9, 0): "sage2_fp8_sm90", (10, 0): "sage2_fp16_cuda",
                 (12, 0): "sage2_fp16_cuda", (12, 1): "sage2_fp16_cuda"}
CUDNN_FP8_BY_ARCH = {(9, 0): ("cudnn_fe_fp8",), (10, 0): ("cudnn_fe_fp8",)}
AUTO = {(7, 5): ("kitchen_int8",),
        **{arch: (sage2, "sage1_triton", *CUDNN_FP8_BY_ARCH.get(arch, ()), "kitchen_int8")
           for arch, sage2 in SAGE2_BY_ARCH.items()}}
EXACT = ("sdpa_cudnn", "sdpa_flash", "sdpa_efficient", "fa4", "cudnn_fe_bf16")
AUTO_CHOICE, EXACT_CHOICE = "auto", "exact"  # the two choices that name a set of candidates


def register(*found: Backend) -> None:
    REGISTRY.update((backend.name, backend) for backend in found)


def distribution_version(module: str) -> Optional[str]:  # names normalised: comfy_kitchen finds comfy-kitchen
    with contextlib.suppress(importlib.metadata.PackageNotFoundError):
        return importlib.metadata.version(module)


def missing_parameters(fn: Callable, names) -> list[str]:
    """Names ``fn`` does not declare (a ``**kwargs`` catch-all does not count)."""
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return list(names)
    named = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    return [n for n in names if n not in params or params[n].kind not in named]


def cuda_capability(device: torch.device) -> Optional[tuple[int, int]]:
    """A CUDA device's compute capability; None for any other device."""
    if device.type != "cuda":
        return None
    return torch.cuda.get_device_capability(device)


@dataclasses.dataclass(frozen=True)
class Finder:
    """How a session finds kernels: imports, distribution versions, GPU capabilities (tests hand in doubles)."""
    modules: Callable[[str], object] = importlib.import_module
    versions: Callable[[str], Optional[str]] = distribution_version
    capability: Callable[[torch.device], Optional[tuple[int, int]]] = cuda_capability

    def find(self, choice: str, device: torch.device, lookup) -> Resolution:
        """The candidates ``choice`` binds on ``device``: a named kernel alone; for ``auto`` every kernel of
        this GPU's list that binds and then torch's exact backends; for ``exact`` those alone. Or why none."""
        capability = self.capability(device)
        if choice not in (AUTO_CHOICE, EXACT_CHOICE):
            backend = lookup(choice)
            bound = self.bind(backend, device, capability) if backend else f"no kernel is called {choice!r}"
            if isinstance(bound, Bound):
                return Resolution((bound,), f"{choice} chosen")
            return Resolution((), bound)
        if capability is None:
            return Resolution((), f"the attention kernels need a CUDA device, got {device}")
        names = EXACT
        if choice == AUTO_CHOICE:
            names = self.quantised_names(capability) + EXACT
        found, tried = [], []
        for name in names:
            bound = self.bind(lookup(name), device, capability)
            if isinstance(bound, Bound):
                found.append(bound)
            else:
                tried.append(bound)
        arch = f"sm{capability[0]}{capability[1]}"
        if found:
            return Resolution(tuple(found), f"{choice}: {arch} -> {', '.join(b.name for b in found)}")
        return Resolution((), f"{choice}: " + ("; ".join(tried) or f"no kernel for {arch}"))

    @staticmethod
    def quantised_names(capability: tuple[int, int]) -> tuple[str, ...]:
        """The quantised kernels ``auto`` offers on a GPU of ``capability``, in order of preference."""
        if capability in AUTO:
            return AUTO[capability]
        if capability >= (8, 0):
            return AUTO[(8, 0)]
        return ()

    def bind(self, backend: Backend, device: torch.device, capability) -> Bound | str:
        """``backend`` bound to its installed function, or why it cannot be."""
        why, version = backend.unusable_on(device, capability), self.library_version(backend)
        if why:
            return why
        try:
            module = None if backend.fn else self.modules(backend.module)
        except Exception as exc:  # noqa: BLE001 - a broken build or a missing Triton must not break loading
            return f"{backend.module} is not installed or failed to import: {exc!r}"[:300]
        fn = backend.fn or getattr(module, backend.function, None)
        if fn is None:
            return f"{version} does not export {backend.function}"
        missing = missing_parameters(fn, backend.params)
        if missing:
            return (f"{backend.function} of {version} does not take {', '.join(missing)}; "
                    "not passing arguments it would ignore")
        if module is not None and backend.available and not getattr(module, backend.available)(device):
            return f"{version}: {backend.function} does not run on {device}"
        if module is not None and backend.version_function:
            version = getattr(module, backend.version_function)()
        if capability in backend.grouped_query_unsafe_on:
            backend = dataclasses.replace(backend, grouped_query=False)
        if backend.per_binding is not None:
            fn = backend.per_binding(module, fn)
        return Bound(backend, fn, version)

    def library_version(self, backend: Backend) -> str:
        """The library and its distribution's version; both where they disagree (a SageAttention 2
        build whose metadata says 1.0.6)."""
        if not backend.module:
            return backend.library
        version, major = self.versions(backend.module), re.search(r"\d+$", backend.library)
        if version is None:
            return f"{backend.library}, version unknown (no distribution metadata for {backend.module})"
        if major and not version.startswith(major.group()):
            return f"{backend.library} (its distribution metadata says {backend.module} {version})"
        return f"{backend.library} ({backend.module} {version})"


from . import cudnn_frontend, flash4, kitchen, sage1, sage2, sage3, torch_sdpa  # noqa: E402,F401 - importing registers
