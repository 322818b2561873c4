"""A real ComfyUI server with the pack in custom_nodes/, for the server and browser tests."""
from __future__ import annotations

import contextlib
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

    def post_raw(self, path: str, payload: dict) -> tuple[int, dict]:
        """(HTTP status, JSON body), error statuses included."""
        request = urllib.request.Request(self.url + path, data=json.dumps(payload).encode(),
                                         headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=60) as r:
                return r.status, json.loads(r.read() or b"null")
        except urllib.error.HTTPError as exc:
            return exc.code, json.loads(exc.read() or b"null")

    def run_prompt(self, prompt: dict, timeout_s: float = 120) -> dict:
        """Queues an API-format prompt and returns its /history entry once it is done."""
        prompt_id = self.post("/prompt", {"prompt": prompt})["prompt_id"]
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            entry = self.get(f"/history/{prompt_id}").get(prompt_id)
            if entry:  # ComfyUI writes the history entry when the prompt has finished
                return entry
            time.sleep(0.5)
        raise AssertionError(f"prompt {prompt_id} did not finish in {timeout_s} s; log: {self.tail()}")

    def tail(self, n: int = 4000) -> str:
        return self.log.read_text(errors="replace")[-n:]


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
