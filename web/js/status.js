// Renders the Sage Attention Status node's payload in the node body after it runs: one line
// per model and kernel, a small table of call counts, then checks and routing decisions.
import { app } from "../../scripts/app.js";

const NODE_ID = "SageAttentionStatus";
const PAYLOAD_KEY = "sage_attention_status";
const WIDGET_NAME = "sage_status";

function el(tag, text, style) {
  const node = document.createElement(tag);
  if (text !== undefined) node.textContent = text;
  if (style) node.style.cssText = style;
  return node;
}

function reasonsText(counts) {
  return Object.entries(counts.sdpa || {}).map(([reason, n]) => `${reason} ${n}`).join(", ");
}

function faultsText(counts) {
  return Object.entries(counts.faults || {}).map(([kind, n]) => `${kind} ${n}`).join(", ");
}

function countsTable(info) {
  const table = el("table", undefined, "border-collapse:collapse;margin:2px 0 4px 0;width:100%");
  const head = el("tr");
  for (const title of ["", "Sage", "SDPA", "why SDPA", "faults"]) {
    head.append(el("th", title, "text-align:left;padding:0 6px 0 0;opacity:.7;font-weight:normal"));
  }
  table.append(head);
  for (const [title, counts] of [["last", info.last_generation], ["session", info.session]]) {
    const row = el("tr");
    const cells = [title, counts.sage, counts.sdpa_total, reasonsText(counts) || "-",
                   faultsText(counts) || "-"];
    for (const value of cells) row.append(el("td", String(value), "padding:0 6px 0 0"));
    table.append(row);
  }
  return table;
}

// Plain text of the same payload (also the node's tooltip and what a copy gives).
export function renderStatus(snapshot) {
  const lines = [];
  const sa = snapshot.sageattention || {};
  lines.push(sa.error ? sa.error : `SageAttention ${sa.version}`);
  for (const model of snapshot.models || []) {
    lines.push(`model ${model.model}: ${model.scoped ? "scoped" : "passed through unchanged"}`);
  }
  const devices = Object.entries(snapshot.devices || {});
  if (!devices.length) lines.push("No scoped model has sampled yet.");
  for (const [device, info] of devices) {
    for (const line of Object.values(info.kernels || {})) {
      lines.push(`${device}: ${line.kernel || "SDPA only"} (${line.why})`);
    }
    for (const [title, counts] of [["last generation", info.last_generation], ["session", info.session]]) {
      lines.push(`  ${title}: ${counts.sage} SageAttention, ${counts.sdpa_total} SDPA` +
        (reasonsText(counts) ? ` (${reasonsText(counts)})` : ""));
    }
  }
  return lines.join("\n");
}

export function statusElement(snapshot) {
  const root = el("div", undefined,
    "font:12px monospace;white-space:pre-wrap;overflow:auto;padding:4px;line-height:1.35");
  root.dataset.sageStatus = "";
  const sa = snapshot.sageattention || {};
  root.append(el("div", sa.error ? sa.error : `SageAttention ${sa.version}`, "font-weight:bold"));
  for (const model of snapshot.models || []) {
    root.append(el("div", `model ${model.model}: ${model.scoped ? "scoped" : "passed through unchanged"}`,
      model.scoped ? "" : "color:#d9a441"));
  }
  const devices = Object.entries(snapshot.devices || {});
  if (!devices.length) root.append(el("div", "No scoped model has sampled yet."));
  for (const [device, info] of devices) {
    for (const line of Object.values(info.kernels || {})) {
      root.append(el("div", `${device}: ${line.kernel || "SDPA only"} (${line.why})`,
        line.kernel ? "color:#7fc97f" : "color:#d9a441"));
    }
    if (info.retired) root.append(el("div", `${device}: retired (${info.retired})`, "color:#e06c75"));
    root.append(countsTable(info));
    for (const check of info.checks || []) {
      root.append(el("div", `check ${check.key}: ${check.passed ? "passed" : "FAILED -> SDPA"} ` +
        `(cos ${Number(check.cosine).toFixed(4)}, rel L2 ${Number(check.rel_l2).toFixed(3)})`,
        check.passed ? "opacity:.8" : "color:#e06c75"));
    }
    for (const measured of info.routing || []) root.append(el("div", `routing ${measured.text}`, "opacity:.8"));
  }
  root.title = renderStatus(snapshot);
  return root;
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
      let widget = this.widgets?.find((w) => w.name === WIDGET_NAME);
      if (!widget) {
        const holder = el("div");
        // The node grows to the rendered status (the front end asks the widget for its height).
        widget = this.addDOMWidget(WIDGET_NAME, "sage_status", holder, {
          serialize: false, hideOnZoom: false, getMinHeight: () => holder.scrollHeight + 8,
        });
        widget.holder = holder;
      }
      widget.holder.replaceChildren(statusElement(snapshot));
      const [width, height] = this.computeSize?.() || this.size;
      this.setSize?.([Math.max(this.size[0], width, 440), Math.max(height, 80)]);
      app.graph?.setDirtyCanvas(true, true);
    };
  },
});
