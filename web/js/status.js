// Renders the Sage Attention Status node's payload in the node body after it runs: this run's
// models with their counters and time, then the session: kernels, checks, routing, counters.
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

const joined = (entries) => Object.entries(entries || {}).map(([key, n]) => `${key} ${n}`).join(", ");

function countsTable(rows) {
  const table = el("table", undefined, "border-collapse:collapse;margin:2px 0 4px 0;width:100%");
  const head = el("tr");
  for (const title of ["", "kernel", "SDPA", "why SDPA", "faults"]) {
    head.append(el("th", title, "text-align:left;padding:0 6px 0 0;opacity:.7;font-weight:normal"));
  }
  table.append(head);
  for (const [title, counts] of rows) {
    const row = el("tr");
    for (const value of [title, counts.sage, counts.sdpa_total, joined(counts.sdpa) || "-", joined(counts.faults) || "-"]) {
      row.append(el("td", String(value), "padding:0 6px 0 0"));
    }
    table.append(row);
  }
  return table;
}

const libraries = (s) => "Installed: " + Object.entries(s.libraries || {})
  .map(([name, version]) => `${name} ${version || "(not installed)"}`).join(", ");

function seconds(model) {
  if (!model.sampling_ms) return "";
  const timing = model.timing_ms ? `, ${model.timing_ms.toFixed(0)} ms timing kernels` : "";
  return ` (${(model.sampling_ms / 1000).toFixed(2)} s sampling${timing})`;
}

// Plain text of the same payload (the node's tooltip).
export function renderStatus(s) {
  const lines = [libraries(s), ...(s.advice || []).map((a) => `Install: ${a}`), "This run:"];
  if (!(s.run || []).length) lines.push("  no scoped model in this run");
  for (const model of s.run || []) {
    lines.push(`  model ${model.model}: ${model.note}${seconds(model)}`);
    for (const [device, c] of Object.entries(model.devices || {})) {
      lines.push(`    ${device}: ${c.sage} on the kernel, ${c.sdpa_total} on SDPA` + (joined(c.sdpa) ? ` (${joined(c.sdpa)})` : ""));
    }
  }
  lines.push(`Session (${s.generations} generations):`);
  for (const model of s.models || []) lines.push(`  model ${model.model}: ${model.note}`);
  for (const [device, info] of Object.entries(s.devices || {})) {
    for (const line of Object.values(info.kernels || {})) lines.push(`  ${device}: ${line.kernel || "SDPA only"} (${line.why})`);
    lines.push(`  ${device}: ${info.session.sage} on the kernel, ${info.session.sdpa_total} on SDPA`);
  }
  return lines.join("\n");
}

export function statusElement(s) {
  const root = el("div", undefined, "font:12px monospace;white-space:pre-wrap;overflow:auto;padding:4px;line-height:1.35");
  root.dataset.sageStatus = "";
  root.append(el("div", libraries(s), "opacity:.8"));
  for (const advice of s.advice || []) root.append(el("div", `Install: ${advice}`, "color:#d9a441"));
  root.append(el("div", "This run", "font-weight:bold;margin-top:4px"));
  if (!(s.run || []).length) root.append(el("div", "no scoped model in this run", "opacity:.8"));
  for (const model of s.run || []) {
    const scoped = model.note.startsWith("scoped");
    root.append(el("div", `model ${model.model}: ${model.note}${seconds(model)}`, scoped ? "" : "color:#d9a441"));
    root.append(countsTable(Object.entries(model.devices || {})));
  }
  root.append(el("div", `Session (${s.generations} generations)`, "font-weight:bold;margin-top:4px"));
  for (const [device, info] of Object.entries(s.devices || {})) {
    for (const line of Object.values(info.kernels || {})) {
      root.append(el("div", `${device}: ${line.kernel ? `${line.kernel}, ${line.version}` : "SDPA only"} (${line.why})`,
        line.kernel ? "color:#7fc97f" : "color:#d9a441"));
    }
    if (info.retired) root.append(el("div", `${device}: retired (${info.retired})`, "color:#e06c75"));
    root.append(countsTable([[`${device} session`, info.session]]));
    for (const check of info.checks || []) {
      root.append(el("div", `check ${check.key}: ${check.passed ? "passed" : "FAILED -> SDPA"} ` +
        `(cos ${Number(check.cosine).toFixed(4)}, rel L2 ${Number(check.rel_l2).toFixed(3)})`,
        check.passed ? "opacity:.8" : "color:#e06c75"));
    }
    for (const measured of info.routing || []) {
      root.append(el("div", `routing ${measured.text}: ${measured.calls_last} calls last generation`, "opacity:.8"));
    }
  }
  root.title = renderStatus(s);
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
