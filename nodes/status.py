"""The Sage Attention Status node: what the scope did, as text and as a UI payload."""
from __future__ import annotations

from comfy_api.latest import io

import collections
import dataclasses
from typing import Any, Optional

from ..patches import Fault, Reason, Session, backends, trials
from ..patches.reasons import MASK_DROPPED, NO_BLOCK_POSITIONS, SAGE
from . import session

UI_KEY = "sage_attention_status"


def payload(state: Session) -> dict[str, Any]:
    """What the session knows, as plain data: the node's UI payload and the text's source."""
    def of(device, items):
        return [item for item in items if item.key.device == device]
    with state.lock:
        devices = sorted({*state.totals, *state.retired, *state.kernel_lines, *(k.device for k in state.checks),
                          *(k.device for k in state.decisions)})
        return {"generations": state.generations, "last_ms": {"sampling": state.last_ms[0], "timing": state.last_ms[1]},
                "libraries": {b.module: state.finder.versions(b.module) for b in backends.REGISTRY.values()},
                "models": [{"model": m, "scoped": s} for m, s in state.models.items()],
                "thresholds": {"min_cosine": trials.MIN_COSINE, "max_rel_l2": trials.MAX_REL_L2},
                "devices": {d: {
                    "kernels": dict(state.kernel_lines.get(d, {})), "retired": state.retired.get(d),
                    "session": counters(state.totals.get(d)), "last_generation": counters(state.last.get(d)),
                    "checks": [dataclasses.asdict(r) | {"key": r.key.label()} for r in of(d, state.checks.values())],
                    "routing": [{"bucket": m.key.label(), "kernel": m.key.kernel, "sage_ms": m.sage_ms,
                                 "sdpa_ms": m.sdpa_ms, "use_sage": m.use_sage, "text": m.describe(),
                                 "calls_last": _bucket_calls(state.last.get(d), m.key),
                                 "calls_session": _bucket_calls(state.totals.get(d), m.key)}
                                for m in of(d, state.decisions.values())]} for d in devices}}


def _bucket_calls(counts: Optional[collections.Counter], bucket) -> int:
    return sum(n for key, n in (counts or {}).items() if isinstance(key, tuple) and key[0] == bucket)


def counters(counts: Optional[collections.Counter]) -> dict[str, Any]:
    """A device's counters in the payload's shape."""
    counts = counts or collections.Counter()
    sdpa = dict(sorted((r.value, n) for r, n in counts.items() if isinstance(r, Reason) and n))
    return {"sage": counts[SAGE], "sdpa": sdpa, "sdpa_total": sum(sdpa.values()),
            "faults": dict(sorted((f.value, n) for f, n in counts.items() if isinstance(f, Fault) and n)),
            "masks_dropped": counts[MASK_DROPPED], "no_block_positions": counts[NO_BLOCK_POSITIONS]}


def render(snap: dict) -> str:
    """Human-readable status from ``payload()``."""
    lines = ["Installed: " + ", ".join(f"{name} {version or '(not installed)'}"
                                       for name, version in snap["libraries"].items())]
    for model in snap.get("models", []):
        lines.append(f"model {model['model']}: " + ("scoped" if model["scoped"] else "passed through unchanged"))
    if not snap["devices"]:
        lines.append("No scoped model has sampled yet in this session.")
    for device, info in snap["devices"].items():
        for choice, line in info["kernels"].items():
            kernel = f"{line['kernel']}, {line['version']}" if line["kernel"] else "SDPA only"
            lines.append(f"{device}: {kernel} ({line['why']})" + (f" [kernel={choice}]" if choice != "auto" else ""))
        if info["retired"]:
            lines.append(f"{device}: retired for this session: {info['retired']}")
        for check in info["checks"]:
            verdict = "passed" if check["passed"] else "FAILED -> SDPA"
            lines.append(f"  check {check['key']}: {verdict} (cosine {check['cosine']:.5f}, "
                         f"rel L2 {check['rel_l2']:.4f})")
        for measured in info.get("routing", []):
            lines.append(f"  routing {measured['text']}: {measured['calls_last']} calls in the last generation, "
                         f"{measured['calls_session']} this session")
        for title, counts in (("last generation", info["last_generation"]), ("session", info["session"])):
            lines.append(f"  {title}: {counts['sage']} SageAttention, {counts['sdpa_total']} SDPA")
            for reason, n in counts["sdpa"].items():
                lines.append(f"    SDPA {n}: {Reason(reason).label}")
            if counts["masks_dropped"]:
                lines.append(f"    no-op masks dropped: {counts['masks_dropped']}")
            if counts["no_block_positions"]:
                lines.append(f"    block window not applied to {counts['no_block_positions']} calls: this model "
                             f"does not say which block calls (every block stays in)")
            for fault, n in counts["faults"].items():
                lines.append(f"    faults ({fault}): {n}")
    if snap["generations"]:
        sampling, timing = snap["last_ms"]["sampling"], snap["last_ms"]["timing"]
        lines.append(f"Last generation: {sampling / 1e3:.2f} s sampling" + (
            f", of which {timing:.0f} ms timing kernels ({100 * timing / max(sampling, 1e-9):.2f}%)" if timing else ""))
    lines.append(f"Generations this session: {snap['generations']}")
    return "\n".join(lines)


class SageAttentionStatus(io.ComfyNode):
    @classmethod
    def define_schema(cls) -> io.Schema:
        return io.Schema(
            node_id="SageAttentionStatus",
            display_name="Sage Attention Status",
            category="model_patches/attention",
            description="Shows the SageAttention kernel per device, the first-call checks and the call counters.",
            inputs=[
                io.AnyType.Input("after", optional=True,
                                 tooltip="Connect the sampler's output so the status is read after sampling."),
                io.Boolean.Input("reset_counters", default=False,
                                 tooltip="Zero the session counters after showing them."),
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
        snap = payload(session())
        text = render(snap)
        if reset_counters:
            session().reset_counters()
        return io.NodeOutput(text, ui={"text": [text], UI_KEY: [snap]})
