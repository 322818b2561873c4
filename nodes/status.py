"""The Sage Attention Status node: what the Scope did in this run (the prompt being executed) and in
the session, as text (``render``: web/js/status.js shows it in the node) and as plain data (``payload``,
in the node's UI output and its history entry for whoever reads them)."""
from __future__ import annotations

import dataclasses
import importlib
from typing import Any

import torch
from comfy_api.latest import io

from ..patches import Reason, Session, backends, decide, sampling
from ..patches.state.ledger import SAID, Tally
from . import cuda_devices, session

UI_KEY = "sage_attention_status"
INSTALL_DOCS = "https://github.com/sage-attention-scope/sage-attention-scope/blob/main/docs/user-guide.md#install"
MEASURED_DOCS = "https://github.com/sage-attention-scope/sage-attention-scope/blob/main/docs/measured.md"
HAVE = {  # what ``auto`` found, where it is not SageAttention 2; what was measured: MEASURED_DOCS
    None: "no kernel it can use",
    "sage1_triton": "only SageAttention 1 (PyPI 1.0.x), which measured routing rarely finds faster than "
                    "ComfyUI's attention and which is wrong at short keys (the first-call check keeps those on "
                    "ComfyUI's attention)",
    "kitchen_int8": "only comfy-kitchen INT8: accurate, and used only where measured routing times it faster than "
                    "ComfyUI's attention (GPUs whose INT8 runs at twice FP16 gain most)"}


def install_advice(state: Session, devices: list[torch.device]) -> list[str]:
    """What to install, per GPU where ``auto`` has no SageAttention 2 (which pays at long sequences: see
    MEASURED_DOCS): what it found and what this GPU would need."""
    if not devices:
        return [f"No CUDA GPU here: every call keeps ComfyUI's attention (the kernels need an NVIDIA GPU). "
                f"What to install on a machine with one: {INSTALL_DOCS}"]
    advice, knowledge = [], state.knowledge
    for device in devices:
        capability, found = knowledge.finder.capability(device), knowledge.kernel("auto", device)
        name = found.bound and found.bound.name
        if name not in HAVE:
            continue
        sage2 = backends.SAGE2_BY_ARCH.get(capability)
        need = (f"SageAttention 2 ({sage2}), built from source" if sage2 else "a kernel library built for it")
        advice.append(f"{device} (sm{capability[0]}{capability[1]}): auto found {HAVE[name]}"
                      + (f" ({found.why})" if name is None else "") + f". This GPU would need {need}: {INSTALL_DOCS}")
    return advice


def installed_libraries(state: Session) -> dict[str, Any]:
    """Each kernel library's installed version (None: not installed). torch's own backends live in this
    pack's module and are torch's: torch is named once, by its version."""
    libraries = {"torch": torch.__version__}
    for backend in backends.REGISTRY.values():
        if not backend.module.startswith(backends.__name__):
            libraries[backend.module] = state.knowledge.library_version(backend.module)
    return libraries


def taken_over(run: list[dict]) -> set[str]:
    """The labels of this run whose Scope another Scope took over: in a chain of Scopes the last one's
    router serves the model, so the others' records sampled nothing while one of the same model did."""
    sampled = {sampling.model_of_label(record["model"]) for record in run if record["sampling_ms"]}
    return {record["model"] for record in run
            if not record["sampling_ms"] and sampling.model_of_label(record["model"]) in sampled}


def payload(state: Session, run_id=None) -> dict[str, Any]:
    """What the session knows and reports, as plain data: the ledger's snapshot with, per device, the
    knowledge's checks and routing decisions. ``run``: the models of run ``run_id`` (the prompt), one
    record per model and way of sampling it (the Scope that served it), empty where that prompt scoped
    none; ``models``: what became of each model in its latest run, less the Scopes taken over in this one."""
    reported, known = state.ledger.snapshot(run_id), state.knowledge.snapshot()
    hidden = taken_over(reported["run"])
    empty = {"kernels": {}, "session": Tally().as_dict(), "last_generation": Tally().as_dict(), "handed": {},
             "bucket_calls": {"last": {}, "session": {}}, "route_calls": {"last": {}, "session": {}}}
    devices = {}
    for device in sorted({*reported["devices"], *known}):
        counts = reported["devices"].get(device, empty)
        learned = known.get(device, {"retired": None, "checks": [], "decisions": [], "steps": []})
        devices[device] = {
            "kernels": counts["kernels"], "retired": learned["retired"],
            "session": counts["session"], "last_generation": counts["last_generation"], "handed": counts["handed"],
            "route_calls": counts["route_calls"],
            "checks": [dataclasses.asdict(r) | {"key": r.key.describe()} for r in learned["checks"]],
            "steps": [{"model": shape.model, "latent": list(shape.latent_shape), "scope_ms": verdict.scope_ms,
                       "comfy_ms": verdict.comfy_ms, "keep_scope": verdict.keep_scope, "text": verdict.describe()}
                      for shape, verdict in learned["steps"]],
            "routing": [{"bucket": m.key.describe(), "kernel": m.key.kernel, "kernel_ms": m.kernel_ms,
                         "comfy_ms": m.comfy_ms, "use_kernel": m.use_kernel, "text": m.describe(),
                         "calls_last": counts["bucket_calls"]["last"].get(m.key.with_kernel(), 0),
                         "calls_session": counts["bucket_calls"]["session"].get(m.key.with_kernel(), 0)}
                        for m in learned["decisions"]],
            "buckets": [verdict | {"calls_last": counts["route_calls"]["last"].get(verdict["bucket"], {}),
                                   "calls_session": counts["route_calls"]["session"].get(verdict["bucket"], {})}
                        for verdict in decide.bucket_verdicts(learned["decisions"], state.knowledge.is_exact)]}
    return {
        "libraries": installed_libraries(state),
        "advice": install_advice(state, cuda_devices()),
        "generations": reported["generations"],
        # A checkpoint may choose its attention (``preferred_attention``, which wrap_attn drops before any
        # override): the calls the Scope declines then run ComfyUI's default instead.
        "preferred_attention": hasattr(importlib.import_module("comfy.ldm.modules.attention"), "ComfyAttention"),
        "last_ms": reported["last_ms"],
        "run": [record for record in reported["run"] if record["model"] not in hidden],
        "models": [model for model in reported["models"] if model["model"] not in hidden],
        "devices": devices}


def _counts_lines(counts: dict, head: str, indent: str, handed: dict) -> list[str]:
    """What became of a device's calls: on the kernel, or declined (and why); ``handed``: of the declined,
    the calls that went to another override (one set before the Scope) rather than ComfyUI's attention."""
    on_comfyui = counts["declined_total"] - sum(handed.values())
    where = [f"{n} on {name}" for name, n in handed.items()]
    if on_comfyui or not handed:
        where.insert(0, f"{on_comfyui} on ComfyUI's attention")
    lines = [f"{head}{counts['kernel']} on the kernel, " + ", ".join(where)]
    lines += [f"{indent}  declined {n}: {Reason(reason).label}" for reason, n in counts["declined"].items()]
    lines += [f"{indent}  faults ({fault}): {n}" for fault, n in counts["faults"].items()]
    lines += [f"{indent}  {says.format(n=counts[name])}" for name, says in SAID.items() if counts[name]]
    lines += _sparse_lines(counts.get("sparse"), indent)
    return lines


def _sparse_lines(sparse, indent: str) -> list[str]:
    """Where sparse attention was asked for: the kernel's calls that ran sparse, and why the others ran dense."""
    if sparse is None:
        return []
    lines = [f"{indent}  sparse: {sparse['calls']} of the kernel's calls ran sparse"]
    lines += [f"{indent}    dense {n}: {Reason(reason).label}" for reason, n in sparse["dense"].items()]
    return lines


def _run_lines(snap: dict) -> list[str]:
    """This run's models: what became of each, its sampling time and its calls per device."""
    lines = ["This run:"]
    if not snap["run"]:
        lines.append("  no scoped model in this run")
    for model in snap["run"]:
        lines.append(f"  model {model['model']}: {model['note']}")
        if model["sampling_ms"]:
            lines.append(f"    {_sampling(model['sampling_ms'], model['timing_ms'])}")
        for device, counts in model["devices"].items():
            handed = {} if model["declined_to"] is None else {model["declined_to"]: counts["declined_total"]}
            lines += _counts_lines(counts, f"    {device}: ", "    ", handed)
    return lines


def _session_heading(generations: int) -> list[str]:
    if generations == 0:
        return ["Session:", "  nothing sampled through the Scope yet"]
    if generations == 1:
        return ["Session (1 generation):"]
    return [f"Session ({generations} generations):"]


def _kernel_line(device: str, kernels: dict) -> str | None:
    """The kernels the choices made on ``device`` this session bound, on one line (a choice that bound
    none is said in its model's note); ComfyUI's attention only where none bound; None where none was made."""
    if not kernels:
        return None
    bound = {f"{line['kernel']}, {line['version']} ({line['why']})" for line in kernels.values() if line["kernel"]}
    if bound:
        return f"  {device}: " + "; ".join(sorted(bound))
    return f"  {device}: ComfyUI's attention only ({next(iter(kernels.values()))['why']})"


def _session_lines(snap: dict) -> list[str]:
    lines = _session_heading(snap["generations"])
    lines += [f"  model {m['model']}: {m['note']}" for m in snap["models"]]
    for device, info in snap["devices"].items():
        kernel = _kernel_line(device, info["kernels"])
        if kernel is not None:
            lines.append(kernel)
        if info["retired"]:
            lines.append(f"  {device}: retired for this session: {info['retired']}")
        for check in info["checks"]:
            lines.append(_check_line(check))
        lines += [f"  {line}" for line in bucket_lines(info["buckets"])]
        lines += [f"  step of {step['model'] or 'the model'}, latent {'x'.join(map(str, step['latent']))}: "
                  f"{step['text']}" for step in info["steps"]]
        if info["session"]["kernel"] or info["session"]["declined_total"]:
            lines += _counts_lines(info["session"], f"  {device}: ", "  ", info["handed"])
    return lines


def _check_line(check: dict) -> str:
    """A first-call check's verdict, or a sparse gate's (its error against dense and the gate)."""
    if check["gated"]:
        gate = "open" if check["max_rel_l2"] == float("inf") else f"{check['max_rel_l2']:g}"
        verdict = "passed" if check["passed"] else "FAILED -> dense"
        return f"  sparse gate {check['key']}: {verdict} (rel L2 {check['rel_l2']:.4f} against dense, gate {gate})"
    verdict = "passed" if check["passed"] else "FAILED -> ComfyUI's attention"
    return (f"  check {check['key']}: {verdict} "
            f"(cosine {check['cosine']:.5f}, rel L2 {check['rel_l2']:.4f})")


def render(snap: dict) -> str:
    """Human-readable status from ``payload()``: the one rendering of it (web/js/status.js shows this text)."""
    lines = ["Installed: " + ", ".join(f"{name} {_version(version)}" for name, version in snap["libraries"].items())]
    lines += snap["advice"]
    lines += [""] + _run_lines(snap) + [""] + _session_lines(snap)
    if snap["preferred_attention"]:
        lines.append("Note: this ComfyUI lets a checkpoint choose its own attention; while the Scope is on, the calls "
                     "it declines run ComfyUI's default attention instead of the checkpoint's choice.")
    if snap["generations"]:
        lines.append(f"Last generation: {_sampling(snap['last_ms']['sampling'], snap['last_ms']['timing'])}")
    return "\n".join(lines)


def _version(version) -> str:
    if version is None:
        return "(not installed)"
    return version


def bucket_lines(buckets: list[dict]) -> list[str]:
    """Per measured shape bucket: what serves it and by what margin over ComfyUI's attention, every
    candidate's time, and its calls by route in the last generation."""
    lines = []
    for verdict in buckets:
        if verdict["winner"] == "ComfyUI":
            served = "ComfyUI's attention (no candidate faster by the margin)"
        else:
            served = f"{verdict['winner']} {verdict['margin']:.2f}× ComfyUI's"
        timed = ", ".join(f"{name} {'failed' if ms is None else f'{ms:.3f} ms'}"
                          for name, ms in verdict["candidates"].items())
        calls = ", ".join(f"{route} {n}" for route, n in verdict["calls_last"].items()) or "none"
        saved = " (saved)" if verdict["saved"] else ""
        lines.append(f"routing {verdict['bucket']}: {served}{saved} ({timed}; ComfyUI {verdict['comfy_ms']:.3f} ms); "
                     f"calls in the last generation: {calls}")
    return lines


def _sampling(sampling_ms: float, timing_ms: float) -> str:
    return f"sampling {sampling_ms / 1e3:.2f} s" + (
        f", of which {timing_ms:.0f} ms timing kernels ({100 * timing_ms / max(sampling_ms, 1e-9):.2f}%)"
        if timing_ms else "")


class SageAttentionStatus(io.ComfyNode):
    @classmethod
    def define_schema(cls) -> io.Schema:
        return io.Schema(
            node_id="SageAttentionStatus",
            display_name="Sage Attention Status",
            category="model_patches/attention",
            description="What the Sage Attention Scope did in this run and this session: the kernel per device, "
                        "the first-call checks, the routing table and the call counters.",
            inputs=[
                io.AnyType.Input("after", optional=True,
                                 tooltip="Connect the sampler's output so the status is read after sampling."),
                io.Boolean.Input("reset_counters", default=False,
                                 tooltip="Clear the counters and per-run records after showing them (what the pack "
                                         "learned about this machine stays)."),
            ],
            outputs=[io.String.Output(display_name="status")],
            is_output_node=True,
            not_idempotent=True,
        )

    @classmethod
    def fingerprint_inputs(cls, **kwargs):
        return float("nan")  # never served from the cache: the counters change between runs

    @classmethod
    def execute(cls, after=None, reset_counters=False) -> io.NodeOutput:
        snap = payload(session(), sampling.run_id())
        text = render(snap)
        if reset_counters:
            session().ledger.reset()
        return io.NodeOutput(text, ui={"text": [text], UI_KEY: [snap]})
