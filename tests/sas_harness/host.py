"""A real ComfyUI in this process, and the pack imported as a package.

ComfyUI comes from $COMFYUI_PATH, else from .comfyui/ComfyUI (scripts/setup-env.sh puts
ComfyUI 0.3.75 there). Its top-level modules (nodes, server, utils, ...) go first on sys.path;
the pack is imported as the package ``sage_attention_scope`` from the repo root, the way
ComfyUI imports a custom-node folder, so the pack's nodes/ never shadows ComfyUI's nodes.py.
"""
from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACK_NAME = "sage_attention_scope"


class NoComfyUI(RuntimeError):
    pass


def comfyui_path() -> Path:
    path = Path(os.environ.get("COMFYUI_PATH") or ROOT / ".comfyui" / "ComfyUI").resolve()
    if not (path / "comfy" / "model_patcher.py").is_file():
        raise NoComfyUI(f"No ComfyUI tree at {path}. Run scripts/setup-env.sh (fetches ComfyUI 0.3.75), "
                        f"or set COMFYUI_PATH to a ComfyUI checkout.")
    return path


def boot_comfyui(path: Path) -> None:
    if str(path) not in sys.path:
        sys.path.insert(0, str(path))
    import torch

    import comfy.options
    comfy.options.enable_args_parsing(False)
    import comfy.cli_args
    # CPU unless a CUDA device is here (the GPU tests run the same suite on the H200).
    comfy.cli_args.args.cpu = not torch.cuda.is_available() or os.environ.get("SAS_TEST_CPU") == "1"
    import comfy.model_management  # noqa: F401 - reads args.cpu now


def comfyui_version() -> str:
    """ComfyUI's version: comfyui_version.py in a standard tree, comfy.__version__ in the
    pip-installable layout (hiddenswitch's), which has neither nodes.py nor comfyui_version.py."""
    try:
        import comfyui_version as module
    except ImportError:
        import comfy as module
    return getattr(module, "__version__", "unknown")


def has_top_level_nodes(path: Path) -> bool:
    """Whether this tree is the standard layout with ComfyUI's nodes.py (custom-node loader)."""
    return (path / "nodes.py").is_file()


def boot() -> Path:
    """ComfyUI booted and the pack imported (once); the ComfyUI tree's path."""
    path = comfyui_path()
    boot_comfyui(path)
    import_pack()
    return path


def pack_root() -> Path:
    """The pack tree to import: this checkout, or $SAS_PACK_ROOT (an earlier commit's tree that a
    benchmark's --compare runs in a process of its own)."""
    return Path(os.environ.get("SAS_PACK_ROOT") or ROOT).resolve()


def import_pack():
    if PACK_NAME in sys.modules:
        return sys.modules[PACK_NAME]
    root = pack_root()
    spec = importlib.util.spec_from_file_location(PACK_NAME, root / "__init__.py",
                                                  submodule_search_locations=[str(root)])
    module = importlib.util.module_from_spec(spec)
    sys.modules[PACK_NAME] = module
    spec.loader.exec_module(module)
    return module
