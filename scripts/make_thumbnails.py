"""Writes example_workflows/<title>.jpg for every example workflow: the thumbnail ComfyUI's template
browser shows beside a custom node's template (front end 1.32.9 asks for the same-name .jpg; its
card is square).

No model weights exist where this runs, so a thumbnail shows no generated picture: it is a card
naming the model family, the task and where the Scope sits (below a top band the 0.33 template browser
covers with its "Node graph" badge), over the graph as ComfyUI's own front end draws it (ComfyUI
started with the pack, the workflow loaded in headless Chromium, the canvas around the Sage Attention
nodes photographed). Run from the repository root, after scripts/make_example_workflows.py:
    .venv/bin/python scripts/make_thumbnails.py [--only TITLE ...] [--out DIR]
Needs Playwright and Chromium ($SAS_CHROMIUM, else chromium on PATH); ComfyUI from $COMFYUI_PATH,
else .comfyui/ComfyUI. A node this ComfyUI lacks (LTX-2's before 0.8) is left out of the photograph
(the front end would draw a red error box), and the script names it: photograph a template that
needs a newer ComfyUI on one that has it, e.g. the 0.33 host (its own front end draws the graph):
    COMFYUI_PATH=.comfyui/comfyui-0.33 .comfyui/venv-0.33/bin/python scripts/make_thumbnails.py --only TITLE
"""
from __future__ import annotations

import argparse
import base64
import html
import io
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
WORKFLOWS = ROOT / "example_workflows"
sys.path.insert(0, str(ROOT / "tests"))  # the harness: a real ComfyUI server with the pack
sys.path.insert(0, str(ROOT / "scripts"))

from make_example_workflows import EXTRA_KEY, FLOOR, PACK_NODES  # noqa: E402

SIZE = 512                     # the card, square like the browser's
# ComfyUI 0.33's template browser lays a "Node graph" badge over the card's top left (about the top 60 px and
# the left 230 px of a 512 px card): the title starts below this band, which holds nothing but the background.
TOP_BAND = 84
GRAPH = (1200, 632)            # the photographed part of the canvas, CSS px (as the card's graph area, 512 x 270)
VIEWPORT = (1600, 1200)        # the window: the graph part sits clear of the menus and the canvas controls
QUALITY = 88                   # JPEG quality: a card is ~30-45 KB
MAX_BYTES = 150_000
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
READY_MS = 90_000
SETTINGS = {  # set on the server before the page opens
    "Comfy.TutorialCompleted": True,            # no template browser over the canvas
    "Comfy.Minimap.Visible": False,
    "LiteGraph.Canvas.MinFontSizeForLOD": 0,    # text drawn at every zoom
}

# The canvas around the pack's nodes: each Scope with what feeds it and what reads it, and Compare.
FRAME_JS = """([width, height, left, top]) => {
  const graph = window.app.graph, canvas = window.app.canvas, H = window.LiteGraph.NODE_TITLE_HEIGHT;
  const pack = new Set(%s);
  // A node this ComfyUI lacks would be drawn as a red error box: left out of the photograph.
  const missing = graph._nodes.filter(n => !window.LiteGraph.registered_node_types[n.type]).map(n => n.type);
  for (const node of [...graph._nodes]) if (!window.LiteGraph.registered_node_types[node.type]) graph.remove(node);
  const keep = new Map();
  for (const node of graph._nodes) {
    if (!pack.has(node.type) || node.type === 'SageAttentionStatus') continue;
    keep.set(node.id, node);
    if (node.type !== 'SageAttentionScope') continue;
    for (const input of node.inputs || []) {
      const link = input.link != null && graph.links[input.link];
      if (link) keep.set(link.origin_id, graph.getNodeById(link.origin_id));
    }
    for (const output of node.outputs || []) for (const id of output.links || []) {
      const link = graph.links[id];
      if (link) keep.set(link.target_id, graph.getNodeById(link.target_id));
    }
  }
  let x0 = Infinity, y0 = Infinity, x1 = -Infinity, y1 = -Infinity;
  for (const node of keep.values()) {
    x0 = Math.min(x0, node.pos[0]); y0 = Math.min(y0, node.pos[1] - H);
    x1 = Math.max(x1, node.pos[0] + node.size[0]); y1 = Math.max(y1, node.pos[1] + node.size[1]);
  }
  const pad = 40;
  x0 -= pad; y0 -= pad; x1 += pad; y1 += pad;
  const scale = Math.min(1.0, width / (x1 - x0), height / (y1 - y0));
  const rect = canvas.canvas.getBoundingClientRect();
  const cx = left + width / 2 - rect.left, cy = top + height / 2 - rect.top;
  canvas.ds.scale = scale;
  canvas.ds.offset = [cx / scale - (x0 + x1) / 2, cy / scale - (y0 + y1) / 2];
  canvas.deselectAll?.();
  graph.setDirtyCanvas(true, true);
  return {scale, nodes: [...keep.values()].map(n => n.type), missing};
}""" % json.dumps(list(PACK_NODES))


def _font_face() -> str:
    """The front end's own Inter, embedded (the card page has no server to load it from)."""
    import comfyui_frontend_package
    fonts = Path(comfyui_frontend_package.__file__).parent / "static" / "fonts"
    font = fonts / "inter-latin-normal.woff2"  # a variable font: every weight
    if not font.is_file():
        return ""  # the card falls back to DejaVu Sans
    data = base64.b64encode(font.read_bytes()).decode()
    return f"@font-face{{font-family:Inter;font-weight:100 900;src:url(data:font/woff2;base64,{data}) format('woff2')}}"


def card_html(meta: dict, graph_png: bytes, font_face: str) -> str:
    task, where = meta["task"], meta["scope"]
    needs = meta["min_comfyui_version"]
    foot = f"needs ComfyUI {needs} or newer" if needs != FLOOR else f"ComfyUI {FLOOR} or newer"
    graph = base64.b64encode(graph_png).decode()
    e = html.escape
    return f"""<!doctype html><html><head><style>
{font_face}
html, body {{ margin: 0; background: #151515; }}
.card {{ width: {SIZE}px; height: {SIZE}px; box-sizing: border-box; padding: {TOP_BAND}px 24px 0;
  font-family: Inter, 'DejaVu Sans', sans-serif; color: #eee; overflow: hidden;
  background: linear-gradient(160deg, #24303a 0%, #171a1d 55%, #131313 100%); position: relative; }}
.family {{ font-size: 36px; font-weight: 750; letter-spacing: -0.5px; line-height: 1.1; white-space: nowrap;
  overflow: hidden; text-overflow: ellipsis; }}
.task {{ font-size: 20px; color: #b9c3cc; margin-top: 4px; }}
.scope {{ margin-top: 10px; font-size: 15px; color: #cfe; display: flex; gap: 8px; align-items: center; }}
.chip {{ background: #355; border: 1px solid #4a7a7a; color: #dff; border-radius: 6px; padding: 3px 8px;
  font-weight: 600; white-space: nowrap; }}
.graph {{ position: absolute; left: 0; right: 0; bottom: 30px; height: 270px; overflow: hidden;
  border-top: 1px solid #333; border-bottom: 1px solid #333; }}
.graph img {{ width: 100%; height: 100%; object-fit: cover; display: block; }}
.foot {{ position: absolute; left: 24px; right: 24px; bottom: 7px; font-size: 13px; color: #9aa; }}
</style></head><body><div class="card" id="card">
<div class="family">{e(meta["family"])}</div>
<div class="task">{e(task)}</div>
<div class="scope"><span class="chip">Sage Attention Scope</span><span>{e(where)}</span></div>
<div class="graph"><img src="data:image/png;base64,{graph}"></div>
<div class="foot">{e(foot)} &middot; the graph as ComfyUI draws it</div>
</div></body></html>"""


def to_jpeg(png: bytes, path: Path) -> int:
    from PIL import Image
    image = Image.open(io.BytesIO(png)).convert("RGB")
    quality = QUALITY
    while True:
        buffer = io.BytesIO()
        image.save(buffer, "JPEG", quality=quality, optimize=True, progressive=True)
        if buffer.tell() <= MAX_BYTES or quality <= 60:
            break
        quality -= 6
    path.write_bytes(buffer.getvalue())
    return buffer.tell()


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="*", help="template titles (file stems) to redo; default all")
    parser.add_argument("--out", type=Path, default=WORKFLOWS, help="where the .jpg files go")
    args = parser.parse_args(argv)
    chromium = os.environ.get("SAS_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
    if not Path(chromium).exists():
        print(f"no Chromium at {chromium} (Debian: apt-get install chromium; or set SAS_CHROMIUM)", file=sys.stderr)
        return 2
    from playwright.sync_api import sync_playwright

    import sas_harness
    sas_harness.boot()
    from sas_harness import server as sas_server

    paths = sorted(WORKFLOWS.glob("*.json"))
    if args.only:
        paths = [p for p in paths if p.stem in set(args.only)]
    args.out.mkdir(parents=True, exist_ok=True)
    font_face = _font_face()
    left, top = (VIEWPORT[0] - GRAPH[0]) // 2, (VIEWPORT[1] - GRAPH[1]) // 2
    with tempfile.TemporaryDirectory() as base, \
            sas_server.comfyui_server(Path(base), sas_server.example_model_files()) as server, \
            sync_playwright() as playwright:
        for key, value in SETTINGS.items():
            server.post(f"/settings/{key}", value)
        browser = playwright.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": VIEWPORT[0], "height": VIEWPORT[1]}, device_scale_factor=1)
        page.goto(server.url)
        page.wait_for_function("() => window.app?.graph && window.LiteGraph?.registered_node_types"
                               "?.['SageAttentionScope']", timeout=READY_MS)
        card = browser.new_page(viewport={"width": SIZE, "height": SIZE}, device_scale_factor=1)
        for path in paths:
            workflow = json.loads(path.read_text())
            meta = workflow["extra"][EXTRA_KEY]
            page.evaluate("wf => window.app.loadGraphData(wf, true, false, null, "
                          "{showMissingNodesDialog: false, showMissingModelsDialog: false})", workflow)
            page.wait_for_timeout(300)
            framed = page.evaluate(FRAME_JS, [GRAPH[0], GRAPH[1], left, top])
            page.wait_for_timeout(400)  # two frames and the DOM widgets (text boxes) moved with the canvas
            graph_png = page.screenshot(clip={"x": left, "y": top, "width": GRAPH[0], "height": GRAPH[1]})
            card.set_content(card_html(meta, graph_png, font_face))
            card.wait_for_function("document.fonts.status === 'loaded'")
            size = to_jpeg(card.locator("#card").screenshot(type="png"), args.out / f"{path.stem}.jpg")
            note = f"; left out, missing in this ComfyUI: {framed['missing']}" if framed["missing"] else ""
            print(f"{path.stem}.jpg: {size // 1000} KB, graph at {framed['scale']:.2f}x around "
                  f"{len(framed['nodes'])} nodes{note}")
        browser.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
