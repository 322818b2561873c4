"""Boots a real ComfyUI for the suite (sas_harness) and gives every test a session of its own."""
from __future__ import annotations

import logging

import pytest

import sas_harness
from sas_harness import host

try:
    COMFYUI_PATH = sas_harness.boot()
except sas_harness.NoComfyUI as exc:
    raise pytest.UsageError(str(exc)) from None


def pytest_report_header(config):
    import torch

    return [f"ComfyUI {host.comfyui_version()} at {COMFYUI_PATH}",
            f"torch {torch.__version__}, CUDA available: {torch.cuda.is_available()}"]


@pytest.fixture
def fake_clock():
    """Measured routing's clock in the tests: the kernel is the faster arm, so a test routes by its
    settings alone; tests of the routing itself bring their own clock."""
    from sas_harness.doubles import FakeClock
    return FakeClock(kernel_ms=1.0, comfy_ms=2.0)


@pytest.fixture(autouse=True)
def session(monkeypatch, fake_clock):
    """A fresh session for each test, which the pack's nodes use too; it never writes ComfyUI's
    user directory."""
    from sage_attention_scope import nodes
    from sage_attention_scope.patches import Session
    fresh = Session(store=None, clock=fake_clock)
    monkeypatch.setattr(nodes, "SESSION", fresh)
    return fresh


@pytest.fixture
def caplog_sas(caplog):
    caplog.set_level(logging.DEBUG, logger=host.PACK_NAME)
    return caplog


@pytest.fixture(scope="session")
def server(tmp_path_factory):
    """One real ComfyUI server (main.py --cpu) for the server and browser tests, with the pack
    and the tests' helper node in custom_nodes/, placeholders for the example workflows' model
    files, and a tiny LTX-Video model file."""
    import importlib.util
    if not host.has_top_level_nodes(COMFYUI_PATH):
        pytest.skip("this ComfyUI has no top-level main.py/nodes.py (a pip-installable layout); "
                    "the server tests start a standard tree")
    for module, package in (("aiohttp", "aiohttp"), ("comfyui_frontend_package", "comfyui-frontend-package")):
        if importlib.util.find_spec(module) is None:
            pytest.skip(f"the ComfyUI server needs {package}, which is not installed here")
    from sas_harness import server as sas_server
    base = tmp_path_factory.mktemp("comfyui")
    with sas_server.comfyui_server(base, sas_server.example_model_files()) as running:
        sas_server.write_tiny_ltxv(base / "models" / "diffusion_models" / sas_server.TINY_MODEL)
        yield running
