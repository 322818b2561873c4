"""A custom node for the test server only (tests/test_server.py puts it in custom_nodes/).

* ``SASTestConditioning``: random text conditioning of a given size. The tiny model the test
  writes has no text encoder small enough to ship; this stands in for CLIPTextEncode.
* ``SASTestReplaceAttention``: sets the model's attention override to its own, replacing the one there
  (the Scope's), as KJNodes' Patch Sage Attention and 0.33's Model Attention Backend do; its override
  runs what ComfyUI would run (SDPA).
* ``POST /sas_test/register_kernel`` registers the named kernel test double
  ``reference_double`` (real attention, from tests/sas_doubles.py) with the pack, so the scope
  routes calls on this CPU-only server. The test calls it once the server is up: custom nodes
  load in no fixed order, so the pack may not be imported yet when this file is.
"""
from __future__ import annotations

import sys
from pathlib import Path

import torch

PACK_ROOT = Path(__file__).resolve().parents[2]  # through the symlink the test server has
TEST_KERNEL = "reference_double"


def _pack_module():
    for name, module in list(sys.modules.items()):
        if Path(getattr(module, "__file__", "") or "").resolve() == PACK_ROOT / "__init__.py":
            return name, module
    raise RuntimeError("the Sage Attention Scope pack is not loaded in this server")


def register_test_kernel() -> None:
    name, pack = _pack_module()
    # The harness imports the pack as ``sage_attention_scope`` (the suite's name for it); point
    # that name at the copy this server loaded, so the double registers with the live session.
    sys.modules.setdefault("sage_attention_scope", pack)
    from sas_harness import doubles  # the server runs with tests/ on PYTHONPATH
    session = pack.nodes.SESSION
    if session.knowledge.backend(TEST_KERNEL) is None:
        doubles.add_kernel(session.knowledge, doubles.make_kernel(TEST_KERNEL, doubles.reference_attention))


try:
    from aiohttp import web
    import server

    @server.PromptServer.instance.routes.post("/sas_test/register_kernel")
    async def _register(request):
        register_test_kernel()
        return web.json_response({"registered": TEST_KERNEL})
except (ImportError, AttributeError):  # imported outside a running server
    pass


class SASTestConditioning:
    @classmethod
    def INPUT_TYPES(cls):
        return {"required": {"tokens": ("INT", {"default": 5, "min": 1, "max": 4096}),
                             "dim": ("INT", {"default": 32, "min": 1, "max": 8192}),
                             "seed": ("INT", {"default": 0, "min": 0, "max": 2**31})}}

    RETURN_TYPES = ("CONDITIONING",)
    FUNCTION = "make"
    CATEGORY = "testing"

    def make(self, tokens, dim, seed):
        g = torch.Generator().manual_seed(seed)
        return ([[torch.randn(1, tokens, dim, generator=g), {"attention_mask": torch.ones(1, tokens)}]],)


class SASTestReplaceAttention:
    @classmethod
    def INPUT_TYPES(cls):
        return {"required": {"model": ("MODEL",)}}

    RETURN_TYPES = ("MODEL",)
    FUNCTION = "patch"
    CATEGORY = "testing"

    def patch(self, model):
        def attention_override(func, *args, **kwargs):
            return func(*args, **kwargs)
        patched = model.clone()
        patched.model_options.setdefault("transformer_options", {})["optimized_attention_override"] = attention_override
        return (patched,)


NODE_CLASS_MAPPINGS = {"SASTestConditioning": SASTestConditioning, "SASTestReplaceAttention": SASTestReplaceAttention}
