"""Putting the scope on a model: a patched clone, never the caller's model."""
from __future__ import annotations

import logging

from . import families, kernels, stats
from .router import OVERRIDE_KEY, AttentionRouter, router_behind
from .settings import Settings

log = logging.getLogger(__name__)

WRAPPER_KEY = "sage_attention_scope"


def scope_for_family(model_patcher, settings: Settings):
    """The scoped clone of a model the scope can serve, or ``model_patcher`` itself, unchanged:
    for a model of no supported family, or (scope enabled) one whose device has no kernel. Says
    which once in the log and in the status. Returns (model, Recognition)."""
    found = families.recognise(model_patcher)
    why_not = found.message if not found.opens else None
    if why_not is None and settings.enabled:
        device = model_patcher.load_device
        resolution = kernels.resolve(settings.kernel, device)
        if resolution.kernel is None:
            stats.set_kernel_line(str(device), settings.kernel, {
                "kernel": None, "why": resolution.why, "version": kernels.installed().version})
            why_not = f"{found.message} on {device}: {resolution.why}"
    stats.note_model(why_not or found.message, scoped=why_not is None)
    if why_not is not None:
        if stats.first_time("pass-through", why_not):
            log.log(logging.WARNING if found.opens else logging.INFO,
                    "Sage Attention Scope passes the model through unchanged: %s", why_not)
        return model_patcher, found
    return apply_scope(model_patcher, settings, found.family), found


def apply_scope(model_patcher, settings: Settings, family=None):
    """Returns a clone of ``model_patcher`` whose sampling runs inside the scope.

    The clone gets (1) the router's override (``AttentionRouter.override``) at
    ``transformer_options[OVERRIDE_KEY]`` and (2) OUTER_SAMPLE and DIFFUSION_MODEL wrappers that
    open the scope (and a CALC_COND_BATCH one that brings the family's ControlNets in); outside
    them the router only calls through. An override that was already there keeps serving every
    call the router declines; a router from an earlier Scope node is replaced, not stacked.
    """
    import comfy.patcher_extension as ext  # ComfyUI's own; imported late so the pack loads anywhere

    patched = model_patcher.clone()
    options = patched.model_options.setdefault("transformer_options", {})
    previous = options.get(OVERRIDE_KEY)
    if router_behind(previous) is not None:
        previous = router_behind(previous).previous
    elif previous is not None:
        log.info("Sage Attention Scope: another attention override (%s) is on this model; calls the scope "
                 "does not take still go through it.", getattr(previous, "__qualname__", type(previous).__name__))
    router = AttentionRouter(settings, previous, family)
    options[OVERRIDE_KEY] = router.override
    for kind, wrapper in ((ext.WrappersMP.OUTER_SAMPLE, router.outer_sample_wrapper),
                          (ext.WrappersMP.CALC_COND_BATCH, router.calc_cond_batch_wrapper),
                          (ext.WrappersMP.DIFFUSION_MODEL, router.diffusion_model_wrapper)):
        patched.remove_wrappers_with_key(kind, WRAPPER_KEY)
        patched.add_wrapper_with_key(kind, WRAPPER_KEY, wrapper)
    return patched


def router_of(model_patcher) -> AttentionRouter | None:
    return router_behind(model_patcher.model_options.get("transformer_options", {}).get(OVERRIDE_KEY))
