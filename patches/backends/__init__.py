"""Attention kernels: the candidates a call can run on besides ComfyUI's own attention. Each module here
declares one library's kernels (``Backend``: what each takes, how it is called) and registers them at
import; every module of this package is imported, so a kernel is added by adding its module: torch's exact
SDPA backends pinned one at a time (torch_sdpa), SageAttention 1, 2 and 3, comfy-kitchen's INT8,
FlashAttention 4 (flash4) and cuDNN's SDPA through its frontend (cudnn_frontend). Where ``auto`` and
``exact`` offer a kernel is the AUTO and EXACT tables below, one order of preference across libraries.
A kernel is bound to its library's function only where that function declares every argument its adapter
passes (``**kwargs`` does not count), and only on a device the Finder gives a GPU capability: what is
installed is read from the module itself; its distribution metadata only labels it. A kernel that builds
per configuration (a cuDNN graph) keeps what it built in what its ``per_binding`` makes once per binding,
which lives as long as the session that bound it. A kernel choice binds a tuple of candidates on a device
(``Finder.find``): ``auto`` every candidate the GPU runs, ``exact`` the exact ones, a name that one kernel."""
from __future__ import annotations

import contextlib
import dataclasses
import importlib
import importlib.metadata
import importlib.util
import inspect
import pkgutil
import re
import types
from typing import Callable, Mapping, NamedTuple, Optional

import torch

from ..reasons import WrongShape

HALF = frozenset({torch.float16, torch.bfloat16})


@dataclasses.dataclass(frozen=True)
class Backend:
    name: str                        # the node's kernel choice
    label: str                       # in words: tooltip and status
    library: str                     # what it belongs to, e.g. "SageAttention 2"
    module: str                      # where its function lives
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
    edge_blocks: tuple[int, int] = (0, 0)      # first/last blocks it leaves to SDPA unless the user says
    available: Optional[str] = None  # a function of the module: (device) -> whether it runs there
    exact: bool = False              # computes attention without quantising: output within exact rounding
    grouped_query: bool = True       # may get grouped-query calls (their k/v repeated to the query's heads)
    grouped_query_unsafe_on: frozenset = frozenset()  # capabilities where it must not (wrong output there)
    version_function: Optional[str] = None  # a function of the module: () -> its version in words
    sparse: bool = False             # leaves out part of the attention: held to the sparse gate, not the check
    per_binding: Optional[Callable] = None  # (module, fn) -> what run gets as fn, made once per binding (a session's,
    #                                          per device): where a kernel keeps what it builds per configuration,
    #                                          counting its builds in ``builds`` (Bound.builds)

    def unusable_on(self, device: torch.device, capability: Optional[tuple[int, int]]) -> Optional[str]:
        """Why it cannot run on ``device``, a GPU of ``capability`` (None: no GPU), or None where it can."""
        if capability is None:
            return f"{self.name} does not run on {device.type}"
        needs = (" or ".join("sm%d%d" % c for c in sorted(self.capabilities)) if self.capabilities
                 else "sm%d%d or newer" % self.min_capability)
        fits = capability in self.capabilities if self.capabilities else capability >= self.min_capability
        return None if fits else f"{self.label} needs {needs}; this GPU is sm{capability[0]}{capability[1]}"


@dataclasses.dataclass(frozen=True)
class Bound:
    """A backend found in its installed library: ``(output, its layout) = bound(call, settings)``."""
    backend: Backend
    fn: Callable
    version: str

    name = property(lambda self: self.backend.name)

    def builds(self) -> int:
        """How many configurations the binding has built (a compile, a cuDNN graph) so far: a call that moves
        it on waited for one, and its step's time says nothing of the kernel's (0: it builds nothing)."""
        return getattr(self.fn, "builds", 0)

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


class Binding(NamedTuple):
    """One backend bound to its installed function, or (``bound`` None) why it cannot be."""
    bound: Optional[Bound]
    why: str = ""


REGISTRY: dict[str, Backend] = {}  # filled at import by this package's modules; never changed after

# Compute capability -> the quantised kernels ``auto`` offers, in order of preference (``routing=always``
# runs the first that binds). SageAttention 2 as its sageattn dispatches, but sm86 and sm120/121 take the
# CUDA kernel with fp32 P.V accumulation (the fp16 Triton one renders Qwen-Image black on sm86; FP8 P.V is
# noise past ~160k tokens on sm120), as do sm87 and sm100, which its sageattn refuses. Then SageAttention 1,
# then cuDNN's FP8 SDPA where cuDNN runs it with a bf16 output (datacenter Blackwell), then comfy-kitchen.
# SageAttention 3 (FP4) changes images more: only where the user picks it. After them every choice but a named
# kernel offers the exact kernels (EXACT): torch's SDPA backends, then FlashAttention 4 and cuDNN's frontend
# SDPA. A kernel these tables do not name is a choice of its own only.
SAGE2_BY_ARCH = {(8, 0): "sage2_fp16_cuda", (8, 6): "sage2_fp16_cuda", (8, 7): "sage2_fp16_cuda",
                 (8, 9): "sage2_fp8_cuda", (9, 0): "sage2_fp8_sm90", (10, 0): "sage2_fp16_cuda",
                 (12, 0): "sage2_fp16_cuda", (12, 1): "sage2_fp16_cuda"}
CUDNN_FP8_BY_ARCH = {(10, 0): ("cudnn_fe_fp8",)}  # (its half/bf16 output: datacenter Blackwell only)
AUTO = {(7, 5): ("kitchen_int8",),
        **{arch: (sage2, "sage1_triton", *CUDNN_FP8_BY_ARCH.get(arch, ()), "kitchen_int8")
           for arch, sage2 in SAGE2_BY_ARCH.items()}}
EXACT = ("sdpa_cudnn", "sdpa_flash", "sdpa_efficient", "fa4", "cudnn_fe_bf16")
AUTO_CHOICE, EXACT_CHOICE = "auto", "exact"  # the two choices that name a set of candidates


def register(*found: Backend) -> None:
    REGISTRY.update((backend.name, backend) for backend in found)


def distribution_version(module: str) -> Optional[str]:
    """The version of the distribution that installs ``module``, an import name: ``comfy_kitchen`` is
    comfy-kitchen's (names normalised), ``cudnn`` nvidia-cudnn-frontend's, ``flash_attn.cute`` flash-attn-4's
    (where flash-attn's flash_attn is there too, the one whose files hold the submodule); None where no
    distribution says it installs it. Only a module installed under another name reads every distribution's
    list of files (a tenth of a second in a full environment); the knowledge asks once a module a session."""
    with contextlib.suppress(importlib.metadata.PackageNotFoundError):
        return importlib.metadata.version(module)
    top = module.partition(".")[0]
    if importlib.util.find_spec(top) is None:
        return None
    owners = list(dict.fromkeys(importlib.metadata.packages_distributions().get(top, [])))
    inside = module.replace(".", "/")
    for owner in owners:
        with contextlib.suppress(importlib.metadata.PackageNotFoundError):
            found = importlib.metadata.distribution(owner)
            files = [str(file) for file in found.files or ()]
            if len(owners) == 1 or any(f.startswith(inside + "/") or f == inside + ".py" for f in files):
                return found.version
    return None


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
    """How a session finds kernels: imports, distribution versions, GPU capabilities, and the declarations it
    binds, by name."""
    modules: Callable[[str], object] = importlib.import_module
    versions: Callable[[str], Optional[str]] = distribution_version
    capability: Callable[[torch.device], Optional[tuple[int, int]]] = cuda_capability
    kernels: Mapping[str, Backend] = dataclasses.field(default_factory=lambda: types.MappingProxyType(REGISTRY))

    def find(self, choice: str, device: torch.device) -> Resolution:
        """The candidates ``choice`` binds on ``device``: a named kernel alone; for ``auto`` every kernel of
        this GPU's list that binds and then the exact ones; for ``exact`` those alone. Or why none."""
        capability = self.capability(device)
        if choice not in (AUTO_CHOICE, EXACT_CHOICE):
            backend = self.kernels.get(choice)
            if backend is None:
                return Resolution((), f"no kernel is called {choice!r}")
            binding = self.bind(backend, device, capability)
            return Resolution((binding.bound,), f"{choice} chosen") if binding.bound else Resolution((), binding.why)
        if capability is None:
            return Resolution((), f"the attention kernels need a CUDA device, got {device}")
        names = EXACT
        if choice == AUTO_CHOICE:
            names = self.quantised_names(capability) + EXACT
        bindings = [self.bind(self.kernels[name], device, capability) for name in names]
        found = tuple(binding.bound for binding in bindings if binding.bound)
        arch = f"sm{capability[0]}{capability[1]}"
        if found:
            return Resolution(found, f"{choice}: {arch} -> {', '.join(b.name for b in found)}")
        tried = [binding.why for binding in bindings]
        return Resolution((), f"{choice}: " + ("; ".join(tried) or f"no kernel for {arch}"))

    @staticmethod
    def quantised_names(capability: tuple[int, int]) -> tuple[str, ...]:
        """The quantised kernels ``auto`` offers on a GPU of ``capability``, in order of preference."""
        if capability in AUTO:
            return AUTO[capability]
        if capability >= (8, 0):
            return AUTO[(8, 0)]
        return ()

    def bind(self, backend: Backend, device: torch.device, capability) -> Binding:
        """``backend`` bound to its installed function, or why it cannot be."""
        why = backend.unusable_on(device, capability)
        if why:
            return Binding(None, why)
        version = self.library_version(backend)
        try:
            module = self.modules(backend.module)
        except Exception as exc:  # noqa: BLE001 - a broken build or a missing Triton must not break loading
            return Binding(None, f"{backend.module} is not installed or failed to import: {exc!r}"[:300])
        fn = getattr(module, backend.function, None)
        if fn is None:
            return Binding(None, f"{version} does not export {backend.function}")
        missing = missing_parameters(fn, backend.params)
        if missing:
            return Binding(None, f"{backend.function} of {version} does not take {', '.join(missing)}; "
                                 "not passing arguments it would ignore")
        if backend.available and not getattr(module, backend.available)(device):
            return Binding(None, f"{version}: {backend.function} does not run on {device}")
        if backend.version_function:
            version = getattr(module, backend.version_function)()
        if capability in backend.grouped_query_unsafe_on:
            backend = dataclasses.replace(backend, grouped_query=False)
        if backend.per_binding is not None:
            fn = backend.per_binding(module, fn)
        return Binding(Bound(backend, fn, version))

    def library_version(self, backend: Backend) -> str:
        """The library and its distribution's version; both where they disagree (a SageAttention 2
        build whose metadata says 1.0.6)."""
        version, major = self.versions(backend.module), re.search(r"\d+$", backend.library)
        if version is None:
            return f"{backend.library}, version unknown (no distribution metadata for {backend.module})"
        if major and not version.startswith(major.group()):
            return f"{backend.library} (its distribution metadata says {backend.module} {version})"
        return f"{backend.library} ({backend.module} {version})"


def import_declarations() -> None:
    """Imports every module of this package, in name order: each registers the kernels it declares, so a kernel
    is added by adding its module."""
    for module in sorted(found.name for found in pkgutil.iter_modules(__path__)):
        importlib.import_module(f"{__name__}.{module}")


import_declarations()
