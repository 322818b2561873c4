// Renders the Sage Attention Status node's payload in the node body after it runs.
import { app } from "../../scripts/app.js";

const NODE_ID = "SageAttentionStatus";
const PAYLOAD_KEY = "sage_attention_status";

function countsRow(title, counts) {
  const reasons = Object.entries(counts.sdpa || {})
    .map(([reason, n]) => `${reason} ${n}`)
    .join(", ");
  const faults = Object.entries(counts.faults || {})
    .map(([kind, n]) => `${kind} ${n}`)
    .join(", ");
  return `${title}: ${counts.sage} Sage · ${counts.sdpa_total} SDPA` +
    (reasons ? ` (${reasons})` : "") + (faults ? ` · faults: ${faults}` : "");
}

export function renderStatus(snapshot) {
  const lines = [];
  const sa = snapshot.sageattention || {};
  lines.push(sa.error ? sa.error : `SageAttention ${sa.version}`);
  const devices = Object.entries(snapshot.devices || {});
  if (!devices.length) lines.push("No scoped model has sampled yet.");
  for (const [device, info] of devices) {
    for (const line of Object.values(info.kernels || {})) {
      lines.push(`${device}: ${line.kernel || "SDPA only"} — ${line.why}`);
    }
    if (info.retired) lines.push(`${device}: retired (${info.retired})`);
    for (const check of info.checks || []) {
      lines.push(`  check ${check.key}: ${check.passed ? "passed" : "FAILED"} ` +
        `(cos ${Number(check.cosine).toFixed(4)}, rel L2 ${Number(check.rel_l2).toFixed(3)})`);
    }
    lines.push("  " + countsRow("last", info.last_generation));
    lines.push("  " + countsRow("session", info.session));
  }
  return lines.join("\n");
}

app.registerExtension({
  name: "SageAttentionScope.Status",
  async beforeRegisterNodeDef(nodeType, nodeData) {
    if (nodeData.name !== NODE_ID) return;
    const onExecuted = nodeType.prototype.onExecuted;
    nodeType.prototype.onExecuted = function (message) {
      onExecuted?.apply(this, arguments);
      const snapshot = message?.[PAYLOAD_KEY]?.[0];
      if (!snapshot) return;
      let widget = this.widgets?.find((w) => w.name === "sage_status_text");
      if (!widget) {
        widget = this.addWidget("text", "sage_status_text", "", () => {}, { multiline: true });
        widget.serialize = false;
        if (widget.inputEl) widget.inputEl.readOnly = true;
      }
      widget.value = renderStatus(snapshot);
      if (widget.inputEl) widget.inputEl.value = widget.value;
      this.setDirtySize?.(true);
      app.graph?.setDirtyCanvas(true, true);
    };
  },
});
