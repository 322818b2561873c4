// Shows the Sage Attention Status node's text in the node body after it runs. The text is rendered
// once, in Python (nodes/status.py render), and sent as the node's "text" output; this only shows it.
import { app } from "../../scripts/app.js";

const NODE_ID = "SageAttentionStatus";
const WIDGET_NAME = "sage_status";

export function statusElement(text) {
  const root = document.createElement("div");
  root.style.cssText = "font:12px monospace;white-space:pre-wrap;overflow:auto;padding:4px;line-height:1.35";
  root.dataset.sageStatus = ""; // data-sage-status: what a browser test looks for
  root.textContent = text;
  return root;
}

function fitContent(node) {
  const [width, height] = node.computeSize();
  node.setSize([Math.max(node.size[0], width, 440), Math.max(height, 80)]);
  app.graph?.setDirtyCanvas(true, true);
}

app.registerExtension({
  name: "SageAttentionScope.Status",
  async beforeRegisterNodeDef(nodeType, nodeData) {
    if (nodeData.name !== NODE_ID) return;
    const onExecuted = nodeType.prototype.onExecuted;
    nodeType.prototype.onExecuted = function (message) {
      onExecuted?.apply(this, arguments);
      const text = message?.text?.[0];
      if (text === undefined) return;
      let widget = this.widgets?.find((w) => w.name === WIDGET_NAME);
      if (!widget) {
        const holder = document.createElement("div");
        // The node grows to the shown status (the front end asks the widget for its height).
        widget = this.addDOMWidget(WIDGET_NAME, "sage_status", holder, {
          serialize: false, hideOnZoom: false, getMinHeight: () => holder.scrollHeight + 8,
        });
        widget.holder = holder;
        // The text's height is known once the front end lays it out, which may be after this call (a
        // graph not drawn yet): the node grows whenever it changes.
        widget.textSize = new ResizeObserver(() => fitContent(this));
      }
      const shown = statusElement(text);
      widget.holder.replaceChildren(shown);
      widget.textSize.disconnect();
      widget.textSize.observe(shown);
      fitContent(this);
    };
  },
});
