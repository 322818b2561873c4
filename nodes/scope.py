"""The Sage Attention Scope node: MODEL -> MODEL. Inputs become Settings; policy is in patches/."""
from __future__ import annotations

import torch
from comfy_api.latest import io

from ..patches import Settings, scope_for_family
from ..patches.settings import INPUTS, MAX_SEQ_LEN, ROUTINGS
from . import session


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
                io.Model.Input("model", tooltip="The diffusion model to scope (from a model loader)."),
                io.Boolean.Input("enabled", default=d.enabled, tooltip=INPUTS["enabled"]),
                io.Combo.Input("kernel", options=kernel_choices(), default=d.kernel, tooltip=INPUTS["kernel"]),
                io.Int.Input("min_seq_len", default=d.min_seq_len, min=1, max=MAX_SEQ_LEN, step=256,
                             tooltip=INPUTS["min_seq_len"]),
                io.Boolean.Input("first_call_check", default=d.first_call_check, tooltip=INPUTS["first_call_check"]),
                io.Boolean.Input("smooth_k", default=d.smooth_k, tooltip=INPUTS["smooth_k"]),
                io.Combo.Input("routing", options=list(ROUTINGS), default=d.routing, tooltip=INPUTS["routing"]),
            ],
            outputs=[io.Model.Output()],
        )

    @classmethod
    def execute(cls, model, **inputs) -> io.NodeOutput:
        return io.NodeOutput(scoped_model(model, **inputs))
