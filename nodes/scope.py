"""The Sage Attention Scope node: MODEL -> MODEL. Inputs become Settings; policy is in patches/."""
from __future__ import annotations

import dataclasses
import logging

import torch
from comfy_api.latest import io

from ..patches import Settings, scope_for_family
from ..patches.settings import MAX_SEQ_LEN, ROUTINGS
from . import session

log = logging.getLogger(__name__)

# Each input's help: the node's tooltips and the docs' input table (scripts/write_docs.py).
TOOLTIPS = {
    "model": "The diffusion model to scope (from a model loader).",
    "enabled": "Off: every call keeps SDPA; the output is identical to no node.",
    "kernel": "auto picks the kernel for this GPU and what is installed (SageAttention 2, else 1, else "
              "comfy-kitchen; never SageAttention 3's FP4 unless picked); or pick one by name.",
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
NODE_ID = "SageAttentionScope"


def scoped_model(model, **inputs):
    """What the node does, callable without the node machinery. A kernel this machine cannot run
    (a workflow saved elsewhere) is replaced by ``auto``, said in the log and the status."""
    if not hasattr(getattr(model, "model", None), "diffusion_model") or not hasattr(model, "clone"):
        raise ValueError(
            f"Sage Attention Scope needs a diffusion MODEL (from Load Diffusion Model or Load Checkpoint), "
            f"got {type(model).__name__}. Connect the model output of a loader.")
    settings, state = Settings(**inputs), session()
    resolution = state.resolve(settings.kernel, model.load_device)
    if settings.kernel != "auto" and resolution.bound is None:
        state.resolve(settings.kernel, model.load_device, note=True)
        log.warning("Sage Attention Scope: kernel %s cannot run here (%s); using auto.", settings.kernel,
                    resolution.why)
        settings = dataclasses.replace(settings, kernel="auto")
    return scope_for_family(model, settings, state)[0]


def kernel_choices() -> list[str]:
    """``auto`` and the kernels that bind on this machine's GPUs."""
    devices = [torch.device("cuda", i) for i in range(torch.cuda.device_count())]
    return session().usable(devices)


def kernel_tooltip(choices: list[str]) -> str:
    """The kernel input's help: what each choice offered here is, in words."""
    kernels = [f"{name}: {session().backend(name).label}" for name in choices[1:]]
    return TOOLTIPS["kernel"] + ("\n" + "\n".join(kernels) if kernels else
                                 " No kernel is usable on this machine (no CUDA GPU, or no kernel library "
                                 "installed for it): the Scope keeps SDPA; Status says what to install.")


class _Invalid(str):
    """A raw prompt value ComfyUI would coerce silently ("maybe" to True, 1.5 to 1), replaced by what
    is wrong with it: ComfyUI's conversion of it fails, so ``/prompt`` answers 400 naming the node and
    the input (a str, so that the answer's JSON carries it)."""

    def __bool__(self):
        raise ValueError(str(self))


def strict_inputs(json_data: dict) -> dict:
    """ComfyUI's on_prompt handler: each Scope node's raw boolean and number inputs, as sent."""
    for node in (json_data.get("prompt") or {}).values():
        if not isinstance(node, dict) or node.get("class_type") != NODE_ID:
            continue
        inputs = node.get("inputs") or {}
        for name, value in list(inputs.items()):
            default = getattr(Settings, name, None)
            if isinstance(value, list) or name not in TOOLTIPS or isinstance(default, str) or default is None:
                continue  # a link, the model, or a name (validate_inputs checks names)
            if isinstance(default, bool):
                if isinstance(value, str) and value.lower() in ("true", "false"):
                    inputs[name] = value.lower() == "true"
                elif not isinstance(value, bool):
                    inputs[name] = _Invalid(f"{name} must be true or false, got {value!r}")
            elif isinstance(value, bool) or not isinstance(value, (int, float)) or (
                    isinstance(default, int) and not float(value).is_integer()):
                kind = "a whole number" if isinstance(default, int) else "a number"
                inputs[name] = _Invalid(f"{name} must be {kind}, got {value!r}")
    return json_data


class SageAttentionScope(io.ComfyNode):
    @classmethod
    def define_schema(cls) -> io.Schema:
        d, choices = Settings(), kernel_choices()
        return io.Schema(
            node_id=NODE_ID,
            display_name="Sage Attention Scope",
            category="model_patches/attention",
            description=(
                "Runs this model's eligible attention calls on a faster attention kernel while it samples. Every "
                "other call, and everything outside sampling (text encoders, VAE), keeps PyTorch SDPA."),
            inputs=[
                io.Model.Input("model", tooltip=TOOLTIPS["model"]),
                io.Boolean.Input("enabled", default=d.enabled, tooltip=TOOLTIPS["enabled"]),
                io.Combo.Input("kernel", options=choices, default=d.kernel, tooltip=kernel_tooltip(choices)),
                io.Int.Input("min_seq_len", default=d.min_seq_len, min=0, max=MAX_SEQ_LEN, step=256,
                             tooltip=TOOLTIPS["min_seq_len"]),
                io.Boolean.Input("first_call_check", default=d.first_call_check, tooltip=TOOLTIPS["first_call_check"]),
                io.Boolean.Input("smooth_k", default=d.smooth_k, tooltip=TOOLTIPS["smooth_k"]),
                io.Combo.Input("routing", options=list(ROUTINGS), default=d.routing, tooltip=TOOLTIPS["routing"]),
                io.Float.Input("start_percent", default=d.start_percent, min=0.0, max=1.0, step=0.01,
                               tooltip=TOOLTIPS["start_percent"]),
                io.Float.Input("end_percent", default=d.end_percent, min=0.0, max=1.0, step=0.01,
                               tooltip=TOOLTIPS["end_percent"]),
                io.Int.Input("first_blocks", default=d.first_blocks, min=-1, max=1000,
                             tooltip=TOOLTIPS["first_blocks"]),
                io.Int.Input("last_blocks", default=d.last_blocks, min=-1, max=1000, tooltip=TOOLTIPS["last_blocks"]),
            ],
            outputs=[io.Model.Output()],
        )

    @classmethod
    def validate_inputs(cls, kernel, routing):
        """Names are checked here (ComfyUI 0.3.75 checks no V3 combo): any kernel the pack knows is
        valid (one this machine cannot run falls back to auto when the node runs)."""
        if kernel not in session().names():
            return f"kernel {kernel!r} is unknown; on this machine: {', '.join(kernel_choices())}"
        if routing not in ROUTINGS:
            return f"routing {routing!r} is unknown; valid: {', '.join(ROUTINGS)}"
        return True

    @classmethod
    def execute(cls, model, **inputs) -> io.NodeOutput:
        return io.NodeOutput(scoped_model(model, **inputs))
