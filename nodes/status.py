"""The Sage Attention Status node: what the scope did, as text and as a UI payload."""
from __future__ import annotations

from comfy_api.latest import io

from ..patches import Reason
from . import session

UI_KEY = "sage_attention_status"


def render(snap: dict) -> str:
    """Human-readable status from ``Session.snapshot()``."""
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
            lines.append(f"  routing {measured['text']}")
        for title, counts in (("last generation", info["last_generation"]), ("session", info["session"])):
            lines.append(f"  {title}: {counts['sage']} SageAttention, {counts['sdpa_total']} SDPA")
            for reason, n in counts["sdpa"].items():
                lines.append(f"    SDPA {n}: {Reason(reason).label}")
            if counts["masks_dropped"]:
                lines.append(f"    no-op masks dropped: {counts['masks_dropped']}")
            for fault, n in counts["faults"].items():
                lines.append(f"    faults ({fault}): {n}")
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
        snap = session().snapshot()
        text = render(snap)
        if reset_counters:
            session().reset_counters()
        return io.NodeOutput(text, ui={"text": [text], UI_KEY: [snap]})
