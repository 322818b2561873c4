"""Named test doubles for the kernel boundary, the only thing a CPU test replaces.

``reference_attention`` computes real attention (fp32 SDPA) in the layout SageAttention takes;
the other doubles wrap it to misbehave in one specific way. ``sageattention2_module``,
``sageattn3_blackwell`` and ``int8_attention`` stand in for the real libraries with their real
signatures.

A kernel double reaches a session through its Finder, as the pack's own kernels do: ``add_kernel`` (or
``registered``) gives the session's knowledge a ``DoublesFinder``, which knows the double's declaration by
name, imports its module double, and binds it on the device types it is declared for, the CPU among them.
"""
from __future__ import annotations

import contextlib
import dataclasses
import types
from typing import Callable, Mapping, Optional

import torch
import torch.nn.functional as F

from sage_attention_scope.patches import backends
from sage_attention_scope.patches.backends import sage1

ALL_DTYPES = frozenset({torch.float32, torch.float16, torch.bfloat16})
ANY_HEAD_DIM = frozenset(range(1, 513))
SA_PARAMS = ("tensor_layout", "is_causal", "sm_scale", "smooth_k")
CPU_AND_CUDA = frozenset({"cpu", "cuda"})
# The capability a double binds with where the session's Finder gives a device none (the CPU): the oldest GPU
# the pack's kernels take. Only the doubles get it: ``auto`` and ``exact`` still find no GPU on the CPU.
CPU_AS_GPU = (8, 0)


def reference_attention(q, k, v, tensor_layout="HND", is_causal=False, sm_scale=None, smooth_k=False):
    if tensor_layout == "NHD":
        q, k, v = (t.transpose(1, 2) for t in (q, k, v))
    out = F.scaled_dot_product_attention(q.float(), k.float(), v.float(), is_causal=is_causal, scale=sm_scale)
    out = out.to(q.dtype)
    return out.transpose(1, 2) if tensor_layout == "NHD" else out


class RecordingKernel:
    """Callable with SageAttention's signature; records what it received, then behaves."""

    def __init__(self, behave=reference_attention):
        self.behave = behave
        self.calls = []

    def __call__(self, q, k, v, tensor_layout="HND", is_causal=False, sm_scale=None, smooth_k=False):
        self.calls.append({"q": q, "k": k, "v": v, "layout": tensor_layout, "sm_scale": sm_scale,
                           "smooth_k": smooth_k, "device": torch.cuda.current_device() if q.is_cuda else None})
        return self.behave(q, k, v, tensor_layout=tensor_layout, is_causal=is_causal, sm_scale=sm_scale,
                           smooth_k=smooth_k)


@dataclasses.dataclass(frozen=True)
class KernelDouble:
    """A kernel as the harness hands it to a session: its declaration, the module double its function is found
    in (None: the session's Finder imports the declared module), and the device types it binds on."""
    backend: backends.Backend
    module: Optional[object] = None
    devices: frozenset = CPU_AND_CUDA

    name = property(lambda self: self.backend.name)

    @property
    def function(self) -> Callable:
        """Its function, from its module double."""
        return getattr(self.module, self.backend.function)


def kernel_double(backend: backends.Backend, module=None, devices=CPU_AND_CUDA) -> KernelDouble:
    """``backend`` as a double bound on ``devices``. With a ``module`` double, the declaration names a module of its
    own, so that a double of one library function leaves the library's other kernels to the session's imports."""
    if module is not None:
        backend = dataclasses.replace(backend, module=f"{__name__}.{backend.name}")
    return KernelDouble(backend, module, frozenset(devices))


def make_kernel(name: str, function, *, devices=CPU_AND_CUDA, dtypes=ALL_DTYPES, head_dims=ANY_HEAD_DIM,
                smooth_k_in_place=False, **declared) -> KernelDouble:
    """A kernel the pack does not ship whose function is ``function`` (SageAttention's signature), called as
    SageAttention 1 is (``smooth_k_in_place``: it smooths a copy itself) or as 2's Triton kernel is (no fixed
    arguments); bound on ``devices``."""
    backend = backends.Backend(
        name=name, label=f"{name} (test double)", library="test double", module=f"{__name__}.{name}", function=name,
        params=SA_PARAMS, run=sage1.run if smooth_k_in_place else backends.REGISTRY["sage2_fp16_triton"].run,
        head_dims=frozenset(head_dims), dtypes=frozenset(dtypes), version_function="version", **declared)
    return KernelDouble(backend, library(**{name: function, "version": lambda: "test double"}), frozenset(devices))


def machine_finder(modules: Mapping[str, object], capability=(9, 0), versions=lambda module: None) -> backends.Finder:
    """The Finder of a machine whose libraries are ``modules`` (name -> module double; a name absent, or None or
    False, is not installed; an exception fails its import as it would) and whose every device is a GPU of
    ``capability``: the CPU too, where the tests' tensors are, so the pack's own declarations bind there."""
    def module(name: str):
        found = modules.get(name)
        if not found:
            raise ImportError(f"No module named {name!r}")
        if isinstance(found, Exception):
            raise found
        return found
    return backends.Finder(module, versions, lambda device: capability)


@dataclasses.dataclass(frozen=True)
class DoublesFinder(backends.Finder):
    """A session's own Finder (``base``) with kernel doubles: their declarations known by name beside the pack's,
    their module doubles imported from here, each bound on the device types it is declared for."""
    base: backends.Finder = backends.Finder()
    doubles: Mapping[str, KernelDouble] = dataclasses.field(default_factory=dict)

    def bind(self, backend: backends.Backend, device: torch.device, capability) -> backends.Binding:
        double = self.doubles.get(backend.name)
        if double is None:
            return super().bind(backend, device, capability)
        if device.type not in double.devices:
            return backends.Binding(None, f"{backend.name} does not run on {device.type}")
        return super().bind(backend, device, CPU_AS_GPU if capability is None else capability)


def finder_with(base: backends.Finder, doubles: Mapping[str, KernelDouble]) -> backends.Finder:
    """``base`` with ``doubles`` (name -> double) handed in; ``base`` itself where there are none."""
    if not doubles:
        return base
    module_doubles = {double.backend.module: double.module for double in doubles.values() if double.module is not None}

    def module(name: str):
        return module_doubles[name] if name in module_doubles else base.modules(name)
    kernels = {**base.kernels, **{name: double.backend for name, double in doubles.items()}}
    return DoublesFinder(modules=module, versions=base.versions, capability=base.capability,
                         kernels=types.MappingProxyType(kernels), base=base, doubles=dict(doubles))


def hand_in(knowledge, doubles: Mapping[str, KernelDouble]) -> None:
    """``knowledge`` finding kernels with its own Finder and ``doubles``; what it resolved before is found again,
    and what it decided is decided again."""
    with knowledge.lock:
        knowledge.finder = finder_with(getattr(knowledge.finder, "base", knowledge.finder), doubles)
        knowledge.resolutions.clear()
        knowledge.version += 1


def add_kernel(knowledge, double: KernelDouble | backends.Backend) -> None:
    """``double`` (or a declaration, bound on the CPU and CUDA) known to ``knowledge`` as if the pack shipped it."""
    double = double if isinstance(double, KernelDouble) else KernelDouble(double)
    if hasattr(knowledge, "registry") or hasattr(knowledge, "add_backend"):
        add_to_earlier_tree(knowledge, double)
        return
    hand_in(knowledge, {**getattr(knowledge.finder, "doubles", {}), double.name: double})


def remove_kernel(knowledge, name: str) -> None:
    """The kernel ``name`` taken back from ``knowledge`` (add_kernel's undoing)."""
    if hasattr(knowledge, "registry") or hasattr(knowledge, "add_backend"):
        remove_from_earlier_tree(knowledge, name)
        return
    hand_in(knowledge, {other: double for other, double in getattr(knowledge.finder, "doubles", {}).items()
                        if other != name})


# An earlier tree of the pack, run side by side by a benchmark (bench/router_cost.py --compare), takes a double
# as its own declaration with the function handed over (``fn``) and the device types it runs on (``devices``),
# into the copy of the registry its knowledge keeps (``registry``) or, earlier still, through ``add_backend``.

def add_to_earlier_tree(knowledge, double: KernelDouble) -> None:
    backend = double.backend
    if double.module is not None:
        backend = dataclasses.replace(backend, module="", fn=double.function)
    backend = dataclasses.replace(backend, devices=double.devices)
    if hasattr(knowledge, "add_backend"):
        knowledge.add_backend(backend)
        return
    with knowledge.lock:
        knowledge.registry[backend.name] = backend
        knowledge.resolutions.clear()
        knowledge.version += 1


def remove_from_earlier_tree(knowledge, name: str) -> None:
    if hasattr(knowledge, "add_backend"):
        knowledge.add_backend(None, name)
        return
    with knowledge.lock:
        knowledge.registry.pop(name, None)
        knowledge.resolutions.clear()
        knowledge.version += 1


@contextlib.contextmanager
def registered(session, double: KernelDouble | backends.Backend):
    """``double`` known to ``session`` for the block, and taken back after it."""
    add_kernel(session.knowledge, double)
    try:
        yield double
    finally:
        remove_kernel(session.knowledge, double.name)


def raising(exc_factory):
    def behave(q, k, v, **kwargs):
        raise exc_factory()
    return behave


def noisy(q, k, v, **kwargs):
    """Plausible-looking but wrong: what SageAttention 1.0.6 does at key length 77."""
    out = reference_attention(q, k, v, **kwargs)
    return out + torch.randn_like(out) * out.std() * 0.5


def with_nan(out: torch.Tensor) -> torch.Tensor:
    """``out`` with one NaN in it."""
    out = out.clone()
    out[(0,) * out.ndim] = float("nan")
    return out


def non_finite(q, k, v, **kwargs):
    return with_nan(reference_attention(q, k, v, **kwargs))


def nan_from_the_second_output() -> Callable[[torch.Tensor], torch.Tensor]:
    """An output transform: the first output as it is (the one the check compares with ComfyUI's), every
    later one with a NaN in it."""
    calls = []

    def spoil(out):
        calls.append(1)
        return out if len(calls) == 1 else with_nan(out)
    return spoil


def nan_after_first_call():
    """A kernel right on its first call (which the check compares with SDPA), NaN on every later one."""
    spoil = nan_from_the_second_output()
    return lambda q, k, v, **kwargs: spoil(reference_attention(q, k, v, **kwargs))


def wrong_shape(q, k, v, **kwargs):
    return reference_attention(q, k, v, **kwargs)[..., :-1]


def smoothing_in_place(q, k, v, tensor_layout="HND", is_causal=False, sm_scale=None, smooth_k=True):
    """Like sageattention 1.0.6: with smooth_k it writes k in place."""
    if smooth_k:
        k -= k.mean(dim=2 if tensor_layout == "HND" else 1, keepdim=True)
    return reference_attention(q, k, v, tensor_layout=tensor_layout, sm_scale=sm_scale)


# -- stand-ins for the libraries themselves, with their real signatures -----------------------

def sageattention2_module(calls: list | None = None, spoil: Callable = lambda out: out):
    """A ``sageattention`` module as SageAttention 2.2 exports it: one function per kernel family
    with 2.2's signatures, each computing real attention and noting its own name in ``calls``;
    ``spoil`` is applied to every output (a library that misbehaves: library_doubles.py)."""
    calls = [] if calls is None else calls

    def kernel(name):
        def fn(q, k, v, tensor_layout="HND", is_causal=False, qk_quant_gran="per_thread", sm_scale=None,
               pv_accum_dtype="fp32+fp32", smooth_k=True, smooth_v=False, return_lse=False, **kwargs):
            calls.append(name)
            return spoil(reference_attention(q, k, v, tensor_layout=tensor_layout, sm_scale=sm_scale))
        fn.__name__ = name
        return fn

    def sageattn(q, k, v, tensor_layout="HND", is_causal=False, sm_scale=None, return_lse=False, **kwargs):
        raise AssertionError("SageAttention 2's sageattn swallows arguments: the pack never calls it")

    names = ("sageattn_qk_int8_pv_fp16_cuda", "sageattn_qk_int8_pv_fp16_triton", "sageattn_qk_int8_pv_fp8_cuda",
             "sageattn_qk_int8_pv_fp8_cuda_sm90")
    return types.SimpleNamespace(sageattn=sageattn, calls=calls, **{name: kernel(name) for name in names})


def sageattn3_blackwell(q, k, v, attn_mask=None, is_causal=False, per_block_mean=True, **kwargs):
    """SageAttention 3's entry point: HND, scale D ** -0.5, the mask ignored, and k's mean
    subtracted from k in place, as the real one does."""
    k -= k.mean(dim=-2, keepdim=True)
    return F.scaled_dot_product_attention(q.float(), k.float(), v.float(), is_causal=is_causal).to(q.dtype)


def int8_attention(q, k, v, *, scale=None, attn_mask=None):
    """comfy-kitchen's ``int8_attention``, validating its inputs as comfy_kitchen/sage_attention.py's
    ``_validate_inputs`` does (all but the CUDA device), then real attention with the mask."""
    if q.ndim != 4 or k.ndim != 4 or v.ndim != 4:
        raise ValueError("q, k, and v must have shape [batch, heads, sequence, head_dim]")
    if q.dtype not in ALL_DTYPES or not q.dtype == k.dtype == v.dtype:
        raise TypeError("q, k, and v must be float32, float16, or bfloat16 and alike, "
                        f"got {q.dtype}, {k.dtype}, {v.dtype}")
    batch, heads, q_len, head_dim = q.shape
    _, kv_heads, kv_len, _ = k.shape
    if v.shape != (batch, kv_heads, kv_len, head_dim) or k.shape[0] != batch or k.shape[-1] != head_dim:
        raise ValueError(f"mismatched q/k/v shapes {tuple(q.shape)}, {tuple(k.shape)}, {tuple(v.shape)}")
    if head_dim > 256:
        raise ValueError(f"head_dim must be in [1, 256], got {head_dim}")
    if q.stride(-1) != 1 or k.stride(-1) != 1 or v.stride(-1) != 1:
        raise ValueError("the last dimension of q, k, and v must be contiguous")
    if attn_mask is not None:
        if attn_mask.dtype not in (torch.bool, torch.float16, torch.bfloat16, torch.float32):
            raise TypeError("attn_mask must be bool, float16, bfloat16, or float32")
        try:
            attn_mask = torch.broadcast_to(attn_mask, (batch, heads, q_len, kv_len))
        except RuntimeError as error:
            raise ValueError(f"attn_mask must be broadcastable to [{batch}, {heads}, {q_len}, {kv_len}], "
                             f"got {tuple(attn_mask.shape)}") from error
        attn_mask = attn_mask if attn_mask.dtype == torch.bool else attn_mask.float()
    return F.scaled_dot_product_attention(q.float(), k.float(), v.float(), attn_mask=attn_mask,
                                          scale=scale).to(q.dtype)


def int8_attention_is_available(device=None) -> bool:
    return True


def library(**functions):
    """A module double holding ``functions`` (e.g. a comfy_kitchen with ``int8_attention``)."""
    return types.SimpleNamespace(**functions)


class CrossoverClock:
    """A clock on which the kernel takes 1 ms and SDPA 2 ms from the work of a ``tokens``-token
    self-attention on (query x key tokens, by the bucket), and the kernel 3 ms below: a GPU where the
    kernel pays from there, as SageAttention 2 pays on the H200 from 12-16k tokens of self-attention
    and not on a long query over a few hundred keys (its fixed cost a call stays)."""

    def __init__(self, tokens: int, reversed_=False):
        self.tokens, self.reversed = tokens, reversed_

    def __call__(self, arm, fn, device, bucket):
        kernel_wins = (bucket.q_bucket * bucket.kv_bucket >= self.tokens ** 2) != self.reversed
        if arm == "comfy":
            return 2.0
        return 1.0 if kernel_wins else 3.0


class FakeClock:
    """A deterministic clock for measured routing: each arm takes the milliseconds given (every kernel
    ``kernel_ms``, ComfyUI's attention ``comfy_ms``, or a kernel named in ``per_kernel`` its own).
    ``run_arms`` also calls the arm once, so a raising kernel raises while being timed."""

    def __init__(self, kernel_ms=1.0, comfy_ms=2.0, run_arms=False, per_kernel=None):
        self.ms = {"kernel": kernel_ms, "comfy": comfy_ms}
        self.per_kernel = dict(per_kernel or {})
        self.run_arms = run_arms
        self.timed: list[str] = []

    def __call__(self, arm, fn, device, bucket=None):
        self.timed.append(arm)
        if self.run_arms:
            fn()
        if arm == "kernel" and bucket is not None and bucket.kernel in self.per_kernel:
            return self.per_kernel[bucket.kernel]
        return self.ms[arm]


class FakeStepClock:
    """A step clock for the step trial that times on any device (the CPU too): an evaluation with the Scope
    takes ``scope_ms``, one without it ``comfy_ms``; each is run. A list gives each arm's times in turn, as a
    noisy small model's steps come."""

    def __init__(self, scope_ms: float | list[float], comfy_ms: float | list[float]):
        self.ms = {"scope": scope_ms, "comfy": comfy_ms}
        self.timed: list[str] = []

    @staticmethod
    def times(device) -> bool:
        return True

    def __call__(self, arm, run, device):
        self.timed.append(arm)
        ms = self.ms[arm]
        return run(), ms.pop(0) if isinstance(ms, list) else ms


def torch_sdpa_module(calls: list | None = None, behave=None, spoil: Callable = lambda out: out):
    """The pack's torch_sdpa module as the Finder imports it: cuDNN, flash and memory-efficient attention,
    each with its real signature ``(q, k, v, attn_mask=None, scale=None)``, computing real attention (fp32
    SDPA) and noting its name in ``calls``; ``behave`` (name -> a function of that signature) replaces
    one; ``spoil`` is applied to every output. Each runs anywhere, as the CPU tests need."""
    calls = [] if calls is None else calls
    behave = dict(behave or {})

    def exact(q, k, v, attn_mask=None, scale=None):
        if attn_mask is not None and attn_mask.is_floating_point():
            attn_mask = attn_mask.float()
        return F.scaled_dot_product_attention(q.float(), k.float(), v.float(), attn_mask=attn_mask,
                                              scale=scale).to(q.dtype)

    def kernel(name):
        def fn(q, k, v, attn_mask=None, scale=None):
            calls.append(name)
            return spoil(behave.get(name, exact)(q, k, v, attn_mask=attn_mask, scale=scale))
        fn.__name__ = name
        return fn

    names = ("cudnn_attention", "flash_attention", "efficient_attention")
    available = {f"{n.split('_')[0]}_available": (lambda device: True) for n in names}
    return types.SimpleNamespace(calls=calls, torch_version=lambda: "PyTorch (test double)",
                                 **{n: kernel(n) for n in names}, **available)
