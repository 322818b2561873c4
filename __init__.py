"""Sage Attention Scope: SageAttention for diffusion-model sampling in ComfyUI, safely.

ComfyUI loads this folder as a package. Loading never fails for want of sageattention, Triton or
CUDA. Where a CUDA GPU is present, building the node list (ComfyUI does it at start) imports the kernel
libraries to offer the kernels that bind on it (nodes/scope.py, kernel_choices); a library missing or
broken there is said in Status, never raised.
"""
import logging

WEB_DIRECTORY = "./web/js"

try:
    from comfy_api.latest import io as _v3_io  # noqa: F401 - presence check for the V3 node API
except ImportError:
    _v3_io = None

if _v3_io is not None:
    from .nodes import comfy_entrypoint  # noqa: F401
    __all__ = ["WEB_DIRECTORY", "comfy_entrypoint"]
else:
    logging.getLogger(__name__).error(
        "Sage Attention Scope needs ComfyUI 0.3.75 or newer (its V3 node API, comfy_api.latest, is "
        "missing here). Update ComfyUI; the pack's nodes are not registered.")
    NODE_CLASS_MAPPINGS = {}
    NODE_DISPLAY_NAME_MAPPINGS = {}
    __all__ = ["WEB_DIRECTORY", "NODE_CLASS_MAPPINGS", "NODE_DISPLAY_NAME_MAPPINGS"]
