"""The Sage Attention Scope node: MODEL -> MODEL. Inputs become Settings; policy is in patches/."""
from __future__ import annotations

import torch
from comfy_api.latest import io

from ..patches import Settings, scope_for_family
from ..patches.settings import MAX_SEQ_LEN, ROUTINGS
from . import session

# Each input's help: the node's tooltips and the docs' input table (scripts/write_docs.py).
TOOLTIPS = {
    "model": "The diffusion model to scope (from a model loader).",
    "enabled": "Off: every call keeps SDPA; the output is identical to no node.",
    "kernel": "auto picks the kernel for this GPU and what is installed; or pick one by name.",
    "min_seq_len": "0 (auto): calls with a query under 1024 or a key under 512 tokens stay on SDPA, where no "
                   "kernel pays on any GPU, and timing per shape decides the rest. Any other number: calls whose "
                   "query or key is shorter stay on SDPA.",
    "first_call_check": "Compare the first call per device, dtype, head size and kernel with SDPA; a mismatch "
                        "keeps SDPA for those calls for the session.",
    "smooth_k": "Subtract each head's mean key before quantising (SageAttention's smooth_k): can help with "
                "outlier keys, hurt accuracy on Qwen-Image. Off by default.",
    "routing": "measured: time the kernel against SDPA once per shape and keep the faster (never slower than "
               "SDPA). always: every eligible call on the kernel.",
    "start_percent": "Steps before this point of the schedule (0 = the first) stay on SDPA.",
    "end_percent": "Steps after this point of the schedule (1 = the last) stay on SDPA.",
    "first_blocks": "Blocks kept on SDPA at the start of each block type, where the model says which block is "
                    "calling (FLUX, Chroma, HunyuanVideo, Qwen-Image). -1: the kernel's default (1 for "
                    "SageAttention 3, else 0).",
    "last_blocks": "Blocks kept on SDPA at the end of each block type; -1: the kernel's default.",
}


def scoped_model(model, **inputs):
    """What the node does, callable without the node machinery."""
    if not hasattr(getattr(model, "model", None), "diffusion_model") or not hasattr(model, "clone"):
        raise ValueError(
            f"Sage Attention Scope needs a diffusion MODEL (from Load Diffusion Model or Load Checkpoint), "
            f"got {type(model).__name__}. Connect the model output of a loader.")
    return scope_for_family(model, Settings(**inputs), session())[0]


def kernel_choices() -> list[str]:
    """``auto`` and the kernels that bind on this machine's GPUs."""
    devices = [torch.device("cuda", i) for i in range(torch.cuda.device_count())]
    return session().usable(devices)


class SageAttentionScope(io.ComfyNode):
    @classmethod
    def define_schema(cls) -> io.Schema:
        d = Settings()
        return io.Schema(
            node_id="SageAttentionScope",
            display_name="Sage Attention Scope",
            category="model_patches/attention",
            description=(
                "Runs this model's eligible attention calls on a faster attention kernel while it samples. Every "
                "other call, and everything outside sampling (text encoders, VAE), keeps PyTorch SDPA."),
            inputs=[
                io.Model.Input("model", tooltip=TOOLTIPS["model"]),
                io.Boolean.Input("enabled", default=d.enabled, tooltip=TOOLTIPS["enabled"]),
                io.Combo.Input("kernel", options=kernel_choices(), default=d.kernel, tooltip=TOOLTIPS["kernel"]),
                io.Int.Input("min_seq_len", default=d.min_seq_len, min=0, max=MAX_SEQ_LEN, step=256,
                             tooltip=TOOLTIPS["min_seq_len"]),
                io.Boolean.Input("first_call_check", default=d.first_call_check, tooltip=TOOLTIPS["first_call_check"]),
                io.Boolean.Input("smooth_k", default=d.smooth_k, tooltip=TOOLTIPS["smooth_k"]),
                io.Combo.Input("routing", options=list(ROUTINGS), default=d.routing, tooltip=TOOLTIPS["routing"]),
                io.Float.Input("start_percent", default=d.start_percent, min=0.0, max=1.0, step=0.01,
                               tooltip=TOOLTIPS["start_percent"]),
                io.Float.Input("end_percent", default=d.end_percent, min=0.0, max=1.0, step=0.01,
                               tooltip=TOOLTIPS["end_percent"]),
                io.Int.Input("first_blocks", default=d.first_blocks, min=-1, max=1000, tooltip=TOOLTIPS["first_blocks"]),
                io.Int.Input("last_blocks", default=d.last_blocks, min=-1, max=1000, tooltip=TOOLTIPS["last_blocks"]),
            ],
            outputs=[io.Model.Output()],
        )

    @classmethod
    def execute(cls, model, **inputs) -> io.NodeOutput:
        return io.NodeOutput(scoped_model(model, **inputs))
