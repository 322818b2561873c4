"""The Sage Attention Scope node: MODEL -> MODEL. Inputs become Settings; policy is in patches/."""
from __future__ import annotations

import dataclasses
import inspect
import logging

from comfy_api.latest import io

from ..patches import Settings, scope_for_family
from ..patches.settings import FRACTIONS, MAX_SEQ_LEN, ROUTINGS, SPARSE_METHODS, order_problem, problem
from . import cuda_devices, session

log = logging.getLogger(__name__)

# Each input's help: the node's tooltips and the docs' input table (scripts/write_docs.py).
TOOLTIPS = {
    "model": "The diffusion model to scope (from a model loader).",
    "enabled": "Off: every call runs ComfyUI's own attention; the output is identical to no node.",
    "kernel": "auto: every kernel installed that this GPU runs, the quantised ones for its compute capability "
              "(SageAttention 2 and 1, comfy-kitchen INT8; SageAttention 3's FP4 only when picked by name) and "
              "the exact ones (torch's cuDNN, flash and memory-efficient attention among them); each one's first "
              "call of a kind is checked against ComfyUI's result. exact: the exact ones only. Or one kernel by "
              "name.",
    "min_seq_len": "0 (auto): calls with a query under 1024 or a key under 512 tokens keep ComfyUI's attention, "
                   "where no kernel pays on any GPU, and timing per shape decides the rest. Any other number: calls "
                   "whose query or key is shorter keep ComfyUI's attention.",
    "first_call_check": "Compare the first call per device, dtype, head size, key length and kernel with ComfyUI's "
                        "result; a mismatch keeps ComfyUI's attention for those calls for the session.",
    "smooth_k": "Subtract each head's mean key before quantising (SageAttention's smooth_k): can help with "
                "outlier keys, hurt accuracy on Qwen-Image. Off by default.",
    "routing": "measured: per shape, every eligible kernel is timed against ComfyUI's own attention and the "
               "fastest kept (ComfyUI's own where it is fastest); on a GPU a whole model evaluation is then timed "
               "with and without the Scope, which steps aside where its step is slower. always: every eligible "
               "call on the first eligible kernel, untimed.",
    "start_percent": "Steps before this point of the schedule (0 = the first) keep ComfyUI's attention.",
    "end_percent": "Steps after this point of the schedule (1 = the last) keep ComfyUI's attention.",
    "first_blocks": "Blocks kept on ComfyUI's attention at the start of each block type, where the model says "
                    "which block is calling (FLUX, Chroma, HunyuanVideo, Qwen-Image). -1: the kernel's default "
                    "(1 for SageAttention 3, else 0).",
    "last_blocks": "Blocks kept on ComfyUI's attention at the end of each block type; -1: the kernel's default.",
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
CHOICE_SETS = {"exact": "the exact kernels only (torch's cuDNN, flash and memory-efficient attention among them), "
                        "the fastest per shape; no quantisation"}


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
                                 "installed for it): the Scope keeps ComfyUI's attention; Status says what to install.")


# A bad value is quoted in an error to this many characters: a 5 MiB value must not make a 5 MiB answer.
QUOTED_CHARS = 60


def quoted(value) -> str:
    """``repr(value)``, cut to QUOTED_CHARS: how an error quotes a bad value."""
    text = repr(value)
    if len(text) <= QUOTED_CHARS:
        return text
    return text[:QUOTED_CHARS - 1] + "…"


def kernel_problem(kernel) -> str | None:
    """What is wrong with the kernel choice, or None: any choice the pack knows is valid (one this machine
    cannot run falls back to auto when the node runs). None is a linked kernel, read when the node runs;
    a list is a malformed link, which ComfyUI refuses itself."""
    if kernel is None or isinstance(kernel, list):
        return None
    if not isinstance(kernel, str) or kernel not in session().knowledge.names():
        return f"kernel {quoted(kernel)} is unknown; on this machine: {', '.join(kernel_choices())}"
    return None


def window_problem(start_percent, end_percent) -> str | None:
    """What is wrong with the step window, or None: each end within its range, the start not above the
    end. ComfyUI hands each end over as a float, or as it came where it could not convert it (which it
    refuses itself), or None where it is linked (read when the node runs): those are not this check's."""
    if not (isinstance(start_percent, float) and isinstance(end_percent, float)):
        return None
    wrong = problem("start_percent", start_percent) or problem("end_percent", end_percent)
    if wrong is None and start_percent > end_percent:
        wrong = order_problem(start_percent, end_percent)
    return wrong


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
                "other call, and everything outside sampling (text encoders, VAE), keeps ComfyUI's own attention."),
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
    def validate_inputs(cls, kernel, start_percent=Settings.start_percent, end_percent=Settings.end_percent):
        """What the declared types, ranges and options cannot say: the step window's order, and whether a
        kernel choice the combo does not offer on this machine (a workflow saved on another) is one the
        pack knows. ComfyUI converts each value first, then reports a refusal under every input named
        here and checks their ranges and options no further: the window's ranges are checked here too."""
        return kernel_problem(kernel) or window_problem(start_percent, end_percent) or True

    @classmethod
    def execute(cls, model, **inputs) -> io.NodeOutput:
        return io.NodeOutput(scoped_model(model, **inputs))
