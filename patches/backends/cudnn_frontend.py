"""cuDNN's SDPA through its Python graph API (PyPI ``nvidia-cudnn-frontend``, ``import cudnn``): no compiler,
a graph per configuration instead. A graph declares q/k/v and the output as (B, H, N, D) with their real
strides (an NHD call's tensors as strided views, no copy), its dtypes and the softmax scale; it is built
once (validated, its execution plans ranked by heuristics A then FALLBACK, checked, the first that builds
kept) and run with a variant pack (tensors by uid) and a workspace, on the caller's stream.

``cudnn_fe_bf16``: ``graph.sdpa`` on fp16/bf16, an fp32 softmax, no quantising (exact); head sizes 8 to 256
in steps of 8, sm80 and newer.

``cudnn_fe_fp8``: ``graph.sdpa_fp8`` on FP8 E4M3 q, k and v, the output in the call's dtype: datacenter
Blackwell only (cuDNN builds an FP8 graph with a half or bfloat16 output there alone, and refuses it on Hopper
with "only supported on Blackwell"; its support matrix lists no FP8 for consumer Blackwell). Each of q, k and
v is quantised with one scale for the whole tensor, from its absolute maximum: the largest power of two that
keeps it within E4M3's 448, so scaling loses nothing but the cast. Where the node's ``smooth_k`` says, k is
smoothed first (each head's mean key subtracted, which the softmax ignores), so that an offset shared by the
keys does not take the range one scale has (a per-block scale, SageAttention's, suffers less from it). The
graph takes the three descales, the scale and descale of the softmax's probabilities (256: they lie in [0,
1]), and an output scale of 1 with the output in the call's dtype. Head sizes 16 to 256 in steps of 16.

Neither takes masks here: cuDNN adds a bias tensor, while ComfyUI also sends boolean masks; masked calls
keep ComfyUI's attention.

A binding (one per session, device and kernel choice, made by ``per_binding`` as the session binds the
kernel) keeps the graphs it built, bounded, and a cuDNN handle per thread, as cuDNN handles are not
thread-safe. The session's knowledge holds its bindings, so the graphs live as long as the session and no
module holds them (the Backend is the pack's, shared by every session). Building is paid by the first call
of a configuration, which the router makes before any timing (the first-call check's call, or under
measured routing each candidate's first run before the timed rounds), or for a new shape in a bucket
already decided, a plain kernel call, which the binding's count of builds (``builds``) shows the router;
each build is logged with its time."""
from __future__ import annotations

import dataclasses
import enum
import logging
import threading
import time
from typing import NamedTuple

import torch

from . import Backend, register

log = logging.getLogger(__name__)

E4M3_MAX = 448.0
PROBABILITY_SCALE = 256.0  # the softmax's probabilities lie in [0, 1]: the largest power of two within 448
MAX_SCALE = 2.0 ** 15  # q/k/v are scaled in their own dtype: a scale fp16 holds too
MAX_GRAPHS = 256  # per binding; the oldest goes first (each holds its plans)


class Uid(enum.IntEnum):
    """The graph's tensors, as the variant pack names them."""
    Q = 1
    K = 2
    V = 3
    OUT = 4
    DESCALE_Q = 5
    DESCALE_K = 6
    DESCALE_V = 7
    DESCALE_S = 8
    SCALE_S = 9
    SCALE_O = 10
    AMAX_O = 11


SCALARS = (Uid.DESCALE_Q, Uid.DESCALE_K, Uid.DESCALE_V, Uid.DESCALE_S, Uid.SCALE_S, Uid.SCALE_O)


class GraphKey(NamedTuple):
    """What a built graph is good for: the call's dtype, q/k/v's shapes, q/k/v/o's strides and the scale."""
    dtype: torch.dtype
    shapes: tuple
    strides: tuple
    scale: float


@dataclasses.dataclass(frozen=True)
class Built:
    graph: object
    workspace_bytes: int
    fixed: dict  # uid -> a device tensor every run binds (the FP8 graph's probability and output scales)


def current_stream(device: torch.device) -> int:
    """The caller's current stream on ``device``, as cuDNN takes it; 0 (no stream) off CUDA."""
    if device.type != "cuda":
        return 0
    return torch.cuda.current_stream(device).cuda_stream


def aligned(t: torch.Tensor) -> torch.Tensor:
    """``t``, or a copy where its data does not start on 16 bytes (cuDNN's kernels read it so)."""
    if t.data_ptr() % 16 == 0:
        return t
    return t.clone()


def quantised(t: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """``t`` in FP8 E4M3 with one scale for the whole tensor, and its descale as a (1, 1, 1, 1) fp32 tensor;
    on the device, without waiting for it. The scale is a power of two, so scaling in ``t``'s dtype is exact."""
    low, high = torch.aminmax(t)
    amax = torch.maximum(-low, high).float()
    scale = torch.exp2(torch.floor(torch.log2(E4M3_MAX / amax))).clamp(max=MAX_SCALE)
    return (t * scale).to(torch.float8_e4m3fn), (1.0 / scale).reshape(1, 1, 1, 1)


class SdpaGraphs:
    """One binding's cuDNN SDPA: the graphs it built, by configuration, and this thread's cuDNN handles.
    ``build`` makes one graph; ``__call__`` runs the call's."""

    def __init__(self, cudnn):
        self.cudnn = cudnn
        self.graphs: dict[GraphKey, Built] = {}
        self.builds = 0  # graphs built so far, evicted ones too (Bound.builds)
        self.building = threading.Lock()
        self.local = threading.local()  # .handles: device -> this thread's cuDNN handle there

    def handle(self, device: torch.device):
        """This thread's cuDNN handle on ``device`` (made there: the router runs kernels with it current)."""
        handles = getattr(self.local, "handles", None)
        if handles is None:
            handles = self.local.handles = {}
        if device not in handles:
            handles[device] = self.cudnn.create_handle()
        return handles[device]

    def graph(self, key: GraphKey, device: torch.device) -> Built:
        """The graph for ``key``, built at its first call (one build at a time)."""
        built = self.graphs.get(key)
        if built is not None:
            return built
        with self.building:
            built = self.graphs.get(key)
            if built is None:
                started = time.perf_counter()
                built = self.build(key, self.handle(device), device)
                self.graphs[key] = built
                self.builds += 1
                while len(self.graphs) > MAX_GRAPHS:
                    self.graphs.pop(next(iter(self.graphs)))
                log.info("cuDNN frontend: built the %s graph for %s %s on %s in %.0f ms (once per configuration)",
                         self.operation, key.dtype, "x".join(map(str, key.shapes[0])), device,
                         (time.perf_counter() - started) * 1e3)
        return built

    def execute(self, built: Built, tensors: dict, device: torch.device) -> None:
        handle = self.handle(device)
        self.cudnn.set_stream(handle=handle, stream=current_stream(device))
        workspace = torch.empty(max(built.workspace_bytes, 1), dtype=torch.uint8, device=device)
        built.graph.execute({**tensors, **built.fixed}, workspace, handle=handle)

    def io_type(self, dtype: torch.dtype):
        data_type = self.cudnn.data_type
        return data_type.BFLOAT16 if dtype == torch.bfloat16 else data_type.HALF

    def new_graph(self, io_type, handle):
        data_type = self.cudnn.data_type
        return self.cudnn.pygraph(io_data_type=io_type, intermediate_data_type=data_type.FLOAT,
                                  compute_data_type=data_type.FLOAT, handle=handle)

    def declare_output(self, out, key: GraphKey) -> None:
        """The graph's output: q's shape, the strides it is run with, the call's dtype."""
        out.set_uid(Uid.OUT).set_output(True).set_dim(list(key.shapes[0])).set_stride(list(key.strides[3]))
        out.set_data_type(self.io_type(key.dtype))

    def built(self, graph, fixed: dict) -> Built:
        """``graph`` built: its plans ranked by heuristics A then FALLBACK, the first that builds kept."""
        graph.build([self.cudnn.heur_mode.A, self.cudnn.heur_mode.FALLBACK])
        return Built(graph, graph.get_workspace_size(), fixed)


class HalfSdpa(SdpaGraphs):
    """cuDNN SDPA on the call's fp16/bf16 q, k and v."""
    operation = "SDPA"

    def __call__(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, scale: float) -> torch.Tensor:
        q, k, v = aligned(q), aligned(k), aligned(v)
        out = torch.empty_like(q)  # q's strides: an NHD call's output as the same view
        key = GraphKey(q.dtype, (q.shape, k.shape, v.shape), (q.stride(), k.stride(), v.stride(), out.stride()),
                       scale)
        built = self.graph(key, q.device)
        self.execute(built, {Uid.Q: q, Uid.K: k, Uid.V: v, Uid.OUT: out}, q.device)
        return out

    def build(self, key: GraphKey, handle, device: torch.device) -> Built:
        io_type = self.io_type(key.dtype)
        graph = self.new_graph(io_type, handle)
        q, k, v = (graph.tensor(name=uid.name.lower(), dim=list(shape), stride=list(stride), data_type=io_type,
                                uid=uid)
                   for uid, shape, stride in zip((Uid.Q, Uid.K, Uid.V), key.shapes, key.strides))
        out, _stats = graph.sdpa(name="sdpa", q=q, k=k, v=v, attn_scale=key.scale, generate_stats=False)
        self.declare_output(out, key)
        return self.built(graph, {})


class Fp8Sdpa(SdpaGraphs):
    """cuDNN FP8 SDPA: q, k and v quantised per tensor, the output in the call's dtype."""
    operation = "FP8 SDPA"

    def __call__(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, scale: float) -> torch.Tensor:
        (q8, descale_q), (k8, descale_k), (v8, descale_v) = quantised(q), quantised(k), quantised(v)
        out = torch.empty_like(q)
        key = GraphKey(q.dtype, (q.shape, k.shape, v.shape), (q8.stride(), k8.stride(), v8.stride(), out.stride()),
                       scale)
        built = self.graph(key, q.device)
        amax_o = torch.empty((1, 1, 1, 1), dtype=torch.float32, device=q.device)
        self.execute(built, {Uid.Q: q8, Uid.K: k8, Uid.V: v8, Uid.DESCALE_Q: descale_q, Uid.DESCALE_K: descale_k,
                             Uid.DESCALE_V: descale_v, Uid.OUT: out, Uid.AMAX_O: amax_o}, q.device)
        return out

    def build(self, key: GraphKey, handle, device: torch.device) -> Built:
        data_type = self.cudnn.data_type
        graph = self.new_graph(data_type.FP8_E4M3, handle)
        q, k, v = (graph.tensor(name=uid.name.lower(), dim=list(shape), stride=list(stride),
                                data_type=data_type.FP8_E4M3, uid=uid)
                   for uid, shape, stride in zip((Uid.Q, Uid.K, Uid.V), key.shapes, key.strides))
        scalars = {uid: graph.tensor(name=uid.name.lower(), dim=[1, 1, 1, 1], stride=[1, 1, 1, 1],
                                     data_type=data_type.FLOAT, uid=uid) for uid in SCALARS}
        out, _stats, _amax_s, amax_o = graph.sdpa_fp8(
            name="sdpa_fp8", q=q, k=k, v=v, descale_q=scalars[Uid.DESCALE_Q], descale_k=scalars[Uid.DESCALE_K],
            descale_v=scalars[Uid.DESCALE_V], descale_s=scalars[Uid.DESCALE_S], scale_s=scalars[Uid.SCALE_S],
            scale_o=scalars[Uid.SCALE_O], attn_scale=key.scale, generate_stats=False)
        amax_o.set_uid(Uid.AMAX_O).set_output(True).set_dim([1, 1, 1, 1]).set_stride([1, 1, 1, 1])
        amax_o.set_data_type(data_type.FLOAT)
        self.declare_output(out, key)
        fixed = {uid: torch.full((1, 1, 1, 1), value, dtype=torch.float32, device=device) for uid, value in
                 ((Uid.DESCALE_S, 1.0 / PROBABILITY_SCALE), (Uid.SCALE_S, PROBABILITY_SCALE), (Uid.SCALE_O, 1.0))}
        return self.built(graph, fixed)


def half_graphs(module, pygraph) -> HalfSdpa:
    return HalfSdpa(module)


def fp8_graphs(module, pygraph) -> Fp8Sdpa:
    return Fp8Sdpa(module)


def softmax_scale(call, q: torch.Tensor) -> float:
    """The call's softmax scale; cuDNN applies none unless told (the head size is q's last dimension)."""
    if call.scale is not None:
        return float(call.scale)
    return q.shape[-1] ** -0.5


def run(fn, q, k, v, call, layout, settings):
    return fn(q, k, v, softmax_scale(call, q))


def run_fp8(fn, q, k, v, call, layout, settings):
    """The FP8 graph on the call, k smoothed first where the settings say (softmax ignores a per-head shift)."""
    if settings.smooth_k:
        k = k - k.mean(dim=2, keepdim=True)
    return fn(q, k, v, softmax_scale(call, q))


GRAPH_PARAMS = ("io_data_type", "intermediate_data_type", "compute_data_type", "handle")


def _backend(name: str, label: str, **declared) -> Backend:
    return Backend(name=name, label=f"cuDNN frontend {label}", library="cuDNN frontend", module="cudnn",
                   function="pygraph", params=GRAPH_PARAMS, layouts=frozenset({"HND"}), transposed_views=True,
                   version_function="backend_version_string", **declared)


register(
    _backend("cudnn_fe_bf16", "SDPA (graph API, exact)", run=run, head_dims=frozenset(range(8, 257, 8)),
             exact=True, per_binding=half_graphs),
    _backend("cudnn_fe_fp8", "FP8 SDPA (graph API, per-tensor FP8 Q/K/V)", run=run_fp8,
             head_dims=frozenset(range(16, 257, 16)), capabilities=frozenset({(10, 0), (10, 3)}),
             per_binding=fp8_graphs),
)
