"""Named doubles of the two kernel libraries pip installs without a compiler, at the kernel boundary only:
FlashAttention 4's ``flash_attn.cute`` and cuDNN's frontend ``cudnn``. Each has the real library's
signatures and layouts and computes real attention (fp32 SDPA); each can misbehave in one named way.

``FlashAttention4`` is ``flash_attn.cute``'s ``flash_attn_func``: (B, N, H, D) q/k/v, the real parameter
list, the real input checks (dtype, head size per GPU family), ``(out, lse)`` back. Its first call of each
(dtype, head size) "compiles": noted in ``events``, and where ``compile_error`` is given, raised there.

``Cudnn`` is the subset of ``cudnn``'s graph API the adapter uses: ``pygraph`` with the real constructor's
parameters, ``tensor``, ``sdpa``, ``sdpa_fp8``, the output tensor's setters, ``build``,
``get_workspace_size`` and ``execute`` with a variant pack; ``create_handle``, ``set_stream``,
``data_type``, ``heur_mode``, ``backend_version_string``. ``execute`` reads each tensor of the variant
pack through the dims and strides the graph declared for it (as cuDNN reads device memory), so a layout
declared wrong reads the wrong numbers, checks its dtype against the declared one, computes attention
(FP8 inputs times their descales) and writes it through the output's declared dims and strides."""
from __future__ import annotations

import enum
import itertools
import types
from typing import Callable, Optional

import torch
import torch.nn.functional as F

HALF = (torch.float16, torch.bfloat16)


def attention_bhsd(q, k, v, scale: Optional[float]) -> torch.Tensor:
    """Real attention in fp32 on (B, H, N, D), k/v heads shared by groups of query heads as SDPA shares them."""
    groups = q.shape[1] // k.shape[1]
    k, v = (t.repeat_interleave(groups, dim=1) for t in (k, v))
    return F.scaled_dot_product_attention(q.float(), k.float(), v.float(), scale=scale)


def fp8_attention(q, k, v, attn_scale, descale_s, scale_s, scale_o) -> torch.Tensor:
    """Attention as cuDNN's FP8 SDPA computes it from dequantised q/k/v: the softmax's probabilities scaled by
    ``scale_s`` into FP8 E4M3 and back by ``descale_s``, the output scaled by ``scale_o``."""
    groups = q.shape[1] // k.shape[1]
    k, v = (t.repeat_interleave(groups, dim=1) for t in (k, v))
    probabilities = torch.softmax(q @ k.transpose(-1, -2) * attn_scale, dim=-1)
    probabilities = (probabilities * scale_s).to(torch.float8_e4m3fn).float() * descale_s
    return probabilities @ v * scale_o


# -- FlashAttention 4 ----------------------------------------------------------------------------

class DSLRuntimeError(RuntimeError):
    """What the CuTe DSL raises when its JIT-time code generation fails (a kernel that does not compile)."""


class FlashAttention4:
    """``flash_attn.cute`` with ``flash_attn_func`` for a GPU of ``arch`` (80, 90, 100, 120, as the library
    reads it). ``compile_error``: raised by the first call of each configuration, as a failed compile is.
    ``behave``: replaces the output, given it."""

    def __init__(self, arch: int = 90, compile_error: Optional[Callable[[], Exception]] = None,
                 behave: Optional[Callable[[torch.Tensor], torch.Tensor]] = None):
        self.arch, self.compile_error, self.behave = arch, compile_error, behave
        self.calls: list[dict] = []
        self.events: list[str] = []  # "compile" or "call", in order
        self.compiled: set = set()

    def flash_attn_func(self, q, k, v, qv=None, gather_kv_indices=None, softmax_scale=None, causal=False,
                        window_size=(None, None), learnable_sink=None, softcap=0.0, num_splits=1, pack_gqa=None,
                        deterministic=False, score_mod=None, score_mod_bwd=None, mask_mod=None, aux_tensors=None,
                        aux_scalars=None, block_sparse_tensors=None, block_sparse_tensors_bwd=None,
                        return_lse=False, gather_bwd_recompute_p=False, gather_bwd_token_chunk=None, config=None,
                        scales=None):
        self.check_inputs(q, k, v)
        configuration = (q.dtype, q.shape[-1], q.shape[2] // k.shape[2], causal)
        if configuration not in self.compiled:
            self.events.append("compile")
            if self.compile_error is not None:
                raise self.compile_error()
            self.compiled.add(configuration)
        self.events.append("call")
        self.calls.append({"shape": tuple(q.shape), "strides": (q.stride(), k.stride(), v.stride()),
                           "softmax_scale": softmax_scale, "causal": causal})
        out = attention_bhsd(*(t.transpose(1, 2) for t in (q, k, v)), softmax_scale)
        out = out.transpose(1, 2).contiguous().to(q.dtype)  # allocated (B, N, H, D), as the library does
        if self.behave is not None:
            out = self.behave(out)
        return out, None  # lse only with return_lse

    def check_inputs(self, q, k, v) -> None:
        """The library's own checks of a dense call (interface._flash_attn_fwd), but the CUDA device's."""
        batch, _, heads, head_dim = q.shape
        assert k.shape[0] == batch and k.shape == v.shape and k.shape[-1] == head_dim
        assert v.dtype in (*HALF, torch.float8_e4m3fn, torch.float8_e5m2), (
            "inputs must be float16, bfloat16, fp8 e4m3fn, or fp8 e5m2")
        assert q.dtype == k.dtype == v.dtype, "q, k, v, and qv must have the same dtype"
        assert heads % k.shape[2] == 0, "num_head must be divisible by num_head_kv"
        family = self.arch // 10
        if family == 9:
            assert 8 <= head_dim <= 256 and head_dim % 8 == 0, f"(head_dim, head_dim_v)={head_dim} not on SM90"
        elif family in (10, 11):
            assert (8 <= head_dim <= 128 or head_dim == 256) and head_dim % 8 == 0, (
                f"(head_dim, head_dim_v)={head_dim} is not supported on SM100/SM110")

    def module(self) -> types.SimpleNamespace:
        """The double as ``flash_attn.cute``."""
        return types.SimpleNamespace(flash_attn_func=self.flash_attn_func)


# -- cuDNN frontend --------------------------------------------------------------------------------

class data_type(enum.Enum):  # cudnn.data_type, as the library spells it
    HALF = torch.float16
    BFLOAT16 = torch.bfloat16
    FLOAT = torch.float32
    FP8_E4M3 = torch.float8_e4m3fn


class heur_mode(enum.Enum):  # cudnn.heur_mode
    A = "a"
    B = "b"
    FALLBACK = "fallback"


class cudnnGraphNotSupportedError(RuntimeError):  # the library's name
    pass


class Handle:
    def __init__(self):
        self.stream = None


class Tensor:
    """A graph tensor: what the graph declares of it, set by the builders and the setters."""

    def __init__(self, name, dim=None, stride=None, data_type=None, uid=None, virtual=False):
        self.name, self.dim, self.stride, self.data_type, self.uid = name, dim, stride, data_type, uid
        self.is_output, self.virtual = False, virtual

    def set_uid(self, uid):
        self.uid = uid
        return self

    def set_output(self, value: bool):
        self.is_output = value
        return self

    def set_dim(self, dim):
        self.dim = list(dim)
        return self

    def set_stride(self, stride):
        self.stride = list(stride)
        return self

    def set_data_type(self, value):
        self.data_type = value
        return self

    def read(self, data: torch.Tensor) -> torch.Tensor:
        """``data`` as the declared tensor reads it: its memory through the declared dims and strides."""
        if data.dtype != self.data_type.value:
            raise TypeError(f"{self.name} is declared {self.data_type.name}, bound to {data.dtype}")
        return torch.as_strided(data, self.dim, self.stride, data.storage_offset())


class Cudnn:
    """``cudnn`` for the adapter. ``build_error``: raised by every build; ``behave``: replaces the output
    before it is written, given it."""

    def __init__(self, build_error: Optional[Callable[[], Exception]] = None, behave: Optional[Callable] = None):
        self.build_error, self.behave = build_error, behave
        self.builds: list[dict] = []  # each graph built: its op, its tensors' dims and strides
        self.events: list[str] = []  # "build" or "execute", in order
        self.handles: list[Handle] = []
        cudnn = self

        class pygraph:  # cudnn.pygraph
            def __init__(self, name="test_graph", io_data_type=None, intermediate_data_type=None,
                         compute_data_type=None, handle=None, sm_count=None, sm_version=None, kernel_cache=None,
                         device_property=None, is_dynamic_shape_enabled=False, is_override_shape_enabled=False,
                         cuda_graph_retention=None, *, is_cuda_graph_replay_expected=False, **kwargs):
                self.io_data_type, self.handle = io_data_type, handle
                self.tensors: list[Tensor] = []
                self.op: Optional[dict] = None
                self.built = False
                self.uids = itertools.count(1000)

            def tensor(self, dim, stride=None, data_type=None, is_virtual=False, is_pass_by_value=False,
                       ragged_offset=None, reordering_type=None, name="", uid=None, ragged_offset_multiplier=1,
                       alignment_value=1, **kwargs):
                declared = Tensor(name, list(dim), list(stride), data_type or self.io_data_type, uid)
                self.tensors.append(declared)
                return declared

            def output(self, name):
                made = Tensor(name, uid=next(self.uids), virtual=True)
                self.tensors.append(made)
                return made

            def sdpa(self, q, k, v, *, name="", attn_scale=None, generate_stats=None):
                self.op = {"op": "sdpa", "q": q, "k": k, "v": v, "attn_scale": attn_scale}
                self.op["o"] = self.output(f"{name}::O")
                return [self.op["o"], None]

            def sdpa_fp8(self, q, k, v, descale_q, descale_k, descale_v, descale_s, scale_s, scale_o, *, name="",
                         attn_scale=None, generate_stats=None):
                self.op = {"op": "sdpa_fp8", "q": q, "k": k, "v": v, "attn_scale": attn_scale,
                           "descales": (descale_q, descale_k, descale_v), "scales": (descale_s, scale_s, scale_o)}
                self.op["o"], amax_s, self.op["amax_o"] = (self.output(f"{name}::{port}")
                                                          for port in ("O", "Amax_S", "Amax_O"))
                return [self.op["o"], None, amax_s, self.op["amax_o"]]

            def build(self, heuristics=None, ctx=None):
                cudnn.events.append("build")
                if cudnn.build_error is not None:
                    raise cudnn.build_error()
                for declared in self.declared():
                    if declared.dim is None or declared.stride is None or declared.data_type is None:
                        raise cudnnGraphNotSupportedError(f"{declared.name}: dims, strides or data type not set")
                cudnn.builds.append({"op": self.op["op"], "handle": self.handle, "attn_scale": self.op["attn_scale"],
                                     **{t.name: (t.dim, t.stride, t.data_type) for t in self.declared()}})
                self.built = True

            def declared(self) -> list[Tensor]:
                return [t for t in self.tensors if not t.virtual or t.is_output]

            def get_workspace_size(self, handle=None, override_uids=None, override_shapes=None,
                                   override_strides=None):
                if not self.built:
                    raise RuntimeError("Call build() first")
                return 64

            def execute(self, tensor_dict, workspace=None, handle=None, override_uids=None, override_shapes=None,
                        override_strides=None, tensor_uids=None):
                cudnn.events.append("execute")
                if not self.built:
                    raise RuntimeError("Call build() first")
                assert workspace is not None and workspace.numel() >= 64 and handle is not None
                bound = {int(uid): data for uid, data in tensor_dict.items()}
                missing = [t.name for t in self.declared() if int(t.uid) not in bound]
                if missing:
                    raise RuntimeError(f"variant pack lacks {missing}")
                op = self.op
                q, k, v = (op[n].read(bound[int(op[n].uid)]).float() for n in ("q", "k", "v"))
                attn_scale = 1.0 if op["attn_scale"] is None else op["attn_scale"]  # cuDNN scales only when told
                if op["op"] == "sdpa":
                    out = attention_bhsd(q, k, v, attn_scale)
                else:
                    descales, scales = ([d.read(bound[int(d.uid)]).reshape(()) for d in op[n]]
                                        for n in ("descales", "scales"))
                    out = fp8_attention(*(t * d for t, d in zip((q, k, v), descales)), attn_scale, *scales)
                if cudnn.behave is not None:
                    out = cudnn.behave(out)
                o = op["o"]
                target = bound[int(o.uid)]
                torch.as_strided(target, o.dim, o.stride, target.storage_offset()).copy_(out.to(o.data_type.value))
                if op["op"] == "sdpa_fp8":
                    bound[int(op["amax_o"].uid)].fill_(float(out.abs().amax()))

        def create_handle():
            made = Handle()
            cudnn.handles.append(made)
            return made

        def set_stream(handle, stream):
            handle.stream = stream

        self.pygraph = pygraph
        self.create_handle, self.set_stream = create_handle, set_stream

    def module(self) -> types.SimpleNamespace:
        """The double as ``cudnn``."""
        return types.SimpleNamespace(pygraph=self.pygraph, create_handle=self.create_handle,
                                     set_stream=self.set_stream, data_type=data_type, heur_mode=heur_mode,
                                     cudnnGraphNotSupportedError=cudnnGraphNotSupportedError,
                                     backend_version_string=lambda: "9.14.0 (test double)")
