"""Attention kernel backends: each module here declares what one kernel takes and how it is
called (``Backend``) and registers it at import. The engine never names a backend.

A backend is found in its library by function name and bound only where that function declares
every argument the adapter passes (a ``**kwargs`` catch-all does not count): which SageAttention
is installed is read from the module itself, its distribution metadata only labels it.
"""
from __future__ import annotations

import contextlib
import dataclasses
import importlib
import inspect
from typing import Callable, Optional

import torch

HALF = frozenset({torch.float16, torch.bfloat16})
BOTH_LAYOUTS = frozenset({"HND", "NHD"})


@dataclasses.dataclass(frozen=True)
class Backend:
    name: str                        # the node's kernel choice
    label: str                       # in words: tooltip and status
    library: str                     # what it belongs to, e.g. "SageAttention 2"
    module: str                      # where its function lives
    function: str
    params: tuple[str, ...]          # arguments ``run`` passes by name
    run: Callable                    # run(fn, q, k, v, call, layout, settings) -> output in layout
    head_dims: frozenset[int]
    dtypes: frozenset = HALF
    layouts: frozenset = BOTH_LAYOUTS
    masks: bool = False              # takes an attention mask as SDPA does
    custom_scale: bool = True        # takes a softmax scale other than head_dim ** -0.5
    min_capability: tuple[int, int] = (8, 0)
    capabilities: Optional[frozenset] = None   # exactly these, where given
    devices: frozenset = frozenset({"cuda"})
    auto: bool = True                # may ``auto`` pick it
    fn: Optional[Callable] = None    # the function itself (test doubles), instead of module.function
    available: Optional[str] = None  # a function of the module: (device) -> whether it runs there

    def unusable_on(self, device: torch.device, capability: Optional[tuple[int, int]]) -> Optional[str]:
        if device.type not in self.devices:
            return f"{self.name} does not run on {device.type}"
        if device.type != "cuda" or capability is None:
            return None
        arch = "sm%d%d" % capability
        if self.capabilities is not None and capability not in self.capabilities:
            return (f"{self.label} needs " + "/".join("sm%d%d" % c for c in sorted(self.capabilities))
                    + f"; this GPU is {arch}")
        if capability < self.min_capability:
            return f"{self.label} needs sm{self.min_capability[0]}{self.min_capability[1]} or newer; this GPU is {arch}"
        return None


@dataclasses.dataclass(frozen=True)
class Bound:
    """A backend found in its installed library: ready to call."""
    backend: Backend
    fn: Callable
    version: str

    @property
    def name(self) -> str:
        return self.backend.name

    def __call__(self, call, settings, layout: str) -> torch.Tensor:
        q, k, v = call.views(layout)
        # SageAttention 2 calls torch.cuda.set_device itself: the guard restores the caller's.
        with torch.cuda.device(q.device) if q.is_cuda else contextlib.nullcontext():
            return self.backend.run(self.fn, q, k, v, call, layout, settings)


# Filled at import by the modules below; never changed after.
REGISTRY: dict[str, Backend] = {}

# Compute capability -> what ``auto`` tries there, the first that binds wins: SageAttention 2's
# own per-arch choice (its sageattn in sageattention/core.py), else SageAttention 1's one kernel.
AUTO = {
    (8, 0): ("sage2_fp16_cuda", "sage1_triton"),
    (8, 6): ("sage2_fp16_triton", "sage1_triton"),
    (8, 9): ("sage2_fp8_cuda", "sage1_triton"),
    (9, 0): ("sage2_fp8_sm90", "sage1_triton"),
    (12, 0): ("sage2_fp8_cuda_sm120", "sage1_triton"),
    (12, 1): ("sage2_fp8_cuda_sm120", "sage1_triton"),
}


def auto_candidates(capability: tuple[int, int]) -> tuple[str, ...]:
    return AUTO.get(capability, ("sage1_triton",) if capability >= (8, 0) else ())


def register(*backends: Backend) -> None:
    for backend in backends:
        REGISTRY[backend.name] = backend


def missing_parameters(fn: Callable, names) -> list[str]:
    """Names ``fn`` does not declare (a ``**kwargs`` catch-all does not count)."""
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return list(names)
    declared = {n for n, p in params.items() if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}
    return [n for n in names if n not in declared]


def bind(backend: Backend, device: torch.device, modules: Callable[[str], object],
         version: Callable[[Backend], str]) -> Bound | str:
    """The backend bound to its installed function for ``device``, or why it cannot be."""
    fn = backend.fn
    if fn is None:
        try:
            module = modules(backend.module)
        except Exception as exc:  # noqa: BLE001 - a broken build or missing Triton must not break loading
            return f"{backend.module} is not installed or failed to import: {exc!r}"[:300]
        fn = getattr(module, backend.function, None)
        if fn is None:
            return f"{backend.module} {version(backend)} does not export {backend.function}"
        if backend.available and not getattr(module, backend.available)(device):
            return f"{backend.module} {version(backend)} says its {backend.function} does not run on {device}"
    missing = missing_parameters(fn, backend.params)
    if missing:
        return (f"{backend.function} of {backend.module} {version(backend)} does not take {', '.join(missing)}; "
                f"refusing to pass arguments it would ignore")
    return Bound(backend, fn, version(backend))


def import_module(name: str):
    return importlib.import_module(name)


from . import kitchen, sage1, sage2, sage3  # noqa: E402,F401 - each registers its backends
