"""The Sage Attention Scope node: MODEL -> MODEL. Inputs become Settings; policy is in patches/."""
from __future__ import annotations

import dataclasses
import inspect
import logging
import math
import sys

from comfy_api.latest import io

from ..patches import Settings, scope_for_family
from ..patches.settings import (BOOLEANS, FRACTIONS, MAX_SEQ_LEN, ROUTINGS, SPARSE_METHODS, WHOLE_NUMBERS,
                                order_problem, problem)
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
    "sparse": "sol-attn: comfy-kitchen's training-free sparse attention (0.2.40 or newer) on long self-attention "
              "calls, where its first call of each kind stays close to dense (sparse_gate) and, under measured "
              "routing, it is faster than the fastest dense kernel. off: dense only.",
    "sparse_tau": "Sparse density: higher attends fewer key blocks exactly (faster, further from dense).",
    "sparse_topk": "Above 0: keep this fraction of key blocks per query block instead of sparse_tau.",
    "sparse_start_percent": "Steps before this point of the schedule stay dense (the layout forms early).",
    "sparse_min_tokens": "Self-attention calls with fewer tokens stay dense (sparse pays only on long ones).",
    "sparse_gate": "The first sparse call of each kind is compared with dense; above this relative L2 those "
                   "calls stay dense for the session. 1.0 opens the gate (benchmarks).",
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


# The choices that name a set of kernels rather than one (patches/backends AUTO_CHOICE, EXACT_CHOICE).
CHOICE_SETS = {"exact": "torch's exact SDPA backends only (cuDNN, flash, memory-efficient), the faster per shape; "
                        "no quantisation"}


def choice_words(name: str) -> str:
    """What the kernel choice ``name`` is, in words."""
    if name in CHOICE_SETS:
        return CHOICE_SETS[name]
    return session().knowledge.backend(name).label


def kernel_tooltip(choices: list[str]) -> str:
    """The kernel input's help: what each choice offered here is, in words."""
    kernels = [f"{name}: {choice_words(name)}" for name in choices[1:]]
    return TOOLTIPS["kernel"] + ("\n" + "\n".join(kernels) if kernels else
                                 " No kernel is usable on this machine (no CUDA GPU, or no kernel library "
                                 "installed for it): the Scope keeps SDPA; Status says what to install.")


# A bad value is quoted in an error to this many characters: a 5 MiB value must not make a 5 MiB answer
# (ComfyUI quotes the value it holds in the prompt: the hook puts the cut value there).
QUOTED_CHARS = 60


def quoted(value) -> str:
    """``repr(value)``, cut to QUOTED_CHARS: how an error quotes a bad value."""
    text = repr(value)
    if len(text) <= QUOTED_CHARS:
        return text
    return text[:QUOTED_CHARS - 1] + "…"


class _Quoted:
    """Stands in for a bad value in ``settings.problem``'s sentence: what its repr says is the value, cut."""

    def __init__(self, value):
        self.text = quoted(value)

    def __repr__(self):
        return self.text


class _RefusedValue(str):
    """A raw prompt value refused for an input ComfyUI converts (BOOLEAN, INT, FLOAT): the value as
    quoted, whose conversion fails with what is wrong. ComfyUI's /prompt then answers 400 with one
    error under that input ("Failed to convert an input value", details "<input>, <value>,
    <sentence>", the sentence also as its exception_message) and checks the input no further; its
    front ends quote the value as given, never a wrapper."""

    def __new__(cls, value, wrong: str):
        refused = super().__new__(cls, quoted(value))
        refused.wrong = wrong
        return refused

    def _refuse(self):
        raise ValueError(self.wrong)

    __int__ = __float__ = __bool__ = _refuse


class _RefusedChoice(dict):
    """A raw prompt value refused for a combo (which ComfyUI does not convert, and 0.3.75 does not check
    against its options): wrapped the way ComfyUI wraps a widget's value ({"__value__": value}, the value
    cut) but failing to unwrap with what is wrong, which ComfyUI reports as it reports _RefusedValue's."""

    def __init__(self, value, wrong: str):
        super().__init__(__value__=quoted(value))
        self.wrong = wrong

    def __getitem__(self, key):
        raise ValueError(self.wrong)

    def __str__(self):
        return dict.get(self, "__value__")

    __format__ = object.__format__


def _read(name: str, value):
    """``value`` as the Scope reads it: ComfyUI's own wrapping of a value removed, booleans sent as
    text and whole numbers sent as floats made what they say."""
    if isinstance(value, dict) and "__value__" in value:
        value = value["__value__"]
    if name in BOOLEANS and isinstance(value, str) and value.lower() in ("true", "false"):
        return value.lower() == "true"
    if name in WHOLE_NUMBERS and isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def _is_number_to_range_check(name: str, value) -> bool:
    """Whether ``value`` is a number of the kind the input takes (a whole number for an INT, a number
    ComfyUI reads as a float other than NaN for a FLOAT), whose range ComfyUI's own min and max check:
    their message is ComfyUI's, which its front ends show at the widget and clear once it is mended."""
    if isinstance(value, bool):
        return False
    if name in WHOLE_NUMBERS:
        return isinstance(value, int)
    if name in FRACTIONS and isinstance(value, int):
        return abs(value) <= sys.float_info.max  # a larger one fails ComfyUI's float(): an OverflowError
    if name in FRACTIONS:
        return isinstance(value, float) and not math.isnan(value)
    return False


def _checked(name: str, value):
    """``value`` as the Scope reads it, or, where it is wrong in a way ComfyUI would not say (a number
    as text, a fraction for a whole number, NaN, a boolean for a number, a routing it does not know),
    a refusal saying what is wrong with it."""
    value = _read(name, value)
    if _is_number_to_range_check(name, value):
        return value
    # A value too long to quote whole is no valid setting: problem() reads its stand-in, cut.
    shown = value if len(repr(value)) <= QUOTED_CHARS else _Quoted(value)
    wrong = problem(name, shown)
    if wrong is None:
        return value
    if name in BOOLEANS or name in WHOLE_NUMBERS or name in FRACTIONS:
        return _RefusedValue(value, wrong)
    return _RefusedChoice(value, wrong)


def _out_of_order(start, end) -> bool:
    """Whether the step window's start lies after its end, both numbers of its range."""
    return problem("start_percent", start) is None and problem("end_percent", end) is None and start > end


def strict_inputs(json_data):
    """ComfyUI's on_prompt handler: each Scope node's raw inputs, as sent, read before ComfyUI converts
    them; one that is wrong in a way ComfyUI's own checks would not say fails ComfyUI's validation under
    its own name (_RefusedValue, _RefusedChoice), and so does a start_percent above end_percent. ComfyUI
    checks the rest: a number's range (the inputs' min and max), a malformed link, the kernel (the
    node's validate_inputs). ComfyUI's validate_inputs cannot do these: it sees the values only after
    ComfyUI's conversion ("no" -> True, 1.5 -> 1, "12288" -> 12288), and its answer is reported under
    every input its signature names (the kernel's, which must be named there). Never raises: a body
    that is not a prompt is ComfyUI's to answer."""
    prompt = json_data.get("prompt") if isinstance(json_data, dict) else None
    if not isinstance(prompt, dict):
        return json_data
    for node in prompt.values():
        inputs = node.get("inputs") if isinstance(node, dict) and node.get("class_type") == NODE_ID else None
        if not isinstance(inputs, dict):
            continue
        for name, value in list(inputs.items()):
            if name in TOOLTIPS and name not in ("model", "kernel") and not isinstance(value, list):  # a link
                inputs[name] = _checked(name, value)
        # A kernel sent as null: validate_inputs, which sees a linked kernel as None too, lets both pass.
        if "kernel" in inputs and inputs["kernel"] is None:
            inputs["kernel"] = _RefusedChoice(None, problem("kernel", None))
        start, end = inputs.get("start_percent"), inputs.get("end_percent")
        if _out_of_order(start, end):
            inputs["start_percent"] = _RefusedValue(start, order_problem(start, end))
    return json_data


def advanced() -> dict:
    """``advanced=True`` for an input most users keep at its default, where this ComfyUI's V3 API has it
    (0.33's front end then shows it only on request); nothing where it has not (0.3.75)."""
    if "advanced" in inspect.signature(io.Input.__init__).parameters:
        return {"advanced": True}
    return {}


def sparse_number_inputs(d: Settings, expert: dict) -> list:
    """The sparse tier's numbers, advanced (most users keep their defaults) and optional (a workflow saved
    before they existed still validates)."""
    return [
        io.Float.Input("sparse_tau", default=d.sparse_tau, min=FRACTIONS["sparse_tau"][0],
                       max=FRACTIONS["sparse_tau"][1], step=0.05, tooltip=TOOLTIPS["sparse_tau"], optional=True,
                       **expert),
        io.Float.Input("sparse_topk", default=d.sparse_topk, min=0.0, max=1.0, step=0.01,
                       tooltip=TOOLTIPS["sparse_topk"], optional=True, **expert),
        io.Float.Input("sparse_start_percent", default=d.sparse_start_percent, min=0.0, max=1.0, step=0.01,
                       tooltip=TOOLTIPS["sparse_start_percent"], optional=True, **expert),
        io.Int.Input("sparse_min_tokens", default=d.sparse_min_tokens, min=0, max=MAX_SEQ_LEN, step=1,
                     tooltip=TOOLTIPS["sparse_min_tokens"], optional=True, **expert),
        io.Float.Input("sparse_gate", default=d.sparse_gate, min=0.0, max=1.0, step=0.01,
                       tooltip=TOOLTIPS["sparse_gate"], optional=True, **expert),
    ]


class SageAttentionScope(io.ComfyNode):
    @classmethod
    def define_schema(cls) -> io.Schema:
        d, choices, expert = Settings(), kernel_choices(), advanced()
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
                # step 1: a front end rounds what is typed to the step (with 256, 100 became 0: auto)
                io.Int.Input("min_seq_len", default=d.min_seq_len, min=0, max=MAX_SEQ_LEN, step=1,
                             tooltip=TOOLTIPS["min_seq_len"], **expert),
                io.Boolean.Input("first_call_check", default=d.first_call_check, tooltip=TOOLTIPS["first_call_check"],
                                 **expert),
                io.Boolean.Input("smooth_k", default=d.smooth_k, tooltip=TOOLTIPS["smooth_k"], **expert),
                io.Combo.Input("routing", options=list(ROUTINGS), default=d.routing, tooltip=TOOLTIPS["routing"],
                               **expert),
                io.Float.Input("start_percent", default=d.start_percent, min=0.0, max=1.0, step=0.01,
                               tooltip=TOOLTIPS["start_percent"]),
                io.Float.Input("end_percent", default=d.end_percent, min=0.0, max=1.0, step=0.01,
                               tooltip=TOOLTIPS["end_percent"]),
                io.Int.Input("first_blocks", default=d.first_blocks, min=-1, max=1000,
                             tooltip=TOOLTIPS["first_blocks"], **expert),
                io.Int.Input("last_blocks", default=d.last_blocks, min=-1, max=1000, tooltip=TOOLTIPS["last_blocks"],
                             **expert),
                # optional: workflows saved before the sparse inputs existed still validate
                io.Combo.Input("sparse", options=list(SPARSE_METHODS), default=d.sparse, tooltip=TOOLTIPS["sparse"],
                               optional=True),
                *sparse_number_inputs(d, expert),
            ],
            outputs=[io.Model.Output()],
        )

    @classmethod
    def validate_inputs(cls, kernel):
        """The kernel, the one input checked here (ComfyUI reports the answer under every input this
        signature names; strict_inputs and ComfyUI's own checks see to the rest): any kernel the pack
        knows is valid, one this machine cannot run falls back to auto when the node runs. Naming it
        here also keeps 0.33 from checking it against this machine's choices. A linked kernel (None
        here: read when the node runs) passes, and so do a list, which ComfyUI refuses itself as a
        malformed link, and a kernel sent as null, which strict_inputs refuses."""
        if kernel is None or isinstance(kernel, (list, _RefusedChoice)):
            return True
        if not isinstance(kernel, str) or kernel not in session().knowledge.names():
            return f"kernel {quoted(kernel)} is unknown; on this machine: {', '.join(kernel_choices())}"
        return True

    @classmethod
    def execute(cls, model, **inputs) -> io.NodeOutput:
        return io.NodeOutput(scoped_model(model, **inputs))
