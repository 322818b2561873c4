"""Per-call probe of the fast attention libraries, each called directly (not through the pack), so that its
table is a measure independent of the pack's routing and adapters.

    python bench/kernel_probe.py [--small] [--only WORD ...] [--rep-ms 200] [--out DIR]

Shapes (bf16, B=1, head size 128, one joint self-attention call): FLUX.1 at 1024² and 2048² (24 heads, 64×64
or 128×128 image tokens after the text's 512), Wan 2.1 14B at 832×480×81 (40 heads, 21×30×52 = 32760
tokens, no text: its text is a cross-attention) and HunyuanVideo at 848×480×73 (24 heads, 19×30×53 = 30210
video tokens, then 256 text tokens). --only keeps the shapes whose label holds one of the words given.

Arms, each in its library's own layout, the inputs made contiguous in it before any timing:
- ``ComfyUI 0.33``: torch SDPA as ComfyUI 0.33's comfy/ops.py calls it: under ``sdpa_kernel([FLASH, CUDNN,
  EFFICIENT, MATH], set_priority=True)`` on CUDA for calls of 1024·128 elements or more, plain SDPA below
  that and without CUDA;
- ``torch default``: plain SDPA, torch's own choice (ComfyUI 0.3.75);
- ``sdpa cuDNN``, ``sdpa flash``: torch SDPA pinned to that backend alone;
- ``SageAttention 2``: ``sageattention.sageattn`` (its own dispatch: INT8 Q·K, FP8 P·V on Hopper);
- ``FA4``: ``flash_attn.cute.flash_attn_func`` (FlashAttention 4, CuTe DSL), bf16, (B, N, H, D);
- ``FA4 on HND views``: the same on (B, H, N, D) tensors as the pack hands a (B, H, N, D) call to it: their
  (B, N, H, D) views, no copy (strided; whether that costs FA4 its lead over cuDNN is what this arm shows);
- ``cuDNN FE bf16`` and ``cuDNN FE FP8``: the cuDNN frontend's SDPA graph, built at the arm's first call
  for the shape and reused; FP8 quantises q, k and v per tensor to E4M3 inside every call (amax on the GPU),
  P with a fixed scale of 448 (it lies in [0, 1]), and gives bf16 out where cuDNN builds that, else E4M3 out
  scaled back;
- ``sol_attn ...``: comfy-kitchen's sparse Sol-Attn at tau 1.0, tau 0.5 and top-k 0.1, in (B, N, H, D),
  the text's blocks kept exact as the pack keeps them (sinks every query attends, queries that attend all).

Per arm and shape: the median ms of a call (``triton.testing.do_bench``, --rep-ms of timed calls after its
warm-up, the L2 cache flushed between calls, the calls taking turns over three input sets), the first
call's wall time apart (compiling, building the graph, loading), and the accuracy of the output against
fp32 SDPA (relative L2 and cosine) on random q, k, v (standard normal) and on positional ones. Positional
inputs make attention local, as rotary position embeddings do: a head's q and k of an image or video
token are random Fourier features of the token's place on its latent grid, cos and sin of w·p for D/2
random frequency vectors w (scale 1/L, L from 1 to 8 tokens, one L per head), scaled so that a token's q·k
with itself is 12 after the softmax scale, plus noise (0.1 standard normal per element, the features'
own being about 0.7); q·k then falls off with the distance between two tokens (seen on the CPU at FLUX's
and a video's grids: 90–99.9 % of a query's attention lies within 2L of it). Text tokens get random
directions of the same length; v stays standard normal. For the sparse arms, the sparse gate: their
relative L2 against the dense bf16 result (the ComfyUI 0.33 arm's) on both inputs, and whether the pack's
default gate (0.05) would let them run (pass) or send that kind of call dense.

Every arm is isolated: a library that is missing, cannot run here or fails is a row that says why. The
header names the GPU, driver, torch, CUDA, cuDNN, Triton and each library's version. Writes
kernel_probe.json and kernel_probe.md under --out (after each shape, so a run cut off keeps what it did)
and prints the markdown table last. --small runs two tiny shapes on the CPU, where only the SDPA arms run
(CI runs this).
"""
import argparse
import dataclasses
import importlib.metadata
import inspect
import itertools
import json
import math
import shutil
import statistics
import subprocess
import time
from pathlib import Path
from typing import Callable

import torch
import torch.nn.functional as F

GATE = 0.05         # the pack's default sparse_gate (patches/settings.py): rel L2 of a sparse call against dense
INPUT_SETS = 3      # input sets the timed calls take turns over
PEAK_LOGIT = 12.0   # a token's own scaled q·k in the positional inputs
LENGTHS = (1.0, 2.0, 4.0, 8.0)  # the positional inputs' correlation lengths in tokens, one per head in turn
NOISE = 0.1         # the positional inputs' noise, against the features
SOL_BLOCK = 64      # sol_attn's block of tokens
FP8_MAX = 448.0     # the largest E4M3 value
COMFYUI_SMALL_CALL = 1024 * 128  # comfy/ops.py: calls with fewer elements than this get plain SDPA
LIBRARIES = ("sageattention", "flash-attn-4", "nvidia-cutlass-dsl", "quack-kernels", "apache-tvm-ffi",
             "torch-c-dlpack-ext", "nvidia-cudnn-frontend", "comfy-kitchen")


@dataclasses.dataclass(frozen=True)
class Shape:
    label: str
    heads: int
    grid: tuple[int, ...]  # the image (h, w) or video (t, h, w) tokens' latent grid
    text: int = 0          # text tokens in the same sequence
    text_at: str = ""      # "first" or "last"
    head_dim: int = 128

    @property
    def tokens(self) -> int:
        return math.prod(self.grid) + self.text

    @property
    def dims(self) -> str:
        return f"{self.heads}×{self.tokens}×{self.head_dim}"


SHAPES = [
    Shape("FLUX.1 1024²", 24, (64, 64), 512, "first"),
    Shape("FLUX.1 2048²", 24, (128, 128), 512, "first"),
    Shape("Wan 2.1 14B 480p", 40, (21, 30, 52)),
    Shape("HunyuanVideo 848×480×73", 24, (19, 30, 53), 256, "last"),
]
SMALL_SHAPES = [
    Shape("tiny image (text first)", 2, (12, 16), 64, "first"),
    Shape("tiny video (text last)", 2, (3, 8, 8), 64, "last"),
]


class Unavailable(Exception):
    """An arm that cannot run here, and why."""


@dataclasses.dataclass(frozen=True)
class Arm:
    name: str
    layout: str     # "HND": (B, H, N, D); "NHD": (B, N, H, D); inputs and output
    make: Callable  # make(shape) -> call(q, k, v) -> out; raises Unavailable (or ImportError) where it cannot run
    cuda_only: bool = True
    sparse: bool = False


# -- the arms ---------------------------------------------------------------------------------------

def plain_sdpa(shape: Shape):
    return F.scaled_dot_product_attention


def comfyui_033_sdpa(shape: Shape):
    """comfy/ops.py of ComfyUI 0.33: its backend priority on CUDA, plain SDPA for small calls."""
    from torch.nn.attention import SDPBackend, sdpa_kernel
    if not torch.cuda.is_available():
        return F.scaled_dot_product_attention  # ComfyUI sets the priority only where CUDA is available
    if "set_priority" not in inspect.signature(sdpa_kernel).parameters:
        raise Unavailable("this torch's sdpa_kernel has no set_priority: ComfyUI 0.33 leaves torch its choice")
    priority = [SDPBackend.FLASH_ATTENTION, SDPBackend.CUDNN_ATTENTION, SDPBackend.EFFICIENT_ATTENTION,
                SDPBackend.MATH]

    def call(q, k, v):
        if q.nelement() < COMFYUI_SMALL_CALL:
            return F.scaled_dot_product_attention(q, k, v)
        with sdpa_kernel(priority, set_priority=True):
            return F.scaled_dot_product_attention(q, k, v)
    return call


def pinned_sdpa(backend: str):
    def make(shape: Shape):
        from torch.nn.attention import SDPBackend, sdpa_kernel
        chosen = [getattr(SDPBackend, backend)]

        def call(q, k, v):
            with sdpa_kernel(chosen):
                return F.scaled_dot_product_attention(q, k, v)
        return call
    return make


def sage2(shape: Shape):
    from sageattention import sageattn
    return lambda q, k, v: sageattn(q, k, v, tensor_layout="HND", is_causal=False)


def flash4(shape: Shape):
    from flash_attn.cute import flash_attn_func

    def call(q, k, v):
        out = flash_attn_func(q, k, v)
        return out[0] if isinstance(out, tuple) else out  # (out, lse): lse None unless asked for
    return call


def flash4_on_hnd_views(shape: Shape):
    """FA4 as the pack calls it on a (B, H, N, D) call (FLUX's; Wan's come as (B, N, H·D), FA4's own layout):
    the (B, N, H, D) views of those tensors handed over without a copy, the output back as a (B, H, N, D) view
    (patches/backends/flash4.py)."""
    call = flash4(shape)
    return lambda q, k, v: call(*(t.transpose(1, 2) for t in (q, k, v))).transpose(1, 2)


class CudnnSdpa:
    """The cuDNN frontend's SDPA graph for one shape, built at the first call and reused: bf16, or FP8 with
    per-tensor scales computed in each call."""

    def __init__(self, fp8: bool):
        import cudnn
        self.cudnn, self.fp8 = cudnn, fp8
        self.handle = cudnn.create_handle()
        self.graph = None
        self.out_fp8 = False  # FP8 graphs: whether cuDNN gives E4M3 out (it built no bf16 out here)

    def __call__(self, q, k, v):
        self.cudnn.set_stream(self.handle, torch.cuda.current_stream(q.device).cuda_stream)
        if self.graph is None:
            self.build(q)
        if not self.fp8:
            out = torch.empty_like(q)
            self.graph.execute({self.q: q, self.k: k, self.v: v, self.o: out}, self.workspace, handle=self.handle)
            return out
        (q8, dq), (k8, dk), (v8, dv) = (quantized(t) for t in (q, k, v))
        out = torch.empty(q.shape, dtype=torch.float8_e4m3fn if self.out_fp8 else torch.bfloat16, device=q.device)
        scale_o = FP8_MAX * dv.reciprocal() if self.out_fp8 else torch.ones_like(dv)  # |O| <= max |v|
        pack = {self.q: q8, self.k: k8, self.v: v8, self.o: out, self.scalars["descale_q"]: dq,
                self.scalars["descale_k"]: dk, self.scalars["descale_v"]: dv,
                self.scalars["descale_s"]: self.descale_s, self.scalars["scale_s"]: self.scale_s,
                self.scalars["scale_o"]: scale_o, self.amax_s: self.amax[0], self.amax_o: self.amax[1]}
        self.graph.execute(pack, self.workspace, handle=self.handle)
        return (out.float() / scale_o).to(torch.bfloat16) if self.out_fp8 else out

    def build(self, q):
        if not self.fp8:
            self.graph = self.graph_for(q, self.cudnn.data_type.BFLOAT16)
        else:
            try:
                self.graph = self.graph_for(q, self.cudnn.data_type.BFLOAT16)
            except Exception:  # a cuDNN that builds FP8 attention with FP8 out only
                self.out_fp8 = True
                self.graph = self.graph_for(q, self.cudnn.data_type.FP8_E4M3)
            one = torch.ones(1, 1, 1, 1, dtype=torch.float32, device=q.device)
            self.scale_s, self.descale_s = one * FP8_MAX, one / FP8_MAX  # P lies in [0, 1]
            self.amax = (torch.empty_like(one), torch.empty_like(one))
        self.workspace = torch.empty(max(1, self.graph.get_workspace_size()), dtype=torch.uint8, device=q.device)

    def graph_for(self, q, out_type):
        cudnn = self.cudnn
        io_type = cudnn.data_type.FP8_E4M3 if self.fp8 else cudnn.data_type.BFLOAT16
        graph = cudnn.pygraph(io_data_type=io_type, intermediate_data_type=cudnn.data_type.FLOAT,
                              compute_data_type=cudnn.data_type.FLOAT, handle=self.handle)
        dim, stride = list(q.shape), list(q.stride())
        self.q, self.k, self.v = (graph.tensor(name=name, dim=dim, stride=stride, data_type=io_type)
                                  for name in ("q", "k", "v"))
        scale = q.shape[-1] ** -0.5
        if self.fp8:
            self.scalars = {name: graph.tensor(name=name, dim=[1, 1, 1, 1], stride=[1, 1, 1, 1],
                                               data_type=cudnn.data_type.FLOAT)
                            for name in ("descale_q", "descale_k", "descale_v", "descale_s", "scale_s", "scale_o")}
            self.o, _, self.amax_s, self.amax_o = graph.sdpa_fp8(
                q=self.q, k=self.k, v=self.v, **self.scalars, generate_stats=False, attn_scale=scale,
                use_causal_mask=False, name="sdpa_fp8")
            for amax in (self.amax_s, self.amax_o):
                amax.set_output(True).set_dim([1, 1, 1, 1]).set_stride([1, 1, 1, 1]).set_data_type(
                    cudnn.data_type.FLOAT)
        else:
            self.o, _ = graph.sdpa(q=self.q, k=self.k, v=self.v, generate_stats=False, attn_scale=scale, name="sdpa")
        self.o.set_output(True).set_dim(dim).set_stride(stride).set_data_type(out_type)
        graph.validate()
        graph.build_operation_graph()
        graph.create_execution_plans([cudnn.heur_mode.A, cudnn.heur_mode.FALLBACK])
        graph.check_support()
        graph.build_plans()
        return graph


def quantized(t):
    """``t`` in E4M3 with one scale for the tensor (on the GPU, no host sync), and its descale (1, 1, 1, 1)."""
    amax = t.abs().amax().float().clamp_min(1e-12)
    scale = FP8_MAX / amax
    return (t * scale).clamp_(-FP8_MAX, FP8_MAX).to(torch.float8_e4m3fn), (1 / scale).reshape(1, 1, 1, 1)


def cudnn_frontend(fp8: bool):
    def make(shape: Shape):
        return CudnnSdpa(fp8)
    return make


def text_blocks(shape: Shape):
    """The [start, end) sol_attn blocks that hold the text (a block partly text counted whole), as the
    pack's kitchen backend gives them; None where there is no text."""
    if shape.text <= 0:
        return None
    blocks = -(-shape.tokens // SOL_BLOCK)
    if shape.text_at == "first":
        return [0, min(blocks, -(-shape.text // SOL_BLOCK))]
    return [max(0, (shape.tokens - shape.text) // SOL_BLOCK), blocks]


def sol_attn(tau: float = 1.0, topk: float = 0.0):
    def make(shape: Shape):
        import comfy_kitchen
        if not comfy_kitchen.sol_attn_is_available(torch.device("cuda")):
            raise Unavailable("comfy_kitchen.sol_attn_is_available() is False here")
        sinks = text_blocks(shape)
        return lambda q, k, v: comfy_kitchen.sol_attn(q, k, v, tau=tau, sink_blocks=sinks, sink_q=sinks,
                                                      topk_ratio=topk)
    return make


ARMS = [
    Arm("ComfyUI 0.33", "HND", comfyui_033_sdpa, cuda_only=False),
    Arm("torch default", "HND", plain_sdpa, cuda_only=False),
    Arm("sdpa cuDNN", "HND", pinned_sdpa("CUDNN_ATTENTION")),
    Arm("sdpa flash", "HND", pinned_sdpa("FLASH_ATTENTION")),
    Arm("SageAttention 2", "HND", sage2),
    Arm("FA4", "NHD", flash4),
    Arm("FA4 on HND views", "HND", flash4_on_hnd_views),
    Arm("cuDNN FE bf16", "HND", cudnn_frontend(fp8=False)),
    Arm("cuDNN FE FP8", "HND", cudnn_frontend(fp8=True)),
    Arm("sol_attn tau 1.0", "NHD", sol_attn(tau=1.0), sparse=True),
    Arm("sol_attn tau 0.5", "NHD", sol_attn(tau=0.5), sparse=True),
    Arm("sol_attn top-k 0.1", "NHD", sol_attn(topk=0.1), sparse=True),
]
BASELINE = ARMS[0].name


# -- the inputs -------------------------------------------------------------------------------------

def random_qkv(shape: Shape, device, dtype, seed: int):
    g = torch.Generator(device=device).manual_seed(seed)
    size = (1, shape.heads, shape.tokens, shape.head_dim)
    return tuple(torch.randn(size, generator=g, device=device, dtype=torch.float32).to(dtype) for _ in range(3))


def grid_positions(grid: tuple[int, ...], device) -> torch.Tensor:
    """(tokens, len(grid)) places of the latent grid's tokens, in token units, row-major as models flatten."""
    axes = [torch.arange(n, dtype=torch.float32, device=device) for n in grid]
    return torch.stack(torch.meshgrid(*axes, indexing="ij"), dim=-1).reshape(-1, len(grid))


def positional_qk(shape: Shape, device, g: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    """q and k (1, H, N, D) in fp32 whose attention is local (the module's docstring says how)."""
    half = shape.head_dim // 2
    lengths = torch.tensor([LENGTHS[h % len(LENGTHS)] for h in range(shape.heads)], device=device)
    omega = torch.randn(shape.heads, len(shape.grid), half, generator=g, device=device) / lengths[:, None, None]
    phase = torch.einsum("nd,hdf->hnf", grid_positions(shape.grid, device), omega)
    features = torch.cat([phase.cos(), phase.sin()], dim=-1)  # |feature|² = D/2 for every token
    # a token's own scaled q·k: amplitude² · (D/2) / sqrt(D) = PEAK_LOGIT
    amplitude = math.sqrt(PEAK_LOGIT * math.sqrt(shape.head_dim) / half)
    made = []
    for _ in range(2):
        noisy = features + NOISE * torch.randn(features.shape, generator=g, device=device)
        text = torch.randn(shape.heads, shape.text, shape.head_dim, generator=g, device=device) * math.sqrt(0.5)
        joined = [text, noisy] if shape.text_at == "first" else [noisy, text]
        made.append((amplitude * torch.cat(joined, dim=1)).unsqueeze(0))
    return made[0], made[1]


def positional_qkv(shape: Shape, device, dtype, seed: int):
    g = torch.Generator(device=device).manual_seed(seed)
    q, k = positional_qk(shape, device, g)
    v = torch.randn(q.shape, generator=g, device=device)
    return tuple(t.to(dtype) for t in (q, k, v))


def in_layout(qkv, layout: str):
    """(B, H, N, D) tensors in ``layout``, contiguous."""
    return qkv if layout == "HND" else tuple(t.transpose(1, 2).contiguous() for t in qkv)


def as_hnd(out: torch.Tensor, layout: str) -> torch.Tensor:
    return out if layout == "HND" else out.transpose(1, 2)


def fp32_reference(qkv) -> torch.Tensor:
    """fp32 SDPA of (B, H, N, D) inputs: the memory-efficient kernel on CUDA (fp32, no N² matrix)."""
    q, k, v = (t.float() for t in qkv)
    if not q.is_cuda:
        return F.scaled_dot_product_attention(q, k, v)
    from torch.nn.attention import SDPBackend, sdpa_kernel
    with sdpa_kernel([SDPBackend.EFFICIENT_ATTENTION]):
        return F.scaled_dot_product_attention(q, k, v)


@dataclasses.dataclass
class Case:
    """One shape's inputs, references and dense results, in each layout asked for (made once)."""
    shape: Shape
    sets: list                      # INPUT_SETS random (q, k, v), (B, H, N, D)
    positional: tuple
    reference: dict                 # "random" / "positional": fp32 SDPA of sets[0] / positional
    dense: dict                     # the same from the baseline arm, in bf16: what the sparse gate compares with
    layouts: dict = dataclasses.field(default_factory=dict)

    def inputs(self, layout: str) -> tuple[list, tuple]:
        if layout not in self.layouts:
            self.layouts[layout] = ([in_layout(qkv, layout) for qkv in self.sets], in_layout(self.positional, layout))
        return self.layouts[layout]


def make_case(shape: Shape, device, dtype) -> Case:
    sets = [random_qkv(shape, device, dtype, seed) for seed in range(INPUT_SETS)]
    positional = positional_qkv(shape, device, dtype, seed=100)
    reference = {"random": fp32_reference(sets[0]), "positional": fp32_reference(positional)}
    baseline = comfyui_033_sdpa(shape)
    dense = {"random": baseline(*sets[0]), "positional": baseline(*positional)}
    return Case(shape, sets, positional, reference, dense, {"HND": (sets, positional)})


# -- measuring --------------------------------------------------------------------------------------

def synchronize(device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def compare(out: torch.Tensor, ref: torch.Tensor) -> dict:
    """Relative L2 and cosine of ``out`` against ``ref``, in fp32 (inf and nan where not finite)."""
    o, r = out.reshape(-1).float(), ref.reshape(-1).float()
    if not bool(torch.isfinite(o).all()):
        return {"rel_l2": float("inf"), "cosine": float("nan")}
    rel = torch.linalg.vector_norm(o - r) / torch.linalg.vector_norm(r).clamp_min(1e-12)
    return {"rel_l2": float(rel), "cosine": float(F.cosine_similarity(o, r, dim=0, eps=1e-12))}


def gate_verdict(rel_l2: float, limit: float = GATE) -> str:
    """What the pack's sparse gate does with a first sparse call this far from dense."""
    return "pass" if math.isfinite(rel_l2) and rel_l2 <= limit else "dense"


def median_ms(call, sets: list, device, rep_ms: float) -> float:
    """The median ms of ``call`` taking turns over ``sets``: do_bench on CUDA (warm-up apart, L2 flushed
    between calls), else wall time of back-to-back calls after one warm-up."""
    turns = itertools.cycle(sets)

    def step():
        return call(*next(turns))
    if device.type == "cuda":
        from triton.testing import do_bench
        return float(do_bench(step, warmup=25, rep=rep_ms, return_mode="median"))
    step()
    times, deadline = [], time.perf_counter() + rep_ms / 1000
    while len(times) < 3 or time.perf_counter() < deadline:
        began = time.perf_counter()
        step()
        times.append((time.perf_counter() - began) * 1000)
    return statistics.median(times)


def why(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0][:160]}" if text else type(exc).__name__


def measure_arm(arm: Arm, case: Case, device, rep_ms: float) -> dict:
    """One arm on one shape: first call, accuracy on both inputs, the sparse gate, the median time; or why not."""
    row = {"shape": case.shape.label, "dims": case.shape.dims, "arm": arm.name}
    if arm.cuda_only and device.type != "cuda":
        return {**row, "unavailable": "needs a CUDA GPU (this run is on the CPU)"}
    try:
        call = arm.make(case.shape)
    except Exception as exc:  # not installed, or it cannot run here: Unavailable, ImportError, a loader's error
        return {**row, "unavailable": why(exc)}
    sets, positional = case.inputs(arm.layout)
    try:
        synchronize(device)
        began = time.perf_counter()
        out = call(*sets[0])
        synchronize(device)
        row["first_ms"] = (time.perf_counter() - began) * 1000
        outputs = {"random": as_hnd(out, arm.layout), "positional": as_hnd(call(*positional), arm.layout)}
        for kind, output in outputs.items():
            row[kind] = compare(output, case.reference[kind])
            if arm.sparse:
                row[kind]["vs_dense"] = compare(output, case.dense[kind])["rel_l2"]
        del out, outputs
        row["ms"] = median_ms(call, sets, device, rep_ms)
        shape = case.shape
        row["tflops"] = 4 * shape.heads * shape.tokens ** 2 * shape.head_dim / row["ms"] / 1e9
    except Exception as exc:  # a kernel that fails here: the row says so, the other arms go on
        row["failed"] = why(exc)
    finally:
        del call
        if device.type == "cuda":
            torch.cuda.empty_cache()
    return row


def measure_shape(shape: Shape, device, dtype, rep_ms: float) -> list[dict]:
    try:
        case = make_case(shape, device, dtype)
    except Exception as exc:  # the inputs or references did not fit or run: every arm says so
        return [{"shape": shape.label, "dims": shape.dims, "arm": arm.name, "failed": f"inputs: {why(exc)}"}
                for arm in ARMS]
    rows = [measure_arm(arm, case, device, rep_ms) for arm in ARMS]
    del case
    if device.type == "cuda":
        torch.cuda.empty_cache()
    return rows


# -- reporting --------------------------------------------------------------------------------------

def driver_version() -> str:
    if shutil.which("nvidia-smi"):
        smi = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                             capture_output=True, text=True)
        if smi.returncode == 0 and smi.stdout.strip():
            return smi.stdout.strip().splitlines()[0]
    return "unknown"


def library_versions() -> dict:
    found = {}
    for name in LIBRARIES:
        try:
            found[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            found[name] = None
    try:
        import cudnn
        found["cuDNN (frontend's backend)"] = str(cudnn.backend_version())
    except Exception as exc:  # no frontend, or it cannot load libcudnn here
        found["cuDNN (frontend's backend)"] = f"({why(exc)})"
    return found


def machine_info(device) -> dict:
    try:
        import triton
        triton_version = triton.__version__
    except ImportError:
        triton_version = "not installed"
    cuda = device.type == "cuda"
    return {"device": torch.cuda.get_device_name(device) if cuda else "CPU",
            "driver": driver_version() if cuda else "-", "torch": torch.__version__, "cuda": torch.version.cuda,
            "cudnn": torch.backends.cudnn.version() if torch.backends.cudnn.is_available() else None,
            "triton": triton_version, "libraries": library_versions()}


def accuracy_cell(result: dict | None) -> str:
    return "–" if result is None else f"{result['rel_l2']:.4f} / {result['cosine']:.5f}"


def gate_cell(row: dict) -> str:
    if "random" not in row or "vs_dense" not in row["random"]:
        return "–"
    return "; ".join(f"{gate_verdict(row[kind]['vs_dense'])} {row[kind]['vs_dense']:.3f}"
                     for kind in ("random", "positional"))


def row_cells(row: dict, baseline_ms: float | None) -> list[str]:
    if "ms" not in row:
        said = f"unavailable: {row['unavailable']}" if "unavailable" in row else f"failed: {row.get('failed')}"
        first = f"{row['first_ms']:.0f}" if "first_ms" in row else "–"
        return ["–", "–", "–", first, accuracy_cell(row.get("random")), accuracy_cell(row.get("positional")),
                gate_cell(row), said.replace("|", "\\|")]
    speedup = "–" if baseline_ms is None else f"{baseline_ms / row['ms']:.2f}×"
    return [f"{row['ms']:.3f}", speedup, f"{row['tflops']:.3g}", f"{row['first_ms']:.0f}",
            accuracy_cell(row["random"]), accuracy_cell(row["positional"]), gate_cell(row), ""]


def to_markdown(info: dict, rows: list[dict], rep_ms: float) -> str:
    libraries = ", ".join(f"{name} {version or '(not installed)'}" for name, version in info["libraries"].items())
    timer = ("triton do_bench, L2 flushed between calls" if info["device"] != "CPU" else
             "wall time of back-to-back calls on the CPU")
    head = (f"{info['device']}, driver {info['driver']}; torch {info['torch']} (CUDA {info['cuda']}, cuDNN "
            f"{info['cudnn']}); Triton {info['triton']}; {libraries}.\n\n"
            f"Each library called directly (bench/kernel_probe.py), bf16, B=1. ms: the median call ({timer}, "
            f"{rep_ms:g} ms of calls after the warm-up, {INPUT_SETS} input sets in turn); × {BASELINE}: its ms "
            f"over this arm's; first ms: the first call's wall time (compile, graph build). Accuracy against "
            f"fp32 SDPA, rel L2 / cosine, on random q, k, v and on positional (local attention) ones. Sparse "
            f"gate: rel L2 against the dense bf16 result, random; positional, and what "
            f"the pack's default gate ({GATE:g}) does: pass, or keep that kind of call dense.\n\n"
            f"{closing_line(rows)}\n\n")
    lines = ["| shape (H×N×D) | arm | ms | × " + BASELINE + " | TFLOP/s | first ms | random: rel L2 / cos | "
             "positional: rel L2 / cos | sparse gate 0.05 | note |", "|---" * 10 + "|"]
    for shape_label in dict.fromkeys(row["shape"] for row in rows):
        shape_rows = [row for row in rows if row["shape"] == shape_label]
        baseline = next((row.get("ms") for row in shape_rows if row["arm"] == BASELINE), None)
        for row in shape_rows:
            cells = [f"{row['shape']} ({row['dims']})", row["arm"], *row_cells(row, baseline)]
            lines.append("| " + " | ".join(cells) + " |")
    return head + "\n".join(lines) + "\n"


def closing_line(rows: list[dict]) -> str:
    """The fastest dense arm of each shape and its speed-up over the baseline."""
    said = []
    for shape_label in dict.fromkeys(row["shape"] for row in rows):
        timed = {row["arm"]: row["ms"] for row in rows if row["shape"] == shape_label and "ms" in row
                 and not row["arm"].startswith("sol_attn")}
        if timed and BASELINE in timed:
            best = min(timed, key=timed.get)
            said.append(f"{shape_label}: {best} {timed[BASELINE] / timed[best]:.2f}×")
    return "fastest dense arm (× " + BASELINE + "): " + ("; ".join(said) or "none timed")


def write(out: Path | None, info: dict, rows: list[dict], rep_ms: float) -> str:
    table = to_markdown(info, rows, rep_ms)
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
        (out / "kernel_probe.json").write_text(json.dumps({"info": info, "rows": rows}, indent=1) + "\n")
        (out / "kernel_probe.md").write_text(table)
    return table


def main(argv=None) -> list[dict]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--small", action="store_true", help="two tiny shapes on the CPU (CI)")
    parser.add_argument("--only", nargs="*", default=[], help="the shapes whose label holds one of these words")
    parser.add_argument("--rep-ms", type=float, default=200.0, help="timed calls per arm and shape, in ms")
    parser.add_argument("--out", type=Path, help="folder for kernel_probe.md / .json")
    args = parser.parse_args(argv)
    small = args.small or not torch.cuda.is_available()
    if small and not args.small:
        print("no CUDA here: the tiny shapes on the CPU", flush=True)
    device = torch.device("cpu" if small else "cuda:0")
    shapes = SMALL_SHAPES if small else SHAPES
    if args.only:
        shapes = [shape for shape in shapes if any(word in shape.label for word in args.only)]
        if not shapes:
            parser.error(f"no shape's label holds {', '.join(args.only)}")
    info = machine_info(device)
    print(json.dumps(info), flush=True)
    rows = []
    for shape in shapes:
        shape_rows = measure_shape(shape, device, torch.bfloat16, args.rep_ms)
        rows += shape_rows
        print(json.dumps({"shape": shape.label, **{r["arm"]: r.get("ms", r.get("unavailable", r.get("failed")))
                                                   for r in shape_rows}}), flush=True)
        write(args.out, info, rows, args.rep_ms)  # after each shape: a run cut off keeps what it did
    print(to_markdown(info, rows, args.rep_ms), flush=True)  # its line above the table: the run's summary
    return rows


if __name__ == "__main__":
    main()
