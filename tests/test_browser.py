"""ComfyUI's own front end in headless Chromium: an example workflow loads, the tiny graph runs,
and the Status node shows its text in the node body. Screenshots go to $SAS_ARTIFACTS (default
.artifacts/browser/, git-ignored)."""
from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from sas_harness import ROOT
from sas_harness.server import tiny_prompt

CHROMIUM = os.environ.get("SAS_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
ARTIFACTS = Path(os.environ.get("SAS_ARTIFACTS") or ROOT / ".artifacts" / "browser")
# Flags for a machine with no network beyond localhost (and running as root).
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
READY_MS = 90_000


sync_api = pytest.importorskip("playwright.sync_api", reason="Playwright (pip install playwright) is not installed")


def open_ui(page, url: str) -> None:
    page.goto(url)
    page.wait_for_function("() => window.app?.graph && window.LiteGraph?.registered_node_types"
                           "?.['SageAttentionStatus']", timeout=READY_MS)


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


def test_the_example_workflows_are_offered_as_templates(session, page, server):
    page.evaluate("() => window.app.extensionManager.command.execute('Comfy.BrowseTemplates')")
    for path in (ROOT / "example_workflows").glob("*.json"):
        sync_api.expect(page.get_by_text(path.stem, exact=True).first).to_be_visible(timeout=READY_MS)
    page.screenshot(path=str(ARTIFACTS / "templates.png"))
    open_ui(page, server.url)  # a fresh page, without the dialog


def test_example_workflow_loads_in_the_front_end(session, page):
    workflow = json.loads((ROOT / "example_workflows" / "flux1_dev_text_to_image.json").read_text())
    page.evaluate("wf => window.app.loadGraphData(wf)", workflow)
    loaded = page.evaluate("() => window.app.graph._nodes.map(n => n.type)")
    assert sorted(loaded) == sorted(n["type"] for n in workflow["nodes"])
    unknown = page.evaluate("types => types.filter(t => !window.LiteGraph.registered_node_types[t])", loaded)
    assert unknown == []
    page.screenshot(path=str(ARTIFACTS / "example_workflow_flux1.png"))


def test_tiny_graph_runs_and_the_status_node_shows_its_text(session, page):
    page.evaluate("api => window.app.loadApiJson(api, 'sas_tiny')", tiny_prompt(seed=7))
    page.evaluate("() => window.app.queuePrompt(0, 1)")
    status = page.locator("[data-sage-status]")
    status.wait_for(timeout=READY_MS)
    sync_api.expect(status).to_contain_text("model LTX-Video (LTXV): scoped", timeout=READY_MS)
    text = status.inner_text()
    assert "cpu: reference_double" in text and "This run" in text and "Session" in text
    page.evaluate("""() => {
        const node = window.app.graph._nodes.find(n => n.type === 'SageAttentionStatus');
        window.app.canvas.ds.scale = 1.0;
        window.app.canvas.centerOnNode(node);
        window.app.graph.setDirtyCanvas(true, true);
    }""")
    page.wait_for_timeout(500)
    page.screenshot(path=str(ARTIFACTS / "status_node.png"))
