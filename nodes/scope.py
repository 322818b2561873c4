"""The Sage Attention Scope node: MODEL -> MODEL. Inputs to Settings; policy lives in patches/."""
from __future__ import annotations

import logging

from comfy_api.latest import io

from ..patches import DEFAULT_MIN_SEQ_LEN, KERNEL_AUTO, Settings, kernels, scope_for_family, timing

log = logging.getLogger(__name__)

MAX_SEQ_LEN = 1 << 22


def scoped_model(model, enabled=True, kernel=KERNEL_AUTO, min_seq_len=DEFAULT_MIN_SEQ_LEN,
                 first_call_check=True, smooth_k=False, routing=timing.ROUTING_MEASURED):
    """What the node does, callable without the node machinery."""
    if not hasattr(getattr(model, "model", None), "diffusion_model") or not hasattr(model, "clone"):
        raise ValueError(
            f"Sage Attention Scope needs a diffusion MODEL (from Load Diffusion Model or Load Checkpoint), "
            f"got {type(model).__name__}. Connect the model output of a loader.")
    settings = Settings(enabled=bool(enabled), kernel=kernel, min_seq_len=int(min_seq_len),
                        first_call_check=bool(first_call_check), smooth_k=bool(smooth_k),
                        routing=routing)
    return scope_for_family(model, settings)[0]


class SageAttentionScope(io.ComfyNode):
    @classmethod
    def define_schema(cls) -> io.Schema:
        return io.Schema(
            node_id="SageAttentionScope",
            display_name="Sage Attention Scope",
            category="model_patches/attention",
            description=(
                "Runs this model's eligible attention calls on SageAttention while it samples. Every other "
                "call, and everything outside sampling (text encoders, VAE), keeps PyTorch SDPA."),
            inputs=[
                io.Model.Input("model"),
                io.Boolean.Input("enabled", default=True,
                                 tooltip="Off: every call keeps SDPA (output identical to no node)."),
                io.Combo.Input("kernel", options=kernels.available_kernel_names(), default=KERNEL_AUTO,
                               tooltip="auto picks the kernel for this GPU and installed sageattention."),
                io.Int.Input("min_seq_len", default=DEFAULT_MIN_SEQ_LEN, min=1, max=MAX_SEQ_LEN, step=256,
                             tooltip="Calls whose query or key is shorter stay on SDPA (faster there). "
                                     "Default measured on an H200."),
                io.Boolean.Input("first_call_check", default=True,
                                 tooltip="Compare the first call per device/dtype/head size against SDPA; "
                                         "a mismatch keeps SDPA for the session."),
                io.Boolean.Input("smooth_k", default=False,
                                 tooltip="SageAttention's K smoothing. Off by default: it hurt accuracy on "
                                         "Qwen-Image."),
                io.Combo.Input("routing", options=list(timing.ROUTINGS), default=timing.ROUTING_MEASURED,
                               tooltip="measured: time SageAttention against SDPA once per shape and use the "
                                       "faster (never slower than SDPA). always: every eligible call on "
                                       "SageAttention."),
            ],
            outputs=[io.Model.Output()],
        )

    @classmethod
    def execute(cls, model, enabled, kernel, min_seq_len, first_call_check, smooth_k=False,
                routing=timing.ROUTING_MEASURED) -> io.NodeOutput:
        return io.NodeOutput(scoped_model(model, enabled, kernel, min_seq_len, first_call_check, smooth_k,
                                          routing))
