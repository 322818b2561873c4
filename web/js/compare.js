// Shows the Sage Attention Compare node's text in the node body after it runs: which side is which,
// the metrics and this run's sampling times. The image itself is ComfyUI's own preview ("images").
import { app } from "../../scripts/app.js";

const NODE_ID = "SageAttentionCompare";
const PAYLOAD_KEY = "sage_attention_compare"; // nodes/compare.py UI_KEY
const WIDGET_NAME = "sage_compare";

export function compareElement(shown) {
  const root = document.createElement("div");
  root.style.cssText = "font:12px monospace;white-space:pre-wrap;overflow:auto;padding:4px;line-height:1.35";
  root.dataset.sageCompare = ""; // data-sage-compare: what a browser test looks for
  for (const line of shown.lines || []) {
    const row = document.createElement("div");
    row.textContent = line;
    root.append(row);
  }
  return root;
}

app.registerExtension({
  name: "SageAttentionScope.Compare",
  async beforeRegisterNodeDef(nodeType, nodeData) {
    if (nodeData.name !== NODE_ID) return;
    const onExecuted = nodeType.prototype.onExecuted;
    nodeType.prototype.onExecuted = function (message) {
      onExecuted?.apply(this, arguments);
      const shown = message?.[PAYLOAD_KEY]?.[0];
      if (!shown) return;
      let widget = this.widgets?.find((w) => w.name === WIDGET_NAME);
      if (!widget) {
        const holder = document.createElement("div");
        // The text keeps its height; the image preview below it takes the rest of the node.
        widget = this.addDOMWidget(WIDGET_NAME, "sage_compare", holder, {
          serialize: false, hideOnZoom: false, getMinHeight: () => holder.scrollHeight + 8,
        });
        widget.holder = holder;
      }
      widget.holder.replaceChildren(compareElement(shown));
      const [width, height] = this.computeSize?.() || this.size;
      this.setSize?.([Math.max(this.size[0], width, 480), Math.max(this.size[1], height)]);
      app.graph?.setDirtyCanvas(true, true);
    };
  },
});
