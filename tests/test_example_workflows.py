"""The example workflows (ComfyUI's template browser lists them) as files: what the front end reads
of them, their thumbnails, and the pack's nodes in them. No server; tests/test_server.py checks
them against a running ComfyUI's /object_info, tests/test_browser.py in the front end.

ComfyUI's front end 1.32.9 reads nothing of a custom node's template but its file: the card's
title is the file stem, its description the stem with "-" and "_" as spaces, its thumbnail the
same-name .jpg (scripts/make_example_workflows.py says where in the front end)."""
from __future__ import annotations

import importlib.util
import json
import re
import sys
from pathlib import Path

import pytest
from PIL import Image, ImageStat

from sas_harness import ROOT

EXAMPLES = ROOT / "example_workflows"
WORKFLOWS = sorted(EXAMPLES.glob("*.json"))
FRONTEND_ONLY = {"MarkdownNote", "Note"}
MIN_SIDE, MIN_STD, MAX_BYTES = 256, 12.0, 150_000
SIDE, BADGE_ROWS, CORNER_STD = 512, 70, 6.0  # the card's corner the badge covers: left half, top 70 rows


def _generator():
    spec = importlib.util.spec_from_file_location("sas_make_example_workflows",
                                                  ROOT / "scripts" / "make_example_workflows.py")
    module = sys.modules[spec.name] = importlib.util.module_from_spec(spec)  # dataclasses look it up there
    spec.loader.exec_module(module)
    return module


GEN = _generator()


def _load(path: Path) -> dict:
    return json.loads(path.read_text())


def _version(text: str) -> tuple[int, ...]:
    assert re.fullmatch(r"\d+\.\d+\.\d+", text), f"not a version: {text!r}"
    return tuple(int(part) for part in text.split("."))


def _meta(workflow: dict) -> dict:
    return workflow["extra"][GEN.EXTRA_KEY]


def _nodes(workflow: dict, type_: str) -> list[dict]:
    return [n for n in workflow["nodes"] if n["type"] == type_]


def _source(workflow: dict, node: dict, input_name: str) -> dict:
    """The node whose output feeds ``node``'s input ``input_name``."""
    [socket] = [s for s in node["inputs"] if s["name"] == input_name]
    [link] = [link for link in workflow["links"] if link[0] == socket["link"]]
    [src] = [n for n in workflow["nodes"] if n["id"] == link[1]]
    return src


def _upstream(workflow: dict, node: dict) -> set[int]:
    """Ids of every node ``node`` depends on."""
    by_dst: dict[int, list[int]] = {}
    for _, src, _, dst, _, _ in workflow["links"]:
        by_dst.setdefault(dst, []).append(src)
    seen, todo = set(), [node["id"]]
    while todo:
        for src in by_dst.get(todo.pop(), []):
            if src not in seen:
                seen.add(src)
                todo.append(src)
    return seen


ids = {"ids": lambda p: p.stem}


def test_there_are_the_templates_the_generator_writes_and_no_index_json():
    """The server lists every *.json of example_workflows/ as a template: an index.json (newer front
    ends' proposal) would show up as a broken template named "index"."""
    assert {p.name for p in WORKFLOWS} == {t.file for t in GEN.TEMPLATES}
    assert not (EXAMPLES / "index.json").exists()
    assert {p.stem for p in EXAMPLES.glob("*.jpg")} == {p.stem for p in WORKFLOWS}, "a thumbnail without a workflow"


@pytest.mark.parametrize("path", WORKFLOWS, **ids)
def test_each_file_is_what_the_generator_writes(path):
    """Edit scripts/make_example_workflows.py and run it, never the JSON by hand."""
    [template] = [t for t in GEN.TEMPLATES if t.file == path.name]
    assert _load(path) == json.loads(json.dumps(GEN.build(template))), \
        f"{path.name} differs from what scripts/make_example_workflows.py writes; run it"


@pytest.mark.parametrize("path", WORKFLOWS, **ids)
def test_the_thumbnail_is_a_real_jpeg_the_browser_can_show(path):
    thumb = path.with_suffix(".jpg")
    assert thumb.is_file(), f"{path.name} has no thumbnail {thumb.name} (scripts/make_thumbnails.py writes it)"
    assert thumb.stat().st_size <= MAX_BYTES, f"{thumb.name} is {thumb.stat().st_size} bytes"
    with Image.open(thumb) as image:
        assert image.format == "JPEG", f"{thumb.name} is {image.format}"  # the front end asks for .jpg
        assert min(image.size) >= MIN_SIDE, f"{thumb.name} is {image.size}"
        stats = ImageStat.Stat(image.convert("L"))
        assert stats.stddev[0] > MIN_STD, f"{thumb.name} is nearly one colour (std {stats.stddev[0]:.1f})"
        colours = image.convert("RGB").resize((64, 64)).getcolors(64 * 64)
        assert colours is None or len(colours) > 16, f"{thumb.name} has {len(colours)} colours"


@pytest.mark.parametrize("path", WORKFLOWS, **ids)
def test_the_thumbnail_leaves_the_badge_corner_to_the_badge(path):
    """ComfyUI 0.33's template browser lays its "Node graph" badge over the card's top left: the thumbnail
    keeps its title below (scripts/make_thumbnails.py TOP_BAND), so that corner holds only the background."""
    with Image.open(path.with_suffix(".jpg")) as image:
        corner = image.convert("L").resize((SIDE, SIDE)).crop((0, 0, SIDE // 2, BADGE_ROWS))
        assert ImageStat.Stat(corner).stddev[0] < CORNER_STD, f"{path.stem}: text under the badge"


@pytest.mark.parametrize("path", WORKFLOWS, **ids)
def test_the_title_the_browser_shows_is_the_file_stem_and_says_what_it_needs(path):
    workflow = _load(path)
    meta = _meta(workflow)
    assert meta["title"] == path.stem  # the only title the template browser shows
    assert len(path.stem) <= 60 and not re.search(r"[\\/:*?\"<>|#%&+]", path.stem), \
        f"{path.stem!r}: a title is a file name and part of a URL"
    assert len(meta["description"]) >= 60 and meta["description"] != meta["title"]
    assert "Scope" in meta["description"]
    needs = meta["min_comfyui_version"]
    assert _version(needs) >= _version(GEN.FLOOR)
    if _version(needs) > _version(GEN.FLOOR):  # the browser shows only the title: it says so there
        major_minor = ".".join(needs.split(".")[:2])
        assert f"ComfyUI {major_minor}" in path.stem, f"{path.stem!r} needs ComfyUI {needs}"


@pytest.mark.parametrize("path", WORKFLOWS, **ids)
def test_the_minimum_version_is_what_the_front_end_reads_on_the_nodes(path):
    """The front end's missing-nodes dialog groups a missing core node by ``properties.ver``
    ("nodes from version ..."), where ``properties.cnr_id`` is "comfy-core"."""
    workflow = _load(path)
    needs = _meta(workflow)["min_comfyui_version"]
    versions = {}
    for node in workflow["nodes"]:
        props = node["properties"]
        if node["type"] in FRONTEND_ONLY:
            assert "cnr_id" not in props
        elif node["type"].startswith("SageAttention"):
            assert props["cnr_id"] == GEN.PACK_ID
        else:
            assert props["cnr_id"] == "comfy-core", node["type"]
            versions[node["type"]] = props["ver"]
            assert props["ver"] == GEN.node_version(node["type"], node["widgets_values"])
    assert needs == max([GEN.FLOOR, *versions.values()], key=_version)
    note = "\n".join(n["widgets_values"][0] for n in _nodes(workflow, "MarkdownNote"))
    assert f"Needs ComfyUI {needs} or newer" in note


def test_the_templates_that_need_a_newer_comfyui():
    needs = {t.title: _meta(_load(EXAMPLES / t.file))["min_comfyui_version"] for t in GEN.TEMPLATES}
    assert {title: v for title, v in needs.items() if v != GEN.FLOOR} == {
        "LTX-2 text to video (ComfyUI 0.8 or newer)": "0.8.0",
        "LTX-2.3 text to video (ComfyUI 0.16 or newer)": "0.16.0",
        "Krea-2 Turbo text to image (ComfyUI 0.26 or newer)": "0.26.0",
        "Kandinsky 5 Lite text to video (ComfyUI 0.4 or newer)": "0.4.0"}


def test_a_newer_widget_value_dates_the_node_that_carries_it():
    """A text encoder type or checkpoint that an older ComfyUI lacks makes its node as new as the
    release that added it, though the node type itself is older."""
    carried = {}
    for path in WORKFLOWS:
        for node in _load(path)["nodes"]:
            for value in node["widgets_values"]:
                if isinstance(value, str) and value in GEN.NEWER_VALUES:
                    carried.setdefault(value, set()).add((node["type"], node["properties"]["ver"]))
    assert carried == {
        "krea2": {("CLIPLoader", "0.26.0")},
        "kandinsky5": {("DualCLIPLoader", "0.4.0")},
        "ltx-2.3-22b-dev-fp8.safetensors": {("CheckpointLoaderSimple", "0.16.0"), ("LTXAVTextEncoderLoader", "0.16.0"),
                                            ("LTXVAudioVAELoader", "0.16.0")}}


@pytest.mark.parametrize("path", WORKFLOWS, **ids)
def test_a_note_on_the_canvas_says_what_it_is_and_where_the_models_are(path):
    workflow = _load(path)
    meta = _meta(workflow)
    [note] = _nodes(workflow, "MarkdownNote")
    text = note["widgets_values"][0]
    assert meta["description"] in text
    named = {w for n in workflow["nodes"] for w in n["widgets_values"] if isinstance(w, str) and w in GEN.MODELS}
    assert named and set(meta["models"]) == named
    for node in workflow["nodes"]:
        for model in node["properties"].get("models", []):
            assert model["name"] in node["widgets_values"]
            assert model["url"].startswith("https://huggingface.co/") and model["url"].endswith(model["name"])
            assert model["url"] in text and f"`{model['directory']}/`" in text


@pytest.mark.parametrize("path", WORKFLOWS, **ids)
def test_the_links_are_consistent_both_ways(path):
    workflow = _load(path)
    nodes = {n["id"]: n for n in workflow["nodes"]}
    assert len(nodes) == len(workflow["nodes"]) and workflow["last_node_id"] == max(nodes)
    assert workflow["last_link_id"] == max(link[0] for link in workflow["links"])
    for link_id, src, src_slot, dst, dst_slot, link_type in workflow["links"]:
        assert nodes[dst]["inputs"][dst_slot]["link"] == link_id
        assert link_id in nodes[src]["outputs"][src_slot]["links"]
        assert nodes[src]["outputs"][src_slot]["type"] == link_type
        assert nodes[dst]["inputs"][dst_slot]["type"] in (link_type, "*")
    linked = {link[0] for link in workflow["links"]}
    for node in nodes.values():
        for socket in node["inputs"]:
            assert socket["link"] is None or socket["link"] in linked
        for output in node["outputs"]:
            assert set(output["links"]) <= linked


@pytest.mark.parametrize("path", WORKFLOWS, **ids)
def test_no_two_nodes_overlap(path):
    """As laid out (title bars included); the front end grows a node to its widgets on load, and
    tests/test_browser.py checks the grown ones."""
    title = 30
    boxes = [(n["type"], n["pos"][0], n["pos"][1] - title, n["size"][0], n["size"][1] + title)
             for n in _load(path)["nodes"]]
    for i, (ta, xa, ya, wa, ha) in enumerate(boxes):
        for tb, xb, yb, wb, hb in boxes[i + 1:]:
            assert not (xa < xb + wb and xb < xa + wa and ya < yb + hb and yb < ya + ha), f"{ta} overlaps {tb}"


def _scope_inputs():
    """The Scope node's widget inputs in the node's own order, with their defaults."""
    from sage_attention_scope.nodes.scope import SageAttentionScope
    return [(i.id, i.default) for i in SageAttentionScope.define_schema().inputs if i.id != "model"]


def test_the_generator_writes_the_scope_widgets_in_the_nodes_order():
    inputs = _scope_inputs()
    assert GEN.SCOPE_WIDGETS == [default for _, default in inputs]
    assert GEN.scope_widgets(enabled=False)[[name for name, _ in inputs].index("enabled")] is False


@pytest.mark.parametrize("path", WORKFLOWS, **ids)
def test_every_scope_has_its_inputs_in_order_at_the_defaults_or_off(path):
    from sage_attention_scope.patches.settings import Settings
    inputs = _scope_inputs()
    scopes = _nodes(_load(path), "SageAttentionScope")
    assert scopes
    for scope in scopes:
        values = scope["widgets_values"]
        assert len(values) == len(inputs), f"{len(values)} widget values for {len(inputs)} inputs"
        for (name, default), value in zip(inputs, values):
            assert type(value) is type(default), f"{name}={value!r}: not a {type(default).__name__}"
            # the deliberate values: a comparison's Scope that is off, the sparse comparison's sparse Scope
            if name != "enabled" and not (name == "sparse" and path.stem == SPARSE_COMPARE):
                assert value == default, f"{name}={value!r}, the node's default is {default!r}"
        Settings(**dict(zip([name for name, _ in inputs], values)))  # what the node makes of them
        assert _source(_load(path), scope, "model")["type"] in {
            "UNETLoader", "CheckpointLoaderSimple", "ModelSamplingSD3", "ModelSamplingAuraFlow", "LoraLoaderModelOnly"}
    assert len(_nodes(_load(path), "SageAttentionStatus")) == 1
    for status in _nodes(_load(path), "SageAttentionStatus"):
        assert status["widgets_values"] == [False]


SPARSE_COMPARE = "Dense vs sparse attention (Wan 2.2 A14B)"
COMPARE = "Compare with and without SageAttention (FLUX.1)"


def test_the_compare_templates_are_the_scope_off_and_on_one_and_the_dense_and_sparse_one():
    """tests/test_browser.py finds the off/on one as the one template whose title starts with "Compare"."""
    compares = sorted(p.stem for p in WORKFLOWS if _nodes(_load(p), "SageAttentionCompare"))
    assert compares == [COMPARE, SPARSE_COMPARE]
    starts = [p.stem for p in WORKFLOWS if p.stem.startswith("Compare")]
    assert starts == [COMPARE]


def test_the_compare_template_samples_one_model_twice_with_the_scope_off_and_on():
    """The headline template: FLUX.1, where the Scope was measured to pay (docs/measured.md)."""
    workflow = _load(EXAMPLES / f"{COMPARE}.json")
    [compare] = _nodes(workflow, "SageAttentionCompare")
    assert compare["widgets_values"] == ["without SageAttention", "with SageAttention"]
    samplers = []
    for side, enabled in (("image_a", False), ("image_b", True)):
        decode = _source(workflow, compare, side)
        assert decode["type"] == "VAEDecode"
        sampler = _source(workflow, decode, "samples")
        scope = _source(workflow, sampler, "model")
        assert scope["type"] == "SageAttentionScope" and scope["widgets_values"][0] is enabled
        samplers.append(sampler)
    off, on = samplers
    assert off["id"] != on["id"] and off["widgets_values"] == on["widgets_values"]
    assert off["widgets_values"][1] == "fixed", "a randomized seed would differ between the two runs"
    for name in ("positive", "negative", "latent_image"):  # the same prompt and size
        assert _source(workflow, off, name)["id"] == _source(workflow, on, name)["id"]
    loader = _source(workflow, _source(workflow, off, "model"), "model")
    assert loader["id"] == _source(workflow, _source(workflow, on, "model"), "model")["id"]  # one model
    assert loader["type"] == "UNETLoader" and loader["widgets_values"][0] == "flux1-dev.safetensors"
    [status] = _nodes(workflow, "SageAttentionStatus")
    assert _source(workflow, status, "after")["id"] == compare["id"]


def test_the_sdxl_template_says_what_was_measured_and_how_to_check():
    """SDXL is where the Scope was measured slower (docs/measured.md): its template says so, and how to check
    on one's own GPU."""
    description = _meta(_load(EXAMPLES / "SDXL text to image.json"))["description"]
    assert "slower" in description and "step_slower" in description and "enabled off" in description


def test_the_sparse_compare_samples_both_wan22_experts_dense_then_sparse_with_one_seed():
    """Two runs of the Wan 2.2 A14B template's graph: the same experts, prompt, latent and sampler settings;
    in one both Scopes are dense (the defaults), in the other both ask for sol-attn, and nothing else differs."""
    from sage_attention_scope.patches.settings import SPARSE_OFF, SPARSE_SOL
    workflow = _load(EXAMPLES / f"{SPARSE_COMPARE}.json")
    names = [name for name, _ in _scope_inputs()]
    [compare] = _nodes(workflow, "SageAttentionCompare")
    assert compare["widgets_values"] == ["dense attention", "sparse attention (sol-attn)"]
    runs = []
    for side, sparse in (("image_a", SPARSE_OFF), ("image_b", SPARSE_SOL)):
        decode = _source(workflow, compare, side)
        assert decode["type"] == "VAEDecode"
        low = _source(workflow, decode, "samples")
        high = _source(workflow, low, "latent_image")
        assert low["type"] == high["type"] == "KSamplerAdvanced"
        assert _source(workflow, high, "latent_image")["type"] == "EmptyHunyuanLatentVideo"
        assert (high["widgets_values"][7], high["widgets_values"][8]) == (0, low["widgets_values"][7])
        for sampler in (high, low):
            scope = _source(workflow, sampler, "model")
            assert scope["type"] == "SageAttentionScope"
            values = dict(zip(names, scope["widgets_values"]))
            assert values["enabled"] is True and values["sparse"] == sparse
            assert {k: v for k, v in values.items() if k != "sparse"} == {
                k: v for k, v in zip(names, GEN.SCOPE_WIDGETS) if k != "sparse"}
        runs.append((high, low))
    (dense_high, dense_low), (sparse_high, sparse_low) = runs
    for dense, sparse in ((dense_high, sparse_high), (dense_low, sparse_low)):
        assert dense["id"] != sparse["id"] and dense["widgets_values"] == sparse["widgets_values"]
        for name in ("positive", "negative"):  # the same prompt
            assert _source(workflow, dense, name)["id"] == _source(workflow, sparse, name)["id"]
        # the same expert, through its own Scope in each run
        assert _source(workflow, _source(workflow, dense, "model"), "model")["id"] == \
            _source(workflow, _source(workflow, sparse, "model"), "model")["id"]
    assert dense_high["widgets_values"][2] == "fixed", "a randomized seed would differ between the two runs"
    assert _source(workflow, dense_high, "latent_image")["id"] == _source(workflow, sparse_high, "latent_image")["id"]
    loaders = [n["widgets_values"][0] for n in _nodes(workflow, "UNETLoader")]
    assert sorted(loaders) == ["wan2.2_t2v_high_noise_14B_fp8_scaled.safetensors",
                               "wan2.2_t2v_low_noise_14B_fp8_scaled.safetensors"]
    assert len(_nodes(workflow, "SaveVideo")) == 2
    [status] = _nodes(workflow, "SageAttentionStatus")
    assert _source(workflow, status, "after")["id"] == compare["id"]


def test_wan22_scopes_each_expert_and_samples_high_noise_first():
    [path] = [p for p in WORKFLOWS if p.stem.startswith("Wan 2.2")]
    workflow = _load(path)
    samplers = _nodes(workflow, "KSamplerAdvanced")
    assert len(samplers) == 2
    by_start = sorted(samplers, key=lambda s: s["widgets_values"][7])  # start_at_step
    high, low = by_start
    assert (high["widgets_values"][7], high["widgets_values"][8]) == (0, low["widgets_values"][7])
    assert high["widgets_values"][0] == "enable" and low["widgets_values"][0] == "disable"
    assert _source(workflow, low, "latent_image")["id"] == high["id"]
    experts = []
    for sampler in (high, low):
        scope = _source(workflow, sampler, "model")
        assert scope["type"] == "SageAttentionScope"
        [loader] = [n for n in workflow["nodes"] if n["id"] in _upstream(workflow, scope) and n["type"] == "UNETLoader"]
        experts.append(loader["widgets_values"][0])
    assert "high_noise" in experts[0] and "low_noise" in experts[1]


def test_wan21_i2v_conditions_on_the_start_image_and_its_clip_vision():
    [path] = [p for p in WORKFLOWS if p.stem.startswith("Wan 2.1")]
    workflow = _load(path)
    [to_video] = _nodes(workflow, "WanImageToVideo")
    image = _source(workflow, to_video, "start_image")
    assert image["type"] == "LoadImage"
    seen = _source(workflow, to_video, "clip_vision_output")
    assert seen["type"] == "CLIPVisionEncode" and _source(workflow, seen, "image")["id"] == image["id"]
    [sampler] = _nodes(workflow, "KSampler")
    assert _source(workflow, sampler, "latent_image")["id"] == to_video["id"]
    assert _source(workflow, sampler, "model")["type"] == "SageAttentionScope"


def test_kandinsky5_samples_the_latent_and_conditioning_its_image_to_video_node_makes():
    [path] = [p for p in WORKFLOWS if p.stem.startswith("Kandinsky 5")]
    workflow = _load(path)
    [to_video] = _nodes(workflow, "Kandinsky5ImageToVideo")
    [sampler] = _nodes(workflow, "KSampler")
    for name, slot in (("positive", 0), ("negative", 1), ("latent_image", 2)):
        [socket] = [s for s in sampler["inputs"] if s["name"] == name]
        [link] = [link for link in workflow["links"] if link[0] == socket["link"]]
        assert (link[1], link[2]) == (to_video["id"], slot), name
    assert _source(workflow, to_video, "vae")["widgets_values"] == ["hunyuan_video_vae_bf16.safetensors"]
    shift = _source(workflow, _source(workflow, sampler, "model"), "model")
    assert shift["type"] == "ModelSamplingSD3" and shift["widgets_values"] == [5.0]


def test_ltx23_scopes_the_model_after_the_distilled_lora_and_samples_eight_manual_steps():
    [path] = [p for p in WORKFLOWS if p.stem.startswith("LTX-2.3")]
    workflow = _load(path)
    [guider] = _nodes(workflow, "CFGGuider")
    scope = _source(workflow, guider, "model")
    lora = _source(workflow, scope, "model")
    assert lora["type"] == "LoraLoaderModelOnly" and lora["widgets_values"][1] == 0.5 and "distilled" in lora[
        "widgets_values"][0]
    assert _source(workflow, lora, "model")["widgets_values"] == ["ltx-2.3-22b-dev-fp8.safetensors"]
    assert guider["widgets_values"] == [1.0]  # the distilled LoRA samples without guidance
    [sample] = _nodes(workflow, "SamplerCustomAdvanced")
    sigmas = _source(workflow, sample, "sigmas")
    assert sigmas["type"] == "ManualSigmas" and len(sigmas["widgets_values"][0].split(",")) == 8 + 1


@pytest.mark.parametrize("path", WORKFLOWS, **ids)
def test_the_scoped_model_reaches_every_sampler(path):
    """No sampler samples an unscoped model: each KSampler/guider's model comes from a Scope."""
    workflow = _load(path)
    for node in workflow["nodes"]:
        if node["type"] in {"KSampler", "KSamplerAdvanced", "CFGGuider", "BasicGuider"}:
            assert _source(workflow, node, "model")["type"] == "SageAttentionScope", node["type"]

