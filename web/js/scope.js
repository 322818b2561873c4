// The Sage Attention Scope node on the canvas: its expert inputs folded away until asked for, as the
// front end's Vue nodes fold advanced inputs, and unfolded where the server refused one of them.
import { app } from "../../scripts/app.js";

const NODE_ID = "SageAttentionScope";

// The last queued prompt's errors per node id: front end 1.49 hands them to extensions through the
// extension manager; 1.32 has only the app's getter (deprecated in 1.49).
function lastNodeErrors() {
  const manager = app.extensionManager;
  if (manager && "lastNodeErrors" in manager) return manager.lastNodeErrors;
  return app.lastNodeErrors;
}

function fitContent(node) {
  const [width, height] = node.computeSize();
  node.setSize([Math.max(node.size[0], width), height]);
  app.graph?.setDirtyCanvas(true, true);
}

// A front end that marks the inputs the server calls advanced (in each widget's options) folds them in
// its Vue nodes and side panel, but its canvas lays a widget out unless the widget is hidden. On the
// canvas the Scope's expert inputs are hidden while the node's "Show Advanced" (its menu) is off, unless
// the user asked for every advanced widget always ("Comfy.Node.AlwaysShowAdvancedWidgets"). A front end
// that marks none (w.options.advanced unset) changes nothing.
function expertWidgets(node) {
  if (app.extensionManager?.setting?.get("Comfy.Node.AlwaysShowAdvancedWidgets")) return [];
  return (node.widgets ?? []).filter((w) => w.options?.advanced);
}

function foldExpertInputs(node) {
  const expert = expertWidgets(node);
  if (!expert.length) return;
  for (const widget of expert) {
    widget.advanced = true; // what the canvas's "Show Advanced" looks for
    widget.hidden = !node.showAdvanced;
  }
  fitContent(node);
}

// Called whenever the canvas draws the node (the front ends redraw it when a prompt is refused): an
// expert input the last refusal names is unfolded once, so that the error ComfyUI marks on it can be
// seen and mended.
function unfoldRefusedExpertInputs(node) {
  const errors = lastNodeErrors()?.[node.id]?.errors;
  if (!errors || errors === node.sageUnfoldedFor) return;
  node.sageUnfoldedFor = errors;
  const refused = new Set(errors.map((error) => error.extra_info?.input_name));
  if (!node.showAdvanced && expertWidgets(node).some((w) => refused.has(w.name))) node.toggleAdvanced();
}

app.registerExtension({
  name: "SageAttentionScope.Scope",
  async beforeRegisterNodeDef(nodeType, nodeData) {
    if (nodeData.name !== NODE_ID) return;
    const onNodeCreated = nodeType.prototype.onNodeCreated;
    nodeType.prototype.onNodeCreated = function () {
      onNodeCreated?.apply(this, arguments);
      foldExpertInputs(this);
    };
    const onConfigure = nodeType.prototype.onConfigure;
    nodeType.prototype.onConfigure = function () {
      onConfigure?.apply(this, arguments);
      foldExpertInputs(this); // a loaded workflow says whether the node showed them
    };
    const toggleAdvanced = nodeType.prototype.toggleAdvanced;
    if (toggleAdvanced) {
      nodeType.prototype.toggleAdvanced = function () {
        toggleAdvanced.apply(this, arguments);
        foldExpertInputs(this);
      };
    }
    const onDrawForeground = nodeType.prototype.onDrawForeground;
    nodeType.prototype.onDrawForeground = function () {
      onDrawForeground?.apply(this, arguments);
      unfoldRefusedExpertInputs(this);
    };
  },
});
