// The Sage Attention Scope node in the front end: what the server refused in its inputs when the
// prompt was queued, shown on the node (the pack's sentence for each bad value, which nodes/scope.py
// words, or ComfyUI's own message for a number outside its range: front end 1.49's toast and errors
// panel quote only the value and its type for a value ComfyUI could not convert, never why); and its
// expert inputs folded away on the canvas, as 1.49 folds them in its Vue nodes.
import { app } from "../../scripts/app.js";

const NODE_ID = "SageAttentionScope";
const WIDGET_NAME = "sage_scope_errors";

// The last queued prompt's errors per node id: front end 1.49 hands them to extensions through the
// extension manager; 1.32 has only the app's getter (deprecated in 1.49).
function lastNodeErrors() {
  const manager = app.extensionManager;
  if (manager && "lastNodeErrors" in manager) return manager.lastNodeErrors;
  return app.lastNodeErrors;
}

function nodeErrors(node) {
  return lastNodeErrors()?.[node.id]?.errors ?? [];
}

// One line per error: the refusal's sentence where the server gave one (a value it could not
// convert: the pack's refusal), else ComfyUI's message and what it names.
function errorLine(error) {
  const sentence = error.extra_info?.exception_message;
  if (sentence) return sentence;
  return `${error.message}: ${error.details}`;
}

function fitContent(node) {
  const [width, height] = node.computeSize();
  node.setSize([Math.max(node.size[0], width), height]);
  app.graph?.setDirtyCanvas(true, true);
}

function errorsWidget(node) {
  const found = node.widgets?.find((w) => w.name === WIDGET_NAME);
  if (found) return found;
  const holder = document.createElement("div");
  holder.style.cssText = "font:12px sans-serif;color:#ff8080;white-space:pre-wrap;padding:2px 4px;line-height:1.35";
  holder.dataset.sageScopeErrors = ""; // data-sage-scope-errors: what a browser test looks for
  const widget = node.addDOMWidget(WIDGET_NAME, "sage_scope_errors", holder, {
    serialize: false, hideOnZoom: false, getMinHeight: () => holder.scrollHeight,
  });
  widget.holder = holder;
  return widget;
}

// Front end 1.49 marks the inputs the server calls advanced (0.33's advanced=True) in each widget's
// options; its Vue nodes and side panel fold them, its canvas does not (it lays a widget out unless the
// widget is hidden). On the canvas the Scope's expert inputs are hidden while the node's "Show
// Advanced" (its menu) is off, unless the user asked for every advanced widget always
// ("Comfy.Node.AlwaysShowAdvancedWidgets"). Front end 1.32 (ComfyUI 0.3.75) marks none: nothing
// changes there.
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

// Called whenever the canvas draws the node: the errors change when a prompt is queued, and the
// front ends redraw the canvas then. A refused expert input is unfolded, so that it can be mended.
function showErrors(node) {
  const errors = nodeErrors(node);
  const shown = errors.map(errorLine).join("\n");
  if (shown === (node.sageShownErrors ?? "")) return;
  node.sageShownErrors = shown;
  const widget = errorsWidget(node);
  widget.holder.replaceChildren(...errors.map((error) => {
    const row = document.createElement("div");
    row.textContent = errorLine(error);
    return row;
  }));
  const refused = new Set(errors.map((error) => error.extra_info?.input_name));
  if (!node.showAdvanced && expertWidgets(node).some((w) => refused.has(w.name))) node.toggleAdvanced();
  requestAnimationFrame(() => fitContent(node)); // once the lines are laid out: their height is known
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
      showErrors(this);
    };
  },
});
