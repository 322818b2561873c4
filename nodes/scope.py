"""The Sage Attention Scope node: MODEL -> MODEL. Inputs become Settings; policy is in patches/."""
from __future__ import annotations

import dataclasses
import logging

from comfy_api.latest import io

from ..patches import Settings, scope_for_family
from ..patches.settings import BOOLEANS, MAX_SEQ_LEN, ROUTINGS, WHOLE_NUMBERS, order_problem, problem
from . import cuda_devices, session

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
    resolution = state.knowledge.kernel(settings.kernel, model.load_device)
    if settings.kernel != "auto" and resolution.bound is None:
        state.use_kernel(settings.kernel, model.load_device)
        log.warning("Sage Attention Scope: kernel %s cannot run here (%s); using auto.", settings.kernel,
                    resolution.why)
        settings = dataclasses.replace(settings, kernel="auto")
    return scope_for_family(model, settings, state)[0]


def kernel_choices() -> list[str]:
    """``auto`` and the kernels that bind on this machine's GPUs."""
    return session().knowledge.usable(cuda_devices())


def kernel_tooltip(choices: list[str]) -> str:
    """The kernel input's help: what each choice offered here is, in words."""
    kernels = [f"{name}: {session().knowledge.backend(name).label}" for name in choices[1:]]
    return TOOLTIPS["kernel"] + ("\n" + "\n".join(kernels) if kernels else
                                 " No kernel is usable on this machine (no CUDA GPU, or no kernel library "
                                 "installed for it): the Scope keeps SDPA; Status says what to install.")


class _Invalid(dict):
    """A raw prompt value that is wrong for its input, wrapped the way ComfyUI wraps a widget's value
    ({"__value__": value}) but failing to unwrap with what is wrong: ComfyUI's /prompt then answers
    400 with one error under that input ("Failed to convert an input value", details
    "<input>, <value>, <sentence>") and checks the input no further, on 0.3.75 and 0.33 alike, for
    every input type, combos included (0.3.75 checks no V3 combo). ComfyUI's validate_inputs cannot
    do it: it sees the values only after ComfyUI's conversion ("no" -> True, 1.5 -> 1, "nan" -> nan),
    and its answer is reported under every input its signature names."""

    def __init__(self, value, wrong: str):
        super().__init__(__value__=value)
        self.wrong = wrong

    def __getitem__(self, key):
        raise ValueError(self.wrong)

    def __str__(self):
        return str(dict.get(self, "__value__"))

    __format__ = object.__format__


def _checked(name: str, value):
    """``value`` as the Scope reads it (booleans sent as text, whole numbers sent as floats), or an
    _Invalid saying what is wrong with it."""
    if name in BOOLEANS and isinstance(value, str) and value.lower() in ("true", "false"):
        value = value.lower() == "true"
    elif name in WHOLE_NUMBERS and isinstance(value, float) and value.is_integer():
        value = int(value)
    wrong = problem(name, value)
    return _Invalid(value, wrong) if wrong else value


def strict_inputs(json_data):
    """ComfyUI's on_prompt handler: each Scope node's raw inputs, as sent, checked before ComfyUI
    converts them; one that is wrong fails ComfyUI's validation under its own name (_Invalid). The
    kernel is the node's validate_inputs' (a kernel of another machine is valid). Never raises:
    a body that is not a prompt is ComfyUI's to answer."""
    prompt = json_data.get("prompt") if isinstance(json_data, dict) else None
    if not isinstance(prompt, dict):
        return json_data
    for node in prompt.values():
        inputs = node.get("inputs") if isinstance(node, dict) and node.get("class_type") == NODE_ID else None
        if not isinstance(inputs, dict):
            continue
        for name, value in list(inputs.items()):
            if isinstance(value, dict) and "__value__" in value:  # ComfyUI's own wrapping of a value
                value = value["__value__"]
            if name in TOOLTIPS and name not in ("model", "kernel") and not isinstance(value, list):  # a link
                inputs[name] = _checked(name, value)
        start, end = inputs.get("start_percent"), inputs.get("end_percent")
        if all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in (start, end)) and start > end:
            inputs["start_percent"] = _Invalid(start, order_problem(start, end))
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
    def validate_inputs(cls, kernel):
        """The kernel, the one input checked here (ComfyUI reports the answer under every input this
        signature names; strict_inputs checks the rest): any kernel the pack knows is valid, one this
        machine cannot run falls back to auto when the node runs. Naming it here also keeps 0.33 from
        checking it against this machine's choices."""
        if not isinstance(kernel, str) or kernel not in session().knowledge.names():
            return f"kernel {kernel!r} is unknown; on this machine: {', '.join(kernel_choices())}"
        return True

    @classmethod
    def execute(cls, model, **inputs) -> io.NodeOutput:
        return io.NodeOutput(scoped_model(model, **inputs))
