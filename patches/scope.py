"""Putting the scope on a model: a patched clone, never the caller's model.

The clone gets the router at ``transformer_options[OVERRIDE_KEY]`` and ModelPatcher wrappers
that bound the scope: OUTER_SAMPLE opens it for one sampling run (a generation), DIFFUSION_MODEL
for a forward made outside a sampler, and CALC_COND_BATCH runs each step - ControlNets included -
under the non-finite guard.
"""
from __future__ import annotations

import functools
import logging

import torch

from . import controlnets, families, trials
from .reasons import Fault
from .router import Router, router_behind
from .session import Generation, Session
from .settings import Settings

log = logging.getLogger(__name__)

OVERRIDE_KEY = "optimized_attention_override"
WRAPPER_KEY = "sage_attention_scope"


def scope_for_family(model_patcher, settings: Settings, session: Session):
    """The scoped clone of a model the scope serves, or ``model_patcher`` itself, unchanged: for
    a model of no supported family, or (scope enabled) one whose device has no kernel. Says which
    once in the log and in the status. Returns (model, Recognition)."""
    found = families.recognise(model_patcher)
    why_not = None if found.opens else found.message
    if why_not is None and settings.enabled:
        device = model_patcher.load_device
        resolution = session.resolve(settings.kernel, device)
        if resolution.bound is None:
            session.note_kernel(str(device), settings.kernel, resolution)
            why_not = f"{found.message} on {device}: {resolution.why}"
    session.note_model(why_not or found.message, scoped=why_not is None)
    if why_not is not None:
        if session.first_time("pass-through", why_not):
            log.log(logging.WARNING if found.opens else logging.INFO,
                    "Sage Attention Scope passes the model through unchanged: %s", why_not)
        return model_patcher, found
    return apply_scope(model_patcher, settings, session, found.family), found


def apply_scope(model_patcher, settings: Settings, session: Session, family=None):
    """A clone of ``model_patcher`` whose sampling runs inside the scope. An override that was
    there already keeps serving every call the router declines; a router from an earlier Scope
    node is replaced, not stacked."""
    import comfy.patcher_extension as ext  # ComfyUI's own; imported late so the pack loads anywhere

    patched = model_patcher.clone()
    options = patched.model_options.setdefault("transformer_options", {})
    previous = options.get(OVERRIDE_KEY)
    if router_behind(previous) is not None:
        previous = router_behind(previous).previous
    elif previous is not None:
        log.info("Sage Attention Scope: another attention override (%s) is on this model; calls the scope "
                 "does not take still go through it.", getattr(previous, "__qualname__", type(previous).__name__))
    router = Router(settings, session, previous, family)
    options[OVERRIDE_KEY] = router
    for kind, wrapper in ((ext.WrappersMP.OUTER_SAMPLE, outer_sample), (ext.WrappersMP.CALC_COND_BATCH, one_step),
                          (ext.WrappersMP.DIFFUSION_MODEL, forward)):
        patched.remove_wrappers_with_key(kind, WRAPPER_KEY)
        patched.add_wrapper_with_key(kind, WRAPPER_KEY, functools.partial(wrapper, router))
    return patched


def router_of(model_patcher) -> Router | None:
    return router_behind(model_patcher.model_options.get("transformer_options", {}).get(OVERRIDE_KEY))


def outer_sample(router: Router, executor, *args, **kwargs):
    """Around a whole sampling run: one generation."""
    generation = Generation(router.session, getattr(router.family, "name", ""))
    router.local.generation = generation
    try:
        return executor(*args, **kwargs)
    finally:
        router.local.generation = None
        # Results no step read (a forward outside a sampler's steps): too late to re-run.
        _switch_off(router, generation, generation.take_bad_keys(), "the result was already used")
        for handles in generation.hooks.values():
            for handle in handles:
                handle.remove()
        router.session.end_generation(generation)


def forward(router: Router, executor, *args, **kwargs):
    """Around one diffusion-model forward; a forward outside a sampler is a generation."""
    if router.generation is not None:
        return executor(*args, **kwargs)
    return outer_sample(router, lambda *a, **k: guarded(router, lambda: executor(*a, **k)), *args, **kwargs)


def one_step(router: Router, executor, model, conds, x_in, timestep, model_options, *args, **kwargs):
    """Once per step: ControlNets that run in it get the scope's override, and the guard."""
    generation = router.generation
    if generation is None:
        return executor(model, conds, x_in, timestep, model_options, *args, **kwargs)
    if getattr(router.family, "scope_controlnets", False):
        for control_model in controlnets.control_models(conds):
            if id(control_model) not in generation.hooks:
                generation.hooks[id(control_model)] = controlnets.hand_override(control_model, {OVERRIDE_KEY: router})
    return guarded(router, lambda: executor(model, conds, x_in, timestep, model_options, *args, **kwargs))


def guarded(router: Router, run):
    """Runs one step and reads its kernel outputs' finite flags once. If one is NaN/inf, the step
    runs once more with those kernels switched off for the session (the discarded pass uncounted);
    if that is still not finite, the model itself made it: the result stands, with a warning."""
    generation = router.generation
    before = generation.copy_counts()
    out = run()
    bad = generation.take_bad_keys()
    if not bad:
        return out
    generation.counts.clear()
    generation.counts.update(before)
    _switch_off(router, generation, bad, "the step ran again on SDPA")
    out = run()
    _switch_off(router, generation, generation.take_bad_keys(), "the result was already used")
    if not all(bool(torch.isfinite(t).all()) for t in _tensors(out)):
        log.warning("Sage Attention Scope: this step is not finite with the attention kernels off either; the "
                    "model itself made the NaN/inf, and the result stands.")
    return out


def _switch_off(router: Router, generation: Generation, bad: set, what: str) -> None:
    for key in bad:
        router.session.record_check(trials.non_finite(key))
        generation.counts[key.device][Fault.NON_FINITE] += 1
        if router.session.first_time("non_finite", key):
            log.warning("The attention kernel returned NaN/inf for %s after its first-call check; %s and these "
                        "calls stay on SDPA for this session.", key.label(), what)


def _tensors(out):
    if isinstance(out, torch.Tensor):
        return [out]
    return [t for item in (out if isinstance(out, (list, tuple)) else ()) for t in _tensors(item)]
