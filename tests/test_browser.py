"""ComfyUI's own front end in headless Chromium: the template browser shows the example workflows
by title with their thumbnails and loads them, every example loads on the canvas, the Compare
template runs (on the tiny model) and shows its numbers and picture, and the Status node shows its
text. Screenshots go to $SAS_ARTIFACTS (default .artifacts/browser/, git-ignored)."""
from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from sas_harness import ROOT
from sas_harness.models import TINY_LTXV
from sas_harness.server import (TINY_MODEL, api_prompt, chained_scopes_prompt, example_model_files, lacking,
                                load_widgets, placeholder_failure, tiny_prompt)

CHROMIUM = os.environ.get("SAS_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
ARTIFACTS = Path(os.environ.get("SAS_ARTIFACTS") or ROOT / ".artifacts" / "browser")
# Flags for a machine with no network beyond localhost (and running as root).
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
READY_MS = 90_000
RUN_MS = 180_000  # a queued prompt on two slow CPU cores
EXAMPLES = sorted((ROOT / "example_workflows").glob("*.json"))
EXTRA_KEY = "sage_attention_scope"  # scripts/make_example_workflows.py EXTRA_KEY
EXAMPLES_FLOOR = "0.3.75"  # scripts/make_example_workflows.py FLOOR: the templates that need no newer ComfyUI
NO_DIALOGS = {"showMissingNodesDialog": False, "showMissingModelsDialog": False}


sync_api = pytest.importorskip("playwright.sync_api", reason="Playwright (pip install playwright) is not installed")


def open_ui(page, url: str) -> None:
    """Opens the page and waits for the front end's start-up to end: ``window.app`` is set before the
    start-up loads its first workflow (the one saved, else the default), and a workflow a test loads
    before then is replaced by it (front end 1.49.6 loads its default graph late)."""
    page.goto(url)
    page.wait_for_function("() => window.app?.graph && window.LiteGraph?.registered_node_types"
                           "?.['SageAttentionStatus'] && window.app.extensionManager?.workflow?.activeWorkflow"
                           " && !window.app.extensionManager.spinner", timeout=READY_MS)


def _workflow(path: Path) -> dict:
    return json.loads(path.read_text())


def _meta(path: Path) -> dict:
    return _workflow(path)["extra"][EXTRA_KEY]


def _version(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in text.split(".")[:3])


def _too_new(path: Path, server) -> bool:
    """Whether the template needs a newer ComfyUI than the server's."""
    running = server.get("/system_stats")["system"]["comfyui_version"]
    return _version(_meta(path)["min_comfyui_version"]) > _version(running)


def _template(prefix: str) -> Path:
    [path] = [p for p in EXAMPLES if p.stem.startswith(prefix)]
    return path


def load(page, workflow: dict, dialogs: bool = False) -> None:
    page.evaluate("([wf, options]) => window.app.loadGraphData(wf, true, true, null, options)",
                  [workflow, {} if dialogs else NO_DIALOGS])


def center_on(page, node_type: str, scale: float = 1.0) -> None:
    page.evaluate("""([type, scale]) => {
        const node = window.app.graph._nodes.find(n => n.type === type);
        window.app.canvas.ds.scale = scale;
        window.app.canvas.centerOnNode(node);
        window.app.graph.setDirtyCanvas(true, true);
    }""", [node_type, scale])
    page.wait_for_timeout(500)


@pytest.fixture(scope="module")
def page(server):
    if not Path(CHROMIUM).exists():
        pytest.skip(f"no Chromium at {CHROMIUM} (Debian: apt-get install chromium)")
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        # A first visit opens the template browser over the canvas; mark the tour as done.
        server.post("/settings/Comfy.TutorialCompleted", True)
        page = browser.new_page(viewport={"width": 1600, "height": 1000})
        open_ui(page, server.url)
        yield page
        browser.close()


def test_the_template_browser_shows_each_templates_title_and_thumbnail_and_loads_it(session, page, server):
    """Front end 1.32.9 shows a custom node's template by its file stem and asks for the same-name
    .jpg; the titles are the stems (scripts/make_example_workflows.py)."""
    listed = server.get("/workflow_templates")
    [(folder, stems)] = [(k, v) for k, v in listed.items() if set(v) & {p.stem for p in EXAMPLES}]
    assert sorted(stems) == sorted(p.stem for p in EXAMPLES)
    page.evaluate("() => window.app.extensionManager.command.execute('Comfy.BrowseTemplates')")
    dialog = page.get_by_role("dialog").filter(has_text="All Templates")
    dialog.get_by_text(folder, exact=True).first.click()  # the pack's category: its folder's name
    for path in EXAMPLES:
        title = _meta(path)["title"]
        heading = dialog.get_by_role("heading", name=title, exact=True)
        heading.scroll_into_view_if_needed(timeout=READY_MS)
        # Cards load their pictures when on screen: the card's middle, not its heading at an edge.
        heading.evaluate("h => h.scrollIntoView({block: 'center'})")
        sync_api.expect(heading).to_be_visible(timeout=READY_MS)
        # The thumbnail the card shows: loaded, and at least as large as the file's short side.
        page.wait_for_function("alt => [...document.querySelectorAll('[role=dialog] img')].some("
                               "i => i.alt === alt && i.complete && i.naturalWidth >= 256)", arg=title,
                               timeout=READY_MS)
    dialog.get_by_role("heading", name=_meta(EXAMPLES[0])["title"], exact=True).scroll_into_view_if_needed()
    page.screenshot(path=str(ARTIFACTS / "templates.png"))
    compare = _template("Compare")
    dialog.get_by_role("heading", name=_meta(compare)["title"], exact=True).click()
    page.wait_for_function("() => window.app.graph._nodes.some(n => n.type === 'SageAttentionCompare')",
                           timeout=READY_MS)
    loaded = page.evaluate("() => window.app.graph._nodes.map(n => n.type)")
    assert sorted(loaded) == sorted(n["type"] for n in _workflow(compare)["nodes"])
    open_ui(page, server.url)  # a fresh page, without the dialog


@pytest.fixture(scope="module")
def object_info(server):
    return server.get("/object_info")


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_every_example_workflow_loads_on_the_canvas_without_overlapping_nodes(session, page, server, object_info,
                                                                               path):
    workflow = _workflow(path)
    load(page, workflow)
    loaded = page.evaluate("() => window.app.graph._nodes.map(n => n.type)")
    assert sorted(loaded) == sorted(n["type"] for n in workflow["nodes"])
    unknown = page.evaluate("types => types.filter(t => !window.LiteGraph.registered_node_types[t])", loaded)
    info = object_info
    if _too_new(path, server):  # what it needs is missing here: node types, or values their nodes lack
        assert all(t not in info for t in unknown) and lacking(workflow, info)
    else:
        assert unknown == []
    assert page.evaluate(f"() => window.app.graph.extra[{json.dumps(EXTRA_KEY)}].title") == path.stem
    # The front end grows each node to what its widgets need: none then covers another (title bars
    # included); a node this ComfyUI lacks has no size of its own to check.
    overlaps = page.evaluate("""() => {
        const H = window.LiteGraph.NODE_TITLE_HEIGHT, known = window.LiteGraph.registered_node_types;
        const nodes = window.app.graph._nodes.filter(n => known[n.type]), hits = [];
        for (const a of nodes) for (const b of nodes) {
            if (a.id >= b.id) continue;
            const [ax, ay, aw, ah] = [a.pos[0], a.pos[1] - H, a.size[0], a.size[1] + H];
            const [bx, by, bw, bh] = [b.pos[0], b.pos[1] - H, b.size[0], b.size[1] + H];
            if (ax < bx + bw && bx < ax + aw && ay < by + bh && by < ay + ah) hits.push([a.type, b.type]);
        }
        return hits;
    }""")
    assert overlaps == []
    if path.stem.startswith("FLUX.1"):
        page.screenshot(path=str(ARTIFACTS / "example_workflow_flux1.png"))


def test_a_template_for_a_newer_comfyui_says_so_when_loaded(session, page, server):
    """On an older ComfyUI the front end lists the nodes it lacks, and the template's note on the
    canvas says which ComfyUI it needs."""
    path = _template("LTX-2 text")
    if not _too_new(path, server):
        pytest.skip(f"this ComfyUI runs {path.stem}")
    needs = _meta(path)["min_comfyui_version"]
    load(page, _workflow(path), dialogs=True)
    dialog = page.get_by_role("dialog").filter(has_text="missing nodes")
    sync_api.expect(dialog).to_be_visible(timeout=READY_MS)
    for node_type in ("LTXAVTextEncoderLoader", "LTXVConcatAVLatent"):
        sync_api.expect(dialog).to_contain_text(node_type)
    page.screenshot(path=str(ARTIFACTS / "newer_comfyui_missing_nodes.png"))
    page.keyboard.press("Escape")
    sync_api.expect(dialog).to_be_hidden(timeout=READY_MS)
    center_on(page, "MarkdownNote")
    sync_api.expect(page.get_by_text(f"Needs ComfyUI {needs} or newer")).to_be_visible(timeout=READY_MS)
    page.screenshot(path=str(ARTIFACTS / "newer_comfyui_note.png"))


# What the front end makes of a loaded template: each node's widgets after loading (as it would save
# them again) and the prompt it would queue.
FRONT_END_PROMPT_JS = """async () => {
  const nodes = {};
  for (const node of window.app.graph._nodes) nodes[node.id] = node.serialize().widgets_values ?? [];
  const {output} = await window.app.graphToPrompt();
  const prompt = {};
  for (const [id, entry] of Object.entries(output)) prompt[id] = {class_type: entry.class_type, inputs: entry.inputs};
  return {nodes, prompt};
}"""


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_the_front_end_loads_and_queues_each_template_as_the_server_tests_model_it(session, page, server,
                                                                                  object_info, path):
    """sas_harness.server's model of how the front end matches saved values to widgets (which
    tests/test_server.py queues) is this front end's: the widgets after loading and the prompt
    graphToPrompt makes are the model's, value for value."""
    if _too_new(path, server):
        pytest.skip(f"this ComfyUI lacks what {path.stem} needs")
    workflow = _workflow(path)
    load(page, workflow)
    shown = page.evaluate(FRONT_END_PROMPT_JS)
    expected, problems = api_prompt(workflow, object_info)
    assert not problems
    for node in workflow["nodes"]:
        if node["type"] in object_info:
            widgets, _ = load_widgets(node, object_info[node["type"]])
            assert shown["nodes"][str(node["id"])] == [w.value for w in widgets], node["type"]
    assert shown["prompt"] == expected


def test_a_new_template_queues_from_the_front_end(session, page, server):
    """A template of a model newer than the pack's floor, loaded in this ComfyUI's own front end and
    queued as its Run button queues (app.queuePrompt): the server accepts the prompt (every input
    valid) and runs it until a loader reads a model file (an empty placeholder here)."""
    newest = [p for p in EXAMPLES if _meta(p)["min_comfyui_version"] != EXAMPLES_FLOOR and not _too_new(p, server)]
    if not newest:
        pytest.skip("this ComfyUI runs none of the templates that need a newer ComfyUI than the pack's floor")
    names = {name for names in example_model_files().values() for name in names}
    for path in newest:
        load(page, _workflow(path))
        with page.expect_response(lambda r: r.url.endswith("/prompt") and r.request.method == "POST",
                                  timeout=READY_MS) as response:
            page.evaluate("() => window.app.queuePrompt(0, 1)")
        assert response.value.status == 200, f"{path.stem}: {response.value.text()}"
        body = response.value.json()
        assert not body.get("node_errors"), f"{path.stem}: {body}"
        entry = server.wait_for(body["prompt_id"])
        assert entry["prompt"][2].keys() == api_prompt(_workflow(path), server.get("/object_info"))[0].keys()
        failure = placeholder_failure(entry, _workflow(path), names)
        assert failure is None, f"{path.stem}: {failure}"
    page.screenshot(path=str(ARTIFACTS / "new_template_queued.png"))


# The Compare template made runnable here: its loader, prompt and size replaced by the tiny
# LTX-Video model, the test conditioning and a small video latent, its samplers at one step with
# CFG 1 (the test conditioning is one prompt), and the samplers' latents compared (no VAE exists
# for the tiny model). Everything else - the two Scopes, the shared seed, Compare, Status - is the
# template's, edited through the front end's own graph API.
TINY_COMPARE_JS = """([tiny, dim]) => {
  const graph = window.app.graph, L = window.LiteGraph;
  const all = type => graph._nodes.filter(n => n.type === type);
  const widget = (node, name) => node.widgets.find(w => w.name === name);
  const set = (node, values) => { for (const [k, v] of Object.entries(values)) widget(node, k).value = v; };
  const add = (type, values, x, y) => {
    const node = L.createNode(type);
    graph.add(node);
    node.pos = [x, y];
    set(node, values);
    return node;
  };
  const source = (node, name) => {
    const input = node.inputs.find(i => i.name === name);
    return graph.getNodeById(graph.links[input.link].origin_id);
  };
  const [compare] = all('SageAttentionCompare');
  const samplers = all('KSampler');
  const seeds = samplers.map(s => [widget(s, 'seed').value, widget(s, 'control_after_generate').value]);
  const left = Math.min(...graph._nodes.map(n => n.pos[0]));
  const bottom = Math.max(...graph._nodes.map(n => n.pos[1] + n.size[1]));
  const unet = add('UNETLoader', {unet_name: tiny}, left, bottom + 100);
  const cond = add('SASTestConditioning', {tokens: 5, dim, seed: 0}, left + 400, bottom + 100);
  const latent = add('EmptyLTXVLatentVideo', {width: 64, height: 64, length: 9, batch_size: 1},
                     left + 800, bottom + 100);
  const sides = {};
  for (const sampler of samplers) {
    const scope = source(sampler, 'model');
    const on = widget(scope, 'enabled').value;
    sides[on ? 'on' : 'off'] = sampler.id;
    unet.connect(0, scope, scope.findInputSlot('model'));
    if (on) set(scope, {kernel: 'reference_double', routing: 'always', min_seq_len: 1});
    for (const name of ['positive', 'negative']) cond.connect(0, sampler, sampler.findInputSlot(name));
    latent.connect(0, sampler, sampler.findInputSlot('latent_image'));
    set(sampler, {steps: 1, cfg: 1.0});
    sampler.connect(0, compare, compare.findInputSlot(on ? 'latent_b' : 'latent_a'));
  }
  for (const type of ['CheckpointLoaderSimple', 'CLIPTextEncode', 'EmptyLatentImage', 'VAEDecode'])
    for (const node of all(type)) graph.remove(node);
  graph.setDirtyCanvas(true, true);
  return {seeds, sides, types: graph._nodes.map(n => n.type)};
}"""


def test_the_compare_template_runs_from_the_front_end_and_shows_numbers_and_a_picture(session, page, server):
    load(page, _workflow(_template("Compare")))
    edited = page.evaluate(TINY_COMPARE_JS, [TINY_MODEL, TINY_LTXV["caption_channels"]])
    (seed_a, control_a), (seed_b, control_b) = edited["seeds"]
    assert seed_a == seed_b and control_a == control_b == "fixed"  # the template's: both runs alike
    assert set(edited["sides"]) == {"off", "on"}
    assert sorted(edited["types"]).count("SageAttentionScope") == 2
    page.evaluate("() => window.app.queuePrompt(0, 1)")
    shown = page.locator("[data-sage-compare]")
    shown.wait_for(state="attached", timeout=RUN_MS)
    center_on(page, "SageAttentionCompare")
    sync_api.expect(shown).to_contain_text("Sampling time", timeout=RUN_MS)
    text = shown.inner_text()
    assert "left: without SageAttention | middle: with SageAttention" in text
    assert "Latents: relative L2" in text and "cosine" in text
    # Both runs were timed by their Scope: the one that is off, and the one that is on with its speed-up.
    assert "(Scope off): " in text and "x)" in text, text
    # ComfyUI's own image preview of the side-by-side picture: loaded in the node.
    page.wait_for_function("""() => {
        const node = window.app.graph._nodes.find(n => n.type === 'SageAttentionCompare');
        return node.imgs?.length > 0 && node.imgs[0].complete && node.imgs[0].naturalWidth > 0;
    }""", timeout=RUN_MS)
    status = page.locator("[data-sage-status]")
    sync_api.expect(status).to_contain_text("Scope off", timeout=RUN_MS)
    center_on(page, "SageAttentionCompare")
    page.screenshot(path=str(ARTIFACTS / "compare_node.png"))


def test_tiny_graph_runs_and_the_status_node_shows_its_text(session, page):
    page.evaluate("api => window.app.loadApiJson(api, 'sas_tiny')", tiny_prompt(seed=7))
    page.evaluate("() => window.app.queuePrompt(0, 1)")
    status = page.locator("[data-sage-status]")
    status.wait_for(state="attached", timeout=RUN_MS)
    center_on(page, "SageAttentionStatus")  # a DOM widget shows where its node is in view
    sync_api.expect(status).to_contain_text("model LTX-Video (LTXV): scoped", timeout=READY_MS)
    text = status.inner_text()
    assert "cpu: reference_double" in text and "This run" in text and "Session" in text
    # The node grows to the text as the front end lays it out: its last line inside the node.
    page.wait_for_function("""() => {
        const node = window.app.graph._nodes.find(n => n.type === 'SageAttentionStatus');
        const [, bottom] = window.app.canvasPosToClientPos([node.pos[0], node.pos[1] + node.size[1]]);
        const shown = node.widgets.find(w => w.name === 'sage_status').holder.firstElementChild;
        return shown.getBoundingClientRect().bottom <= bottom + 1;
    }""", timeout=READY_MS)
    page.screenshot(path=str(ARTIFACTS / "status_node.png"))


# -- the Scope node: its errors, its typed values, its expert inputs; the Status after coexistence ---

def queue(page):
    """Queues the graph as the Run button does; the server's answer to /prompt."""
    with page.expect_response(lambda r: r.url.endswith("/prompt") and r.request.method == "POST",
                              timeout=READY_MS) as response:
        page.evaluate("() => window.app.queuePrompt(0, 1)")
    return response.value


# The tiny graph saved as a workflow file, one of the Scope's widget values replaced: what a user loads.
WORKFLOW_WITH_JS = """([name, value]) => {
  const workflow = window.app.graph.serialize();
  const scope = window.app.graph._nodes.find(n => n.type === 'SageAttentionScope');
  const saved = workflow.nodes.find(n => n.type === 'SageAttentionScope');
  saved.widgets_values[scope.widgets.findIndex(w => w.name === name)] = value;
  return workflow;
}"""


# What front ends say around a value ComfyUI could not convert: never around the pack's refusals.
CONVERSION_WORDING = ("couldn't be converted", "wrong type", "Failed to convert", "__value__")
VALIDATED = ["kernel", "start_percent", "end_percent"]  # the inputs the Scope's validate_inputs names


def _front_end_version(page) -> tuple[int, ...]:
    return _version(page.evaluate("() => window.__COMFYUI_FRONTEND_VERSION__"))


@pytest.mark.parametrize("how, says", [
    ("start_percent above end_percent", "start_percent (0.8) must not be above end_percent (0.5)"),
    ("a workflow file with kernel 'sage9'", "kernel 'sage9' is unknown; on this machine: auto"),
], ids=["window", "kernel"])
def test_a_bad_value_shows_the_packs_sentence_where_the_front_end_reports_the_refusal(session, page, server, how,
                                                                                       says):
    """The server refuses the prompt with the pack's sentence under each input validate_inputs names; the
    front end's own report shows the sentence and none of the wording of a value ComfyUI could not
    convert: front end 1.32 (ComfyUI 0.3.75) in its error dialog, 1.49 (0.33) in its toast and, per
    input, in its errors panel."""
    page.evaluate("api => window.app.loadApiJson(api, 'sas_tiny')",
                  tiny_prompt(seed=31, start_percent=0.8, end_percent=0.5) if how.startswith("start") else
                  tiny_prompt(seed=31))
    if how.startswith("a workflow file"):
        load(page, page.evaluate(WORKFLOW_WITH_JS, ["kernel", "sage9"]))
    response = queue(page)
    assert response.status == 400, response.text()
    errors = response.json()["node_errors"]["2"]["errors"]
    assert [error["extra_info"]["input_name"] for error in errors] == VALIDATED, errors
    if _front_end_version(page) < (1, 49):
        dialog = page.get_by_role("dialog").filter(has_text="Prompt execution failed")
        for name in VALIDATED:
            sync_api.expect(dialog).to_contain_text(f"Custom validation failed for node: {name} - {says}",
                                                    timeout=READY_MS)
    else:
        toast = page.get_by_role("status").filter(has_text="Invalid input")
        sync_api.expect(toast).to_contain_text("A node rejected one or more input values.", timeout=READY_MS)
        toast.get_by_role("button", name="View details").click()
        for name in VALIDATED:
            page.get_by_role("button", name=f"Info for Sage Attention Scope - {name}").click()
            sync_api.expect(page.get_by_text(f"Sage Attention Scope failed custom validation: {name} - {says}")
                            ).to_be_visible(timeout=READY_MS)
    shown = page.inner_text("body")
    assert not [words for words in CONVERSION_WORDING if words in shown], shown
    page.screenshot(path=str(ARTIFACTS / f"scope_refused_{'kernel' if 'kernel' in how else 'window'}.png"))
    if _front_end_version(page) < (1, 49):
        page.keyboard.press("Escape")  # the dialog
    else:
        page.get_by_role("button", name="Toggle properties panel").click()  # the errors panel


def _scope_node_js(body: str) -> str:
    return "() => { const node = window.app.graph._nodes.find(n => n.type === 'SageAttentionScope'); " + body + " }"


def test_typing_a_min_seq_len_keeps_what_was_typed(session, page, server):
    """The widget takes what is typed (with step 256 the front ends rounded 100 to 0, which is auto)."""
    page.evaluate("api => window.app.loadApiJson(api, 'sas_tiny')", tiny_prompt(seed=32))
    page.evaluate(_scope_node_js("if (node.toggleAdvanced && !node.showAdvanced) node.toggleAdvanced();"))
    center_on(page, "SageAttentionScope")
    for typed in (100, 77, 300):
        # A widget's y is set when the canvas draws it: under load the first draw after loading can come
        # after center_on's wait, and a click placed from no y lands elsewhere on the node.
        page.wait_for_function(_scope_node_js(
            "window.app.graph.setDirtyCanvas(true, true); "
            "return Number.isFinite(node.widgets.find(w => w.name === 'min_seq_len').y);"), timeout=READY_MS)
        x, y = page.evaluate(_scope_node_js(
            "const w = node.widgets.find(w => w.name === 'min_seq_len'); return window.app.canvasPosToClientPos("
            "[node.pos[0] + node.size[0] / 2, node.pos[1] + w.y + window.LiteGraph.NODE_WIDGET_HEIGHT / 2]);"))
        page.mouse.click(x, y)  # the value's prompt opens, its text selected
        page.wait_for_function("() => document.activeElement?.tagName === 'INPUT'", timeout=READY_MS)  # open
        page.keyboard.press("Control+A")
        page.keyboard.type(str(typed))
        page.keyboard.press("Enter")
        page.wait_for_function("() => document.activeElement?.tagName !== 'INPUT'", timeout=READY_MS)  # closed
        assert page.evaluate(_scope_node_js("return node.widgets.find(w => w.name === 'min_seq_len').value;")) == typed
    shown = page.evaluate(FRONT_END_PROMPT_JS)
    assert shown["prompt"]["2"]["inputs"]["min_seq_len"] == 300  # and the prompt sends it


def test_a_new_scope_node_shows_its_expert_inputs_only_on_request_where_comfyui_marks_them(session, page, server):
    """ComfyUI 0.33 marks the expert inputs advanced: the node shows only the others until its "Show
    Advanced" is on. 0.3.75 has no such mark: every widget shows, as before."""
    page.evaluate("() => window.app.graph.clear()")
    shown = page.evaluate("""() => {
        const node = window.LiteGraph.createNode('SageAttentionScope');
        window.app.graph.add(node);
        const shown = () => node.widgets.filter(w => node.isWidgetVisible(w)).map(w => w.name);
        const folded = shown();
        if (node.toggleAdvanced) node.toggleAdvanced();
        return {folded, unfolded: shown(), values: node.serialize().widgets_values.length};
    }""")
    schema = server.get("/object_info/SageAttentionScope")["SageAttentionScope"]["input"]
    inputs = {**schema["required"], **schema.get("optional", {})}
    widgets = [name for name in inputs if name != "model"]
    expert = {name for name, (_, options) in inputs.items() if isinstance(options, dict) and options.get("advanced")}
    if expert:
        assert shown["folded"] == ["enabled", "kernel", "start_percent", "end_percent", "sparse"]
        assert set(shown["unfolded"]) == set(widgets) and expert == set(widgets) - set(shown["folded"])
    else:
        assert shown["folded"] == shown["unfolded"] and set(shown["folded"]) == set(widgets)
    assert shown["values"] == len(widgets) == 16  # folded or not, every value is saved and sent


def test_the_kernel_and_routing_widgets_carry_the_engines_tooltips(session, page, server):
    """The tooltips the front end shows on the Scope's kernel and routing widgets are the node's own, which say
    what the engine does (auto: every installed candidate, torch's exact backends among them; measured: timed
    against ComfyUI's attention per shape, stepping aside where the step is slower)."""
    from sage_attention_scope.nodes.scope import TOOLTIPS
    page.evaluate("() => window.app.graph.clear()")
    shown = page.evaluate("""() => {
        const node = window.LiteGraph.createNode('SageAttentionScope');
        window.app.graph.add(node);
        // The node definition the front end builds its widgets and their tooltips from.
        const inputs = node.constructor.nodeData?.input ?? {};
        const tip = (name) => {
            const spec = inputs.required?.[name] ?? inputs.optional?.[name];
            return spec?.[1]?.tooltip ?? null;
        };
        return {kernel: tip('kernel'), routing: tip('routing')};
    }""")
    # (the kernel tooltip goes on with what this machine has: a CPU server's says it has no CUDA GPU)
    assert shown["kernel"].startswith(TOOLTIPS["kernel"]) and shown["routing"] == TOOLTIPS["routing"]
    assert "torch's cuDNN" in shown["kernel"] and "steps aside" in shown["routing"]


def expect_this_run_scoped(status, absent: str) -> None:
    """The Status node's run: the tiny model scoped, its calls on the kernel, and nothing of ``absent``."""
    sync_api.expect(status).to_contain_text("This run:\n  model LTX-Video (LTXV): scoped\n", timeout=RUN_MS)
    this_run = status.inner_text().split("Session")[0]
    assert absent not in this_run and f"cpu: {TINY_LTXV['num_layers']} on the kernel" in this_run, this_run


def test_a_chain_of_scopes_the_first_off_shows_one_line_for_the_model_in_the_status(session, page, server):
    """The tiny model through a Scope that is off and then one that is on: the Status node says once
    that the model was scoped, with its calls."""
    page.evaluate("api => window.app.loadApiJson(api, 'sas_tiny')", chained_scopes_prompt(seed=34))
    answer = queue(page).json()
    assert "prompt_id" in answer, answer
    server.wait_for(answer["prompt_id"], RUN_MS / 1e3)
    center_on(page, "SageAttentionStatus")
    expect_this_run_scoped(page.locator("[data-sage-status]"), absent="Scope off")
    page.screenshot(path=str(ARTIFACTS / "status_chain_of_scopes.png"))


def test_after_a_replacing_node_is_removed_the_status_says_the_scope_served_the_run(session, page, server):
    """A node after the Scope that replaces its override (as KJNodes' Patch Sage Attention does): the
    Status says so. The node removed and the graph run again (ComfyUI serves the Scope node from its
    cache): the Status says the Scope served that run, with its calls."""
    prompt = tiny_prompt(seed=33)
    prompt["7"] = {"class_type": "SASTestReplaceAttention", "inputs": {"model": ["2", 0]}}
    prompt["5"]["inputs"]["model"] = ["7", 0]
    page.evaluate("api => window.app.loadApiJson(api, 'sas_tiny')", prompt)
    status = page.locator("[data-sage-status]")
    server.wait_for(queue(page).json()["prompt_id"], RUN_MS / 1e3)
    center_on(page, "SageAttentionStatus")
    replaced = "model LTX-Video (LTXV): replaced by SASTestReplaceAttention.patch (sas_test_nodes): Sage Attention " \
               "Scope inactive for this model"
    sync_api.expect(status).to_contain_text(replaced, timeout=RUN_MS)
    page.evaluate("""() => {
        const graph = window.app.graph, node = id => graph.getNodeById(id);
        graph.remove(node(7));
        node(2).connect(0, node(5), node(5).findInputSlot('model'));
    }""")
    entry = server.wait_for(queue(page).json()["prompt_id"], RUN_MS / 1e3)
    messages = entry["status"]["messages"]
    cached = [node for kind, data in messages if kind == "execution_cached" for node in data["nodes"]]
    assert "2" in cached, entry["status"]  # the Scope did not run again: its note is not this run's source
    center_on(page, "SageAttentionStatus")
    expect_this_run_scoped(status, absent="replaced by")
    page.screenshot(path=str(ARTIFACTS / "status_after_replacing_node_removed.png"))
