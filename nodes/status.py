"""The Sage Attention Status node: what the Scope did in this run (the prompt being executed) and in
the session, as text and as a UI payload (web/js/status.js renders it)."""
from __future__ import annotations

import collections
import dataclasses
import importlib
from typing import Any, Optional

import torch
from comfy_api.latest import io

from ..patches import Fault, Reason, Session, backends, scope
from ..patches.reasons import COPIED, MASK_DROPPED, NO_BLOCK_POSITIONS, SAGE
from . import cuda_devices, session

UI_KEY = "sage_attention_status"
INSTALL_DOCS = "https://github.com/sage-attention-scope/sage-attention-scope/blob/main/docs/user-guide.md#install"
HAVE = {  # what ``auto`` found, where it is not SageAttention 2; figures: docs/measured.md (H200)
    None: "no kernel it can use",
    "sage1_triton": "only SageAttention 1 (PyPI 1.0.x), slower than SDPA at every shape measured on an H200 and "
                    "wrong at short keys (the first-call check keeps those on SDPA)",
    "kitchen_int8": "only comfy-kitchen INT8: accurate, but slower than SDPA at every shape measured on an H200 (GPUs "
                    "whose INT8 runs at twice FP16 may gain: measured routing finds where)"}


def install_advice(state: Session, devices: list[torch.device]) -> list[str]:
    """What to install, per GPU where ``auto`` has no SageAttention 2 (which pays on an H200 from about
    12k tokens a call, at fewer on consumer GPUs): what it found and what this GPU would need."""
    if not devices:
        return [f"No CUDA GPU here: every call stays on SDPA (the kernels need an NVIDIA GPU). Install: {INSTALL_DOCS}"]
    advice = []
    for device in devices:
        capability, found = state.finder.capability(device), state.resolve("auto", device)
        name = found.bound and found.bound.name
        if name not in HAVE:
            continue
        sage2 = backends.SAGE2_BY_ARCH.get(capability)
        need = (f"SageAttention 2 ({sage2}), built from source" if sage2 else "a kernel library built for it")
        advice.append(f"{device} (sm{capability[0]}{capability[1]}): auto found {HAVE[name]}"
                      + (f" ({found.why})" if name is None else "") + f". This GPU would need {need}: {INSTALL_DOCS}")
    return advice


def payload(state: Session, run_id=None) -> dict[str, Any]:
    """What the session knows, as plain data. ``run``: the models of run ``run_id`` (the prompt),
    empty where that prompt scoped none."""
    def of(device, items):
        return [item for item in items if item.key.device == device]
    with state.lock:
        devices = sorted({*state.totals, *state.retired, *state.kernel_lines, *(k.device for k in state.checks),
                          *(k.device for k in state.decisions)})
        return {
            "libraries": {b.module: state.finder.versions(b.module) for b in backends.REGISTRY.values()},
            "advice": install_advice(state, cuda_devices()),
            "generations": state.generations,
            # A checkpoint may choose its attention (``preferred_attention``, which wrap_attn drops before any
            # override): the calls the Scope declines then run ComfyUI's default instead.
            "preferred_attention": hasattr(importlib.import_module("comfy.ldm.modules.attention"), "ComfyAttention"),
            "last_ms": {"sampling": state.last_ms[0], "timing": state.last_ms[1]},
            "run": run_records(state, run_id),
            "models": [{"model": label, "note": note} for label, note in state.models.items()],
            "devices": {d: {
                "kernels": dict(state.kernel_lines.get(d, {})), "retired": state.retired.get(d),
                "session": counters(state.totals.get(d)), "last_generation": counters(state.last.get(d)),
                "checks": [dataclasses.asdict(r) | {"key": r.key.label()} for r in of(d, state.checks.values())],
                "routing": [{"bucket": m.key.label(), "kernel": m.key.kernel, "sage_ms": m.sage_ms,
                             "sdpa_ms": m.sdpa_ms, "use_sage": m.use_sage, "text": m.describe(),
                             "calls_last": _bucket_calls(state.last.get(d), m.key),
                             "calls_session": _bucket_calls(state.totals.get(d), m.key)}
                            for m in of(d, state.decisions.values())]} for d in devices}}


def run_records(state: Session, run_id=None) -> list[dict]:
    """The models of run ``run_id`` (the prompt), empty where that prompt scoped none."""
    with state.lock:
        run = state.run if run_id is None or run_id == state.run_id else {}
        return [{"model": label, "note": r["note"], "sampling_ms": r["sampling_ms"], "timing_ms": r["timing_ms"],
                 "devices": {d: counters(c) for d, c in r["counts"].items()}} for label, r in run.items()]


def counters(counts: Optional[collections.Counter]) -> dict[str, Any]:
    """A device's counters in the payload's shape."""
    counts = counts or collections.Counter()
    sdpa = dict(sorted((r.value, n) for r, n in counts.items() if isinstance(r, Reason) and n))
    return {"sage": counts[SAGE], "sdpa": sdpa, "sdpa_total": sum(sdpa.values()),
            "faults": dict(sorted((f.value, n) for f, n in counts.items() if isinstance(f, Fault) and n)),
            "masks_dropped": counts[MASK_DROPPED], "copied": counts[COPIED],
            "no_block_positions": counts[NO_BLOCK_POSITIONS]}


def _bucket_calls(counts: Optional[collections.Counter], bucket) -> int:
    return sum(n for key, n in (counts or {}).items() if isinstance(key, tuple) and key[0] == bucket)


def _counts_lines(counts: dict, head: str, indent: str) -> list[str]:
    lines = [f"{head}{counts['sage']} on the kernel, {counts['sdpa_total']} on SDPA"]
    lines += [f"{indent}  SDPA {n}: {Reason(reason).label}" for reason, n in counts["sdpa"].items()]
    lines += [f"{indent}  faults ({fault}): {n}" for fault, n in counts["faults"].items()]
    if counts["masks_dropped"]:
        lines.append(f"{indent}  masks dropped or the keys they mask left out: {counts['masks_dropped']}")
    if counts["copied"]:
        lines.append(f"{indent}  q/k/v copied for the kernel (grouped-query k/v, or a last dimension not contiguous): "
                     f"{counts['copied']}")
    if counts["no_block_positions"]:
        lines.append(f"{indent}  block window not applied to {counts['no_block_positions']} calls: this model does "
                     f"not say which block calls (every block stays in)")
    return lines


def render(snap: dict) -> str:
    """Human-readable status from ``payload()``."""
    lines = ["Installed: " + ", ".join(f"{name} {version or '(not installed)'}"
                                       for name, version in snap["libraries"].items())]
    lines += [f"Install: {line}" for line in snap["advice"]] + ["", "This run:"]
    if not snap["run"]:
        lines.append("  no scoped model in this run")
    for model in snap["run"]:
        lines.append(f"  model {model['model']}: {model['note']}")
        if model["sampling_ms"]:
            lines.append(f"    {_sampling(model['sampling_ms'], model['timing_ms'])}")
        for device, counts in model["devices"].items():
            lines += _counts_lines(counts, f"    {device}: ", "    ")
    lines += ["", f"Session ({snap['generations']} generations):"]
    lines += [f"  model {m['model']}: {m['note']}" for m in snap["models"]]
    for device, info in snap["devices"].items():
        for choice, line in info["kernels"].items():
            kernel = f"{line['kernel']}, {line['version']}" if line["kernel"] else "SDPA only"
            lines.append(f"  {device}: {kernel} ({line['why']})" + (f" [kernel={choice}]" if choice != "auto" else ""))
        if info["retired"]:
            lines.append(f"  {device}: retired for this session: {info['retired']}")
        for check in info["checks"]:
            lines.append(f"  check {check['key']}: {'passed' if check['passed'] else 'FAILED -> SDPA'} "
                         f"(cosine {check['cosine']:.5f}, rel L2 {check['rel_l2']:.4f})")
        for measured in info["routing"]:
            lines.append(f"  routing {measured['text']}: {measured['calls_last']} calls in the last generation, "
                         f"{measured['calls_session']} this session")
        lines += _counts_lines(info["session"], f"  {device}: ", "  ")
    if snap["preferred_attention"]:
        lines.append("Note: this ComfyUI lets a checkpoint choose its own attention; while the Scope is on, the calls "
                     "it declines run ComfyUI's default attention instead of the checkpoint's choice.")
    if snap["generations"]:
        lines.append(f"Last generation: {_sampling(snap['last_ms']['sampling'], snap['last_ms']['timing'])}")
    return "\n".join(lines)


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
        snap = payload(session(), scope.run_id())
        text = render(snap)
        if reset_counters:
            session().reset_counters()
        return io.NodeOutput(text, ui={"text": [text], UI_KEY: [snap]})
