"""Attention kernels: each module here declares what one kernel takes and how it is called
(``Backend``) and registers it at import. The engine never names a backend.

A backend is found in its library by function name and bound only where that function declares
every argument its adapter passes (a ``**kwargs`` catch-all does not count): which SageAttention
is installed is read from the module itself; its distribution metadata only labels it.
"""
from __future__ import annotations

import contextlib
import dataclasses
import importlib
import importlib.metadata
import inspect
import re
from typing import Callable, Optional

import torch

HALF = frozenset({torch.float16, torch.bfloat16})


@dataclasses.dataclass(frozen=True)
class Backend:
    name: str                        # the node's kernel choice
    label: str                       # in words: tooltip and status
    library: str                     # what it belongs to, e.g. "SageAttention 2"
    module: str                      # where its function lives
    function: str
    params: tuple[str, ...]          # the arguments ``run`` passes by name
    run: Callable                    # run(fn, q, k, v, call, layout, settings) -> output in layout
    head_dims: frozenset[int]
    dtypes: frozenset = HALF
    layouts: frozenset = frozenset({"HND", "NHD"})
    transposed_views: bool = False   # reads (B, H, N, D) views of (B, N, H, D) tensors (strided)
    masks: bool = False              # takes an attention mask as SDPA does
    custom_scale: bool = True        # takes a softmax scale other than head_dim ** -0.5
    min_capability: tuple[int, int] = (8, 0)
    capabilities: Optional[frozenset] = None   # exactly these, where given
    devices: frozenset = frozenset({"cuda"})
    auto: bool = True                # may ``auto`` pick it
    edge_blocks: tuple[int, int] = (0, 0)  # first/last blocks it leaves to SDPA unless the user says
    available: Optional[str] = None  # a function of the module: (device) -> whether it runs there
    fn: Optional[Callable] = None    # the function itself (test doubles), instead of module.function

    def unusable_on(self, device: torch.device, capability: Optional[tuple[int, int]]) -> Optional[str]:
        if device.type not in self.devices:
            return f"{self.name} does not run on {device.type}"
        if capability is None:
            return None
        needs = (" or ".join("sm%d%d" % c for c in sorted(self.capabilities)) if self.capabilities
                 else "sm%d%d or newer" % self.min_capability)
        fits = capability in self.capabilities if self.capabilities else capability >= self.min_capability
        return None if fits else f"{self.label} needs {needs}; this GPU is sm{capability[0]}{capability[1]}"


@dataclasses.dataclass(frozen=True)
class Bound:
    """A backend found in its installed library, ready to call."""
    backend: Backend
    fn: Callable
    version: str

    @property
    def name(self) -> str:
        return self.backend.name

    def __call__(self, call, settings) -> tuple[torch.Tensor, str]:
        """The kernel's output and its layout: the call's own where the kernel takes it, else HND."""
        layout = call.layout if call.layout in self.backend.layouts else "HND"
        q, k, v = call.views(layout)
        # SageAttention 2 calls torch.cuda.set_device itself: the guard restores the caller's.
        with torch.cuda.device(q.device) if q.is_cuda else contextlib.nullcontext():
            return self.backend.run(self.fn, q, k, v, call, layout, settings), layout


@dataclasses.dataclass(frozen=True)
class Resolution:
    """The kernel bound for one kernel choice on one device, or None and why not."""
    bound: Optional[Bound]
    why: str


# Filled at import by the modules below; never changed after.
REGISTRY: dict[str, Backend] = {}

# Compute capability -> what ``auto`` tries there, the first that binds wins. SageAttention 2 as
# its own sageattn dispatches (sageattention/core.py), except: sm86 takes the CUDA kernel with
# fp32 P.V accumulation, not the fp16 Triton one (Qwen-Image renders black with it, ComfyUI
# #9773); sm120/121 take it too, not FP8 P.V (noise past ~160k tokens, ComfyUI #15263); sm87 and
# sm100, which upstream's sageattn refuses, try the same CUDA kernel. Then SageAttention 1's one
# kernel, then comfy-kitchen's INT8 (where no SageAttention is installed). SageAttention 3 (FP4)
# is never chosen here: it changes images more, so it runs only where the user picks it.
AUTO = {
    (7, 5): ("kitchen_int8",),
    (8, 0): ("sage2_fp16_cuda", "sage1_triton", "kitchen_int8"),
    (8, 6): ("sage2_fp16_cuda", "sage1_triton", "kitchen_int8"),
    (8, 7): ("sage2_fp16_cuda", "sage1_triton", "kitchen_int8"),
    (8, 9): ("sage2_fp8_cuda", "sage1_triton", "kitchen_int8"),
    (9, 0): ("sage2_fp8_sm90", "sage1_triton", "kitchen_int8"),
    (10, 0): ("sage2_fp16_cuda", "sage1_triton", "kitchen_int8"),
    (12, 0): ("sage2_fp16_cuda", "sage1_triton", "kitchen_int8"),
    (12, 1): ("sage2_fp16_cuda", "sage1_triton", "kitchen_int8"),
}


def register(*found: Backend) -> None:
    REGISTRY.update((backend.name, backend) for backend in found)


def import_module(name: str):
    return importlib.import_module(name)


def distribution_version(module: str) -> Optional[str]:
    for name in (module, module.replace("_", "-")):
        with contextlib.suppress(importlib.metadata.PackageNotFoundError):
            return importlib.metadata.version(name)
    return None


def missing_parameters(fn: Callable, names) -> list[str]:
    """Names ``fn`` does not declare (a ``**kwargs`` catch-all does not count)."""
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return list(names)
    declared = {n for n, p in params.items() if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}
    return [n for n in names if n not in declared]


@dataclasses.dataclass(frozen=True)
class Finder:
    """How a session finds kernels: imports, distribution versions and GPU capabilities (a test
    hands in doubles of each)."""
    modules: Callable[[str], object]
    versions: Callable[[str], Optional[str]]
    capability: Callable[[torch.device], tuple[int, int]]

    def resolve(self, choice: str, device: torch.device, lookup: Callable[[str], Optional[Backend]]) -> Resolution:
        capability = self.capability(device) if device.type == "cuda" else None
        if choice != "auto":
            backend = lookup(choice)
            bound = self.bind(backend, device, capability) if backend else f"no kernel is called {choice!r}"
            return Resolution(bound, f"{choice} chosen") if isinstance(bound, Bound) else Resolution(None, bound)
        if capability is None:
            return Resolution(None, f"SageAttention needs a CUDA device, got {device}")
        tried = []
        for name in AUTO.get(capability, AUTO[(8, 0)] if capability >= (8, 0) else ()):
            bound = self.bind(lookup(name), device, capability)
            if isinstance(bound, Bound):
                return Resolution(bound, f"auto: sm{capability[0]}{capability[1]} -> {name}")
            tried.append(bound)
        return Resolution(None, "auto: " + ("; ".join(tried) or f"no kernel for sm{capability[0]}{capability[1]}"))

    def bind(self, backend: Backend, device: torch.device, capability) -> Bound | str:
        """``backend`` bound to its installed function for ``device``, or why it cannot be."""
        why = backend.unusable_on(device, capability)
        if why:
            return why
        fn, version = backend.fn, self.label(backend)
        if fn is None:
            try:
                module = self.modules(backend.module)
            except Exception as exc:  # noqa: BLE001 - a broken build or a missing Triton must not break loading
                return f"{backend.module} is not installed or failed to import: {exc!r}"[:300]
            fn = getattr(module, backend.function, None)
            if fn is None:
                return f"{version} does not export {backend.function}"
            if backend.available and not getattr(module, backend.available)(device):
                return f"{version}: {backend.function} does not run on {device}"
        missing = missing_parameters(fn, backend.params)
        if missing:
            return f"{backend.function} of {version} does not take {', '.join(missing)}; not passing arguments it would ignore"
        return Bound(backend, fn, version)

    def label(self, backend: Backend) -> str:
        """The library and its version as its distribution says; where that disagrees with the API
        found in the module, both (a SageAttention 2 build whose metadata says 1.0.6)."""
        if not backend.module:  # a function handed over as it is (a test double)
            return backend.library
        version, major = self.versions(backend.module), re.search(r"(\d+)$", backend.library)
        if version is None:
            return f"{backend.library}, version unknown (no distribution metadata for {backend.module})"
        if major and not version.startswith(major.group(1)):
            return f"{backend.library} (its distribution metadata says {backend.module} {version})"
        return f"{backend.library} ({backend.module} {version})"

    def libraries(self) -> dict[str, Optional[str]]:
        """Each kernel library the pack knows, and its installed version (None: not installed)."""
        return {b.module: self.versions(b.module) for b in REGISTRY.values()}


from . import kitchen, sage1, sage2, sage3  # noqa: E402,F401 - each registers its backends
