"""Boots a real ComfyUI for the suite (sas_host) and resets the engine between tests."""
from __future__ import annotations

import logging

import pytest

import sas_host
from sas_host import PACK_NAME, ROOT  # noqa: F401 - ROOT is used by tests


try:
    COMFYUI_PATH = sas_host.comfyui_path()
except sas_host.NoComfyUI as exc:
    raise pytest.UsageError(str(exc)) from None
sas_host.boot_comfyui(COMFYUI_PATH)
sas_host.import_pack()


def pytest_report_header(config):
    import torch

    return [f"ComfyUI {sas_host.comfyui_version()} at {COMFYUI_PATH}",
            f"torch {torch.__version__}, CUDA available: {torch.cuda.is_available()}"]


@pytest.fixture(autouse=True)
def fresh_session():
    """Every test starts with empty counters, checks, routing decisions and kernel choices.
    Measured routing gets a fake clock on which SageAttention is the faster arm, so a test
    routes by its settings alone; tests of the routing itself bring their own clock."""
    from sage_attention_scope.patches import kernels, stats, timing
    from sas_doubles import FakeClock, clock
    stats.reset_session()
    kernels.reset_caches()
    previous_store = timing.use_store(None)  # tests never write ComfyUI's user directory
    with clock(FakeClock(sage_ms=1.0, sdpa_ms=2.0)):
        yield
    timing.use_store(previous_store)
    stats.reset_session()
    kernels.reset_caches()


@pytest.fixture
def caplog_sas(caplog):
    caplog.set_level(logging.DEBUG, logger=PACK_NAME)
    return caplog


@pytest.fixture(scope="session")
def server(tmp_path_factory):
    """One real ComfyUI server (main.py --cpu) for the server and browser tests, with the pack
    and the tests' helper node in custom_nodes/, placeholders for the example workflows' model
    files, and a tiny LTX-Video model file."""
    import importlib.util
    if not sas_host.has_top_level_nodes(COMFYUI_PATH):
        pytest.skip("this ComfyUI has no top-level main.py/nodes.py (a pip-installable layout); "
                    "the server tests start a standard tree")
    for module, package in (("aiohttp", "aiohttp"), ("comfyui_frontend_package", "comfyui-frontend-package")):
        if importlib.util.find_spec(module) is None:
            pytest.skip(f"the ComfyUI server needs {package}, which is not installed here")
    import sas_server
    base = tmp_path_factory.mktemp("comfyui")
    with sas_server.comfyui_server(base, sas_server.example_model_files()) as running:
        sas_server.write_tiny_ltxv(base / "models" / "diffusion_models" / sas_server.TINY_MODEL)
        yield running
