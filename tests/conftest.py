"""Boots a real ComfyUI for the suite and imports the pack as a package.

ComfyUI comes from $COMFYUI_PATH, else from .comfyui/ComfyUI (scripts/setup-env.sh puts
ComfyUI 0.3.75 there). Its top-level modules (nodes, server, utils, ...) go first on sys.path;
the pack is imported as the package ``sage_attention_scope`` from the repo root, exactly as
ComfyUI imports a custom-node folder, so its own nodes/ never shadows ComfyUI's nodes.py.
"""
from __future__ import annotations

import importlib.util
import logging
import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACK_NAME = "sage_attention_scope"


def _comfyui_path() -> Path:
    path = Path(os.environ.get("COMFYUI_PATH") or ROOT / ".comfyui" / "ComfyUI").resolve()
    if not (path / "comfy" / "model_patcher.py").is_file():
        raise pytest.UsageError(
            f"No ComfyUI tree at {path}. Run scripts/setup-env.sh (fetches ComfyUI 0.3.75), "
            f"or set COMFYUI_PATH to a ComfyUI checkout.")
    return path


def _boot_comfyui(path: Path) -> None:
    sys.path.insert(0, str(path))
    import torch

    import comfy.options
    comfy.options.enable_args_parsing(False)
    import comfy.cli_args
    # CPU unless a CUDA device is here (the GPU tests run the same suite on the H200).
    comfy.cli_args.args.cpu = not torch.cuda.is_available() or os.environ.get("SAS_TEST_CPU") == "1"
    import comfy.model_management  # noqa: F401 - reads args.cpu now


def _import_pack() -> None:
    spec = importlib.util.spec_from_file_location(PACK_NAME, ROOT / "__init__.py",
                                                  submodule_search_locations=[str(ROOT)])
    module = importlib.util.module_from_spec(spec)
    sys.modules[PACK_NAME] = module
    spec.loader.exec_module(module)


COMFYUI_PATH = _comfyui_path()
_boot_comfyui(COMFYUI_PATH)
_import_pack()


def pytest_report_header(config):
    import torch

    import comfyui_version
    return [f"ComfyUI {comfyui_version.__version__} at {COMFYUI_PATH}",
            f"torch {torch.__version__}, CUDA available: {torch.cuda.is_available()}"]


@pytest.fixture(autouse=True)
def fresh_session():
    """Every test starts with empty counters, checks and kernel choices."""
    from sage_attention_scope.patches import kernels, stats
    stats.reset_session()
    kernels.reset_caches()
    yield
    stats.reset_session()
    kernels.reset_caches()


@pytest.fixture
def caplog_sas(caplog):
    caplog.set_level(logging.DEBUG, logger=PACK_NAME)
    return caplog
