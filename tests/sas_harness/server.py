"""A real ComfyUI server with the pack in custom_nodes/, for the server and browser tests."""
from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import torch

import comfy.supported_models

from .host import ROOT, comfyui_path
from .models import TINY_LTXV, build

TESTS = ROOT / "tests"
STARTUP_S = 180

WORKFLOWS = sorted((ROOT / "example_workflows").glob("*.json"))
TINY_MODEL = "sas_tiny_ltxv.safetensors"


def example_model_files() -> dict[str, list[str]]:
    """Placeholder files for every model the example workflows name, so the loaders list them."""
    files: dict[str, list[str]] = {}
    for path in WORKFLOWS:
        for node in json.loads(path.read_text())["nodes"]:
            for model in node.get("properties", {}).get("models", []):
                files.setdefault(model["directory"], []).append(model["name"])
    return files


def example_input_images() -> list[str]:
    """The images the example workflows' LoadImage nodes name (the user's own start image)."""
    return sorted({node["widgets_values"][0] for path in WORKFLOWS for node in json.loads(path.read_text())["nodes"]
                   if node["type"] == "LoadImage"})


# -- what the front end makes of a saved node ----------------------------------------------------
#
# A node's saved ``widgets_values`` are a list, matched to the node's widgets by position when the
# front end loads the workflow; the prompt it queues then names each value by its widget. The model
# below is that matching, driven by the running server's /object_info, as front ends 1.32.9
# (ComfyUI 0.3.75) and 1.49.6 (0.33) do it (tests/test_browser.py compares it with the front end's
# own graphToPrompt for every example):
# * a widget per input of a widget type, in input_order (required, then optional, hidden ones too);
#   an input of several types ("FLOAT,INT") is a widget of its ``widgetType``; a seed with
#   control_after_generate is followed by that control's widget, an image upload by its button's;
#   neither is sent to the server;
# * a DynamicCombo (COMFY_DYNAMICCOMBO_V3) is a combo whose chosen option's inputs follow it as
#   widgets named "<combo>.<input>", replaced whenever the combo's value is set;
# * the saved values are set one after another on the widgets as they stand at that moment, so a
#   DynamicCombo's inputs take the values that follow it; widgets left without a value keep their
#   default, values left without a widget are dropped.
# 0.33's SaveVideo saved as 0.3.75 defines it, [prefix, format, codec], thus loads as format=format,
# format.codec=codec, and its hidden top-level codec at its default; CreateVideo's [fps] gets
# bit_depth's default. A value the front end would drop, or a required input left without one, is a
# problem in a template (it was saved for another node); an optional input left at its default is
# how ComfyUI adds inputs that old workflows lack.

WIDGET_TYPES = {"INT", "FLOAT", "STRING", "BOOLEAN", "COMBO"}
DYNAMIC_COMBO = "COMFY_DYNAMICCOMBO_V3"
CONTROL_VALUES = {"fixed", "increment", "decrement", "randomize"}
FRONTEND_ONLY = {"MarkdownNote", "Note"}  # notes the front end draws and never sends to the server
FRONTEND_WIDGETS = {"control", "upload"}  # widgets whose values stay in the workflow, never in the prompt


@dataclasses.dataclass
class Widget:
    name: str
    kind: str              # INT, FLOAT, STRING, BOOLEAN, COMBO, DYNAMIC_COMBO, or control / upload
    opts: dict
    options: list | None   # a combo's choices
    required: bool         # a required input of the node itself (not optional, not under a DynamicCombo)
    value: object = None
    saved: bool = False    # took a saved value, else it holds its default


def ordered_inputs(spec: dict, order: dict | None = None):
    """(name, type, options, required) of each input, in the order the front end makes widgets."""
    order = order or spec.get("input_order") or {k: list(v) for k, v in spec.get("input", spec).items()}
    inputs = spec.get("input", spec)
    for section in ("required", "optional"):
        for name in order.get(section, []):
            type_, *rest = inputs[section][name]
            yield name, type_, (rest[0] if rest else {}), section == "required"


def _widget_kind(type_, opts: dict) -> str | None:
    if isinstance(type_, list):
        return "COMBO"
    if type_ == DYNAMIC_COMBO:
        return DYNAMIC_COMBO
    if opts.get("forceInput"):
        return None
    if type_ in WIDGET_TYPES:
        return type_
    if "," in type_ and opts.get("widgetType") in WIDGET_TYPES:  # io.MultiType: the widget of its first type
        return opts["widgetType"]
    return None


def _default(kind: str, opts: dict, options: list | None):
    if "default" in opts:
        return opts["default"]
    if options:
        return options[0]
    return {"INT": 0, "FLOAT": 0.0, "STRING": "", "BOOLEAN": False}.get(kind)


def _make_widgets(inputs, prefix: str = "", top: bool = True) -> list[Widget]:
    widgets = []
    for name, type_, opts, required in inputs:
        kind = _widget_kind(type_, opts)
        if kind is None:
            continue
        options = None
        if kind == DYNAMIC_COMBO:
            options = [option["key"] for option in opts.get("options", [])]
        elif kind == "COMBO":
            options = type_ if isinstance(type_, list) else opts.get("options", [])
        widget = Widget(prefix + name, kind, opts, options, required and top)
        widget.value = _default(kind, opts, options)
        widgets.append(widget)
        if kind == DYNAMIC_COMBO:
            widgets += _option_widgets(widget)
        if opts.get("control_after_generate"):
            widgets.append(Widget("control_after_generate", "control", {}, sorted(CONTROL_VALUES), False, "fixed"))
        if opts.get("image_upload"):
            widgets.append(Widget("upload", "upload", {}, None, False, "image"))
    return widgets


def _option_widgets(combo: Widget) -> list[Widget]:
    """The widgets of a DynamicCombo's chosen option, at their defaults."""
    for option in combo.opts.get("options", []):
        if option["key"] == combo.value:
            sub = option.get("inputs", {})
            order = {section: list(sub.get(section, {})) for section in ("required", "optional")}
            return _make_widgets(ordered_inputs(sub, order), prefix=combo.name + ".", top=False)
    return []


def load_widgets(node: dict, spec: dict) -> tuple[list[Widget], list[str]]:
    """The node's widgets as the front end loads ``node``'s saved values into them, and what is wrong."""
    widgets = _make_widgets(ordered_inputs(spec))
    values = list(node.get("widgets_values") or [])
    problems = []
    for index, value in enumerate(values):
        if index >= len(widgets):
            problems.append(f"{len(values) - index} widget values left over: {values[index:]}")
            break
        widget = widgets[index]
        widget.value, widget.saved = value, True
        if widget.kind == DYNAMIC_COMBO:  # its option's widgets replace the previous option's
            end = index + 1
            while end < len(widgets) and widgets[end].name.startswith(widget.name + "."):
                end += 1
            widgets[index + 1:end] = _option_widgets(widget)
        problems += _value_problems(widget)
    for widget in widgets:
        if not widget.saved and widget.required:
            problems.append(f"no value for widget {widget.name}")
    return widgets, problems


def _value_problems(widget: Widget) -> list[str]:
    name, value, opts = widget.name, widget.value, widget.opts
    if widget.kind == "control":
        return [] if value in CONTROL_VALUES else [f"control_after_generate value {value!r}"]
    if widget.kind == "upload":
        return []
    if widget.kind in ("COMBO", DYNAMIC_COMBO):
        return [] if value in widget.options else [f"{name}={value!r} not among {widget.options[:8]}"]
    if widget.kind == "BOOLEAN":
        return [] if isinstance(value, bool) else [f"{name}={value!r} is not a boolean"]
    if widget.kind == "STRING":
        return [] if isinstance(value, str) else [f"{name}={value!r} is not a string"]
    if not isinstance(value, (int, float)) or isinstance(value, bool) or (widget.kind == "INT" and value != int(value)):
        return [f"{name}={value!r} is not {widget.kind}"]
    if not opts.get("min", -float("inf")) <= value <= opts.get("max", float("inf")):
        return [f"{name}={value!r} outside [{opts.get('min')}, {opts.get('max')}]"]
    return []


def api_prompt(workflow: dict, info: dict) -> tuple[dict, dict[str, list[str]]]:
    """The prompt the front end queues for ``workflow`` (API format), and each node's problems."""
    prompt, problems = {}, {}
    sources = {link[0]: link for link in workflow["links"]}
    for node in workflow["nodes"]:
        if node["type"] in FRONTEND_ONLY:
            continue
        label = f"{node['type']} #{node['id']}"
        if node.get("mode", 0) != 0:
            problems[label] = [f"mode {node['mode']} (muted or bypassed) is not modelled"]
            continue
        widgets, found = load_widgets(node, info[node["type"]])
        inputs = {w.name: w.value for w in widgets if w.kind not in FRONTEND_WIDGETS}
        for slot in node.get("inputs", []):
            if slot.get("link") is not None:
                _, src, src_slot, _, _, _ = sources[slot["link"]]
                inputs[slot["name"]] = [str(src), src_slot]
        prompt[str(node["id"])] = {"class_type": node["type"], "inputs": inputs}
        if found:
            problems[label] = found
    return prompt, problems


def lacking(workflow: dict, info: dict) -> list[str]:
    """What of ``workflow`` this server lacks: node types, and combo values its nodes do not offer."""
    missing = sorted({n["type"] for n in workflow["nodes"] if n["type"] not in FRONTEND_ONLY and n["type"] not in info})
    values = []
    for node in workflow["nodes"]:
        if node["type"] in info:
            widgets, _ = load_widgets(node, info[node["type"]])
            values += [f"{node['type']} {w.name} {w.value!r}" for w in widgets
                       if w.kind in ("COMBO", DYNAMIC_COMBO) and w.saved and w.value not in w.options]
    return missing + values


def placeholder_failure(entry: dict, workflow: dict, model_names: set[str]) -> str | None:
    """None if a queued example ``workflow`` ran until a loader read one of its placeholder model
    files (empty here: no weights exist where the tests run), else what happened instead."""
    status = entry.get("status", {})
    errors = [data for kind, data in status.get("messages", []) if kind == "execution_error"]
    if status.get("status_str") != "error" or len(errors) != 1:
        return f"expected one execution error, got {status}"
    [error] = errors
    [node] = [n for n in workflow["nodes"] if str(n["id"]) == str(error["node_id"])]
    read = [w for w in node["widgets_values"] if isinstance(w, str) and w in model_names]
    if node["type"] != error["node_type"] or not read:
        return (f"{error['node_type']} #{error['node_id']} failed, not a loader of a placeholder model: "
                f"{error['exception_type']}: {error['exception_message'][:500]}")
    return None


def write_tiny_ltxv(path):
    """A random-weight LTX-Video diffusion model as ComfyUI's loader detects it: the weights
    and, as LTXV checkpoints carry it, the transformer config in the safetensors metadata."""
    from safetensors.torch import save_file
    model = build(comfy.supported_models.LTXV, TINY_LTXV, device=torch.device("cpu"))
    weights = {k: v.contiguous() for k, v in model.model.diffusion_model.state_dict().items()}
    config = {k: v for k, v in TINY_LTXV.items() if k != "image_model"}
    save_file(weights, str(path), metadata={"config": json.dumps({"transformer": config})})


def tiny_prompt(kernel="reference_double", routing="always", seed=0, steps=1, **scope) -> dict:
    """Euler steps of the tiny LTX-Video through the Scope (``scope``: more of its inputs) and into a
    Status node."""
    prompt = {
        "1": {"class_type": "UNETLoader", "inputs": {"unet_name": TINY_MODEL, "weight_dtype": "default"}},
        "2": {"class_type": "SageAttentionScope",
              "inputs": {"model": ["1", 0], "enabled": True, "kernel": kernel, "min_seq_len": 1,
                         "first_call_check": True, "smooth_k": False, "routing": routing, "start_percent": 0.0,
                         "end_percent": 1.0, "first_blocks": -1, "last_blocks": -1}},
        "3": {"class_type": "SASTestConditioning", "inputs": {"tokens": 5, "dim": TINY_LTXV["caption_channels"],
                                                            "seed": 0}},
        "4": {"class_type": "EmptyLTXVLatentVideo", "inputs": {"width": 64, "height": 64, "length": 9,
                                                             "batch_size": 1}},
        "5": {"class_type": "KSampler",
              "inputs": {"model": ["2", 0], "seed": seed, "steps": steps, "cfg": 1.0, "sampler_name": "euler",
                         "scheduler": "simple", "positive": ["3", 0], "negative": ["3", 0],
                         "latent_image": ["4", 0], "denoise": 1.0}},
        "6": {"class_type": "SageAttentionStatus", "inputs": {"after": ["5", 0], "reset_counters": False}},
    }
    prompt["2"]["inputs"].update(scope)
    return prompt


def chained_scopes_prompt(seed=0) -> dict:
    """tiny_prompt with a second Scope (node 7, on) between the first (off) and the sampler."""
    prompt = tiny_prompt(seed=seed)
    prompt["7"] = {"class_type": "SageAttentionScope", "inputs": {**prompt["2"]["inputs"], "model": ["2", 0]}}
    prompt["2"]["inputs"]["enabled"] = False
    prompt["5"]["inputs"]["model"] = ["7", 0]
    return prompt


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    def __init__(self, base: Path, port: int, process: subprocess.Popen, log: Path):
        self.base, self.port, self.process, self.log = base, port, process, log
        self.url = f"http://127.0.0.1:{port}"

    def get(self, path: str):
        with urllib.request.urlopen(self.url + path, timeout=60) as r:
            return json.loads(r.read())

    def post(self, path: str, payload: dict):
        request = urllib.request.Request(self.url + path, data=json.dumps(payload).encode(),
                                         headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=60) as r:
                body = r.read()
                return json.loads(body) if body.strip() else None
        except urllib.error.HTTPError as exc:
            raise AssertionError(f"POST {path} -> {exc.code}: {exc.read().decode()[:2000]}") from None

    def post_raw(self, path: str, payload) -> tuple[int, object]:
        """(HTTP status, body: its JSON, or its text where it is not JSON), error statuses included."""
        request = urllib.request.Request(self.url + path, data=json.dumps(payload).encode(),
                                         headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=60) as r:
                status, body = r.status, r.read()
        except urllib.error.HTTPError as exc:
            status, body = exc.code, exc.read()
        try:
            return status, json.loads(body or b"null")
        except ValueError:
            return status, body.decode(errors="replace")

    def run_prompt(self, prompt: dict, timeout_s: float = 120) -> dict:
        """Queues an API-format prompt and returns its /history entry once it is done."""
        return self.wait_for(self.post("/prompt", {"prompt": prompt})["prompt_id"], timeout_s)

    def wait_for(self, prompt_id: str, timeout_s: float = 120) -> dict:
        """The /history entry of a queued prompt, once it is done."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            entry = self.get(f"/history/{prompt_id}").get(prompt_id)
            if entry:  # ComfyUI writes the history entry when the prompt has finished
                return entry
            time.sleep(0.5)
        raise AssertionError(f"prompt {prompt_id} did not finish in {timeout_s} s; log: {self.tail()}")

    def tail(self, n: int = 4000) -> str:
        return self.log.read_text(errors="replace")[-n:]

    def log_size(self) -> int:
        """Where the server's log (stdout and stderr) ends now: log_since(log_size()) is what follows."""
        return self.log.stat().st_size

    def log_since(self, offset: int) -> str:
        with open(self.log, "rb") as f:
            f.seek(offset)
            return f.read().decode(errors="replace")


def _write_input_images(folder: Path, names: list[str]) -> None:
    """Small real pictures under the names the examples' LoadImage nodes carry: LoadImage checks that
    its file opens when a prompt is queued."""
    from PIL import Image
    folder.mkdir(parents=True, exist_ok=True)
    for name in names:
        Image.new("RGB", (64, 64), (90, 120, 150)).save(folder / name)


@contextlib.contextmanager
def comfyui_server(base: Path, model_files: dict[str, list[str]]):
    """Starts ``main.py --cpu`` with ``base`` as its base directory; stops only that process.
    ``model_files``: models/<folder> -> empty placeholder files, so loaders list those names."""
    nodes = base / "custom_nodes"
    nodes.mkdir(parents=True)
    (nodes / "sage_attention_scope").symlink_to(ROOT, target_is_directory=True)
    (nodes / "sas_test_nodes.py").symlink_to(TESTS / "server_nodes" / "sas_test_nodes.py")
    for folder, names in model_files.items():
        (base / "models" / folder).mkdir(parents=True, exist_ok=True)
        for name in names:
            (base / "models" / folder / name).touch()
    _write_input_images(base / "input", example_input_images())
    port = free_port()
    log = base / "server.log"
    env = dict(os.environ, PYTHONUNBUFFERED="1",  # the test node imports the harness
               PYTHONPATH=os.pathsep.join(filter(None, [str(TESTS), os.environ.get("PYTHONPATH")])))
    with open(log, "w") as out:
        process = subprocess.Popen(
            [sys.executable, "main.py", "--cpu", "--listen", "127.0.0.1", "--port", str(port),
             "--base-directory", str(base), "--database-url", "sqlite:///:memory:", "--disable-auto-launch"],
            cwd=comfyui_path(), stdout=out, stderr=subprocess.STDOUT, env=env)
    server = Server(base, port, process, log)
    try:
        deadline = time.monotonic() + STARTUP_S
        while True:
            if process.poll() is not None:
                raise AssertionError(f"ComfyUI exited with {process.returncode}: {server.tail()}")
            try:
                server.get("/system_stats")
                break
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                if time.monotonic() > deadline:
                    raise AssertionError(f"ComfyUI did not answer in {STARTUP_S} s: {server.tail()}") from None
                time.sleep(0.5)
        server.post("/sas_test/register_kernel", {})
        yield server
    finally:
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def write_tiny_wan(path, seed: int = 0):
    """A random-weight Wan 2.1/2.2 T2V diffusion model (``WAN21_T2V``, drawn from ``seed``) as
    ComfyUI's UNETLoader detects it: the diffusion model's state dict, whose ``head.modulation``
    says Wan and whose shapes give its config (model_detection). The family tests' TINY_WAN, with
    the text width detection assumes (it reads none from the weights: WanModel's 4096, UMT5-XXL).
    Wan 2.2 A14B's high- and low-noise experts are two such files of different seeds."""
    from safetensors.torch import save_file

    import comfy.model_detection
    from . import families  # noqa: F401 - imports cases_video after what it builds on
    from .cases_video import TINY_WAN
    config = dict(TINY_WAN, text_dim=4096)  # WanModel's default, which model_detection leaves in place
    model = build(comfy.supported_models.WAN21_T2V, config, seed=seed, device=torch.device("cpu"))
    weights = {k: v.contiguous() for k, v in model.model.diffusion_model.state_dict().items()}
    detected = comfy.model_detection.model_config_from_unet(weights, "")
    if type(detected) is not comfy.supported_models.WAN21_T2V or any(
            detected.unet_config.get(k, v) != v for k, v in config.items() if k != "text_dim"):
        raise AssertionError(f"ComfyUI detects {type(detected).__name__} {getattr(detected, 'unet_config', None)} "
                             f"in the tiny Wan weights, not WAN21_T2V {config}")
    save_file(weights, str(path))
