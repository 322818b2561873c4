"""The sampling wrappers that bound the Scope: a patched clone of the model with the router at
``transformer_options[OVERRIDE_KEY]`` and ModelPatcher wrappers around sampling. OUTER_SAMPLE opens a
generation for one sampling run, DIFFUSION_MODEL for a forward made outside a sampler, and
CALC_COND_BATCH runs each model evaluation in its step's windows, under the non-finite guard (an
evaluation whose kernel output is NaN/inf runs again on ComfyUI's attention), through the step trial's
hook (step_trial.evaluate: with or without the Scope)."""
from __future__ import annotations

import functools
import logging

import torch

from . import families, override_hooks
from .extras import sparse, step_trial
from .state.generation import Generation
from .override_hooks import OVERRIDE_KEY
from .reasons import Fault
from .router import Router
from .state.session import Session
from .settings import Settings

log = logging.getLogger(__name__)
WRAPPER_KEY = "sage_attention_scope"


def scope_for_family(model_patcher, settings: Settings, session: Session):
    """(the scoped clone, Recognition) for a model the scope serves; ``model_patcher`` itself for a
    model of no supported family or (scope enabled) on a device without a kernel, said once."""
    found, ledger = families.recognise(model_patcher), session.ledger
    label = ledger.model_label(found.name, getattr(model_patcher, "model", model_patcher), run_id())
    label += run_suffix(settings)  # a comparison's runs of one model (off, dense, sparse), apart
    why_not = None if found.opens else found.message
    if why_not is None and settings.enabled:
        device = model_patcher.load_device
        resolution = session.use_kernel(settings.kernel, device)
        if resolution.bound is None:
            why_not = f"on {device}: {resolution.why}"
    if why_not is None:
        scoped = apply_scope(model_patcher, settings, session, found.family, label)
        previous = router_of(scoped).previous
        note = "scoped" if settings.enabled else "Scope off: every call on ComfyUI's attention"
        declined_to = None if previous is None else override_hooks.short_name(previous)
        if declined_to is not None:
            note += f"; the calls it declines go to {declined_to}, an override set before it"
        ledger.note_model(label, note, run_id(), declined_to)
        return scoped, found
    ledger.note_model(label, f"passed through unchanged: {why_not}", run_id())
    if ledger.first_time("pass-through", label, why_not):
        log.log(logging.WARNING if found.opens else logging.INFO,
                "Sage Attention Scope passes the model %s through unchanged: %s", label, why_not)
    return model_patcher, found


SCOPE_OFF_SUFFIX = " (Scope off)"
SPARSE_SUFFIX = " (sparse)"


def run_suffix(settings: Settings) -> str:
    """What sets a model's label apart in a run that samples it more than one way (Compare's with and
    without the Scope, dense and sparse): its sampling times are kept apart under these labels."""
    if not settings.enabled:
        return SCOPE_OFF_SUFFIX
    if settings.sparse_on:
        return SPARSE_SUFFIX
    return ""


def model_of_label(label: str) -> str:
    """The model a run's label names: the label without its ``run_suffix`` (Scope off, sparse)."""
    for suffix in (SCOPE_OFF_SUFFIX, SPARSE_SUFFIX):
        if label.endswith(suffix):
            return label.removesuffix(suffix)
    return label


def apply_scope(model_patcher, settings: Settings, session: Session, family=None, label: str = ""):
    """A scoped clone of ``model_patcher``. An override that was there already serves every call the
    router declines; an earlier Scope's router is replaced."""
    import comfy.patcher_extension as ext  # imported late so that the pack loads anywhere

    patched = model_patcher.clone()
    options = patched.model_options.setdefault("transformer_options", {})
    previous = options.get(OVERRIDE_KEY)
    if isinstance(previous, Router):
        previous = previous.previous
    elif previous is not None:
        log.info("Sage Attention Scope: another attention override (%s) is on this model; calls the scope "
                 "does not take still go through it.", getattr(previous, "__qualname__", type(previous).__name__))
    router = options[OVERRIDE_KEY] = Router(settings, session, previous, family, label or getattr(family, "name", ""),
                                            sparse.tiers_for(settings, session, family))
    for kind, wrapper in ((ext.WrappersMP.OUTER_SAMPLE, outer_sample),
                          (ext.WrappersMP.CALC_COND_BATCH, one_evaluation),
                          (ext.WrappersMP.DIFFUSION_MODEL, forward)):
        patched.remove_wrappers_with_key(kind, WRAPPER_KEY)
        patched.add_wrapper_with_key(kind, WRAPPER_KEY, functools.partial(wrapper, router))
    return patched


def router_of(model_patcher) -> Router | None:
    found = override_hooks.installed_override(model_patcher.model_options)
    return found if isinstance(found, Router) else None


def outer_sample(router: Router, executor, *args, **kwargs):
    """One generation."""
    generation = router.local.generation = Generation(router.model_label, run_id())
    try:
        return executor(*args, **kwargs)
    finally:
        router.local.generation = None
        # Kernel outputs no step boundary read (a forward outside a sampler): too late to re-run.
        _switch_off(router.session, generation, generation.take_bad_keys(), "the result was already used")
        override_hooks.remove_hooks(generation.hooks)
        wall = generation.elapsed_ms()
        router.session.ledger.end_generation(generation, wall)
        if generation.measuring_ms:
            log.info("Sage Attention Scope spent %.0f ms of this %.0f ms generation timing kernels (%.2f%%); later "
                     "generations reuse what it measured.",
                     generation.measuring_ms, wall, 100 * generation.measuring_ms / wall)


def forward(router: Router, executor, *args, **kwargs):
    """One diffusion-model forward; made outside a sampler, it is a generation of its own. Its context's
    length is the text tokens a sparse kernel keeps exact in a joint sequence."""
    if router.generation is not None:
        router.generation.text_tokens = text_tokens(args, kwargs)
        return executor(*args, **kwargs)

    def alone(*a, **k):
        router.generation.text_tokens = text_tokens(a, k)
        return guarded(router, lambda: executor(*a, **k))
    return outer_sample(router, alone, *args, **kwargs)


def text_tokens(args: tuple, kwargs: dict) -> int:
    """The tokens of the text conditioning a diffusion model's forward gets (``context``: (B, L, D)), or 0."""
    context = kwargs.get("context", args[2] if len(args) > 2 else None)
    if isinstance(context, torch.Tensor) and context.ndim == 3:
        return context.shape[1]
    return 0


def one_evaluation(router: Router, executor, model, conds, x_in, timestep, model_options, *args, **kwargs):
    """One model evaluation of a step: its windows (the step window, and each tier's: ComfyUI's percent
    convention, as ControlNets use it), the override handed to the ControlNets in it, its pace timed, then
    run through the step trial's hook, guarded; and whether the override there is still the Scope's."""
    generation = router.generation
    if generation is None:
        return executor(model, conds, x_in, timestep, model_options, *args, **kwargs)
    set_window(router.settings, generation, model.model_sampling, float(timestep[0]))
    for tier in router.tiers:
        tier.enter_step(generation, model.model_sampling, float(timestep[0]))
    if getattr(router.family, "scope_controlnets", False):
        for net in override_hooks.control_models(conds):
            if id(net) not in generation.hooks:
                generation.hooks[id(net)] = override_hooks.hand_override(net, {OVERRIDE_KEY: router})
    installed, calls_before = override_hooks.installed_override(model_options), generation.calls_seen
    generation.step_started(getattr(x_in, "device", None))  # (LTX-2's nested latent: untimed)

    def launched(out):
        generation.step_launched()  # before the guard reads the flags (a sync)
        return out

    def with_scope():
        return guarded(router, lambda: launched(executor(model, conds, x_in, timestep, model_options, *args,
                                                         **kwargs)))

    def without():
        options = without_scope(model_options, router.previous)
        return launched(executor(model, conds, x_in, timestep, options, *args, **kwargs))
    evaluation = step_trial.evaluation_key(conds, x_in, timestep) if installed is router else None
    out = step_trial.evaluate(router, step_trial.Runs(with_scope, without), evaluation)
    if installed is not router and not generation.said_override:  # a node after the Scope set its own
        note_other_override(router, generation, installed, generation.calls_seen > calls_before)
    return out


def set_window(settings: Settings, generation: Generation, model_sampling, sigma: float) -> None:
    """Whether this evaluation's sigma lies in the step window."""
    if (settings.start_percent, settings.end_percent) != (0.0, 1.0):
        start, end = (model_sampling.percent_to_sigma(p) for p in (settings.start_percent, settings.end_percent))
        generation.in_steps = end <= sigma <= start


def without_scope(model_options: dict, previous) -> dict:
    """``model_options`` with the Scope's override taken out (the override it found there, if any, put
    back): ComfyUI then calls its own attention directly."""
    options = dict(model_options.get("transformer_options", {}))
    if previous is None:
        options.pop(OVERRIDE_KEY, None)
    else:
        options[OVERRIDE_KEY] = previous
    return {**model_options, "transformer_options": options}


def note_other_override(router: Router, generation: Generation, installed, reached_scope: bool) -> None:
    """Says once a generation what another node's override did to the Scope: wrapped it (its calls still
    reached the router in this step) or replaced it."""
    generation.said_override = True
    note = override_hooks.another_override_note(installed, reached_scope)
    if not reached_scope:
        log.warning("Sage Attention Scope: the attention override of %s was %s.", router.model_label, note)
    router.session.ledger.note_run(router.model_label, note, generation.run_id)  # this run's alone


def guarded(router: Router, run):
    """Runs one step and reads its kernel outputs' finite flags once. If one is NaN/inf, the step
    runs once more with those kernels switched off for the session (the discarded pass uncounted);
    if that is not finite either, the model itself made it: the result stands, with a warning."""
    generation = router.generation
    before = generation.save_tallies()
    out = run()
    bad = generation.take_bad_keys()
    if not bad:
        return out
    generation.restore_tallies(before)
    _switch_off(router.session, generation, bad, "the step ran again on ComfyUI's attention")
    out = run()
    _switch_off(router.session, generation, generation.take_bad_keys(), "the result was already used")
    if not all(bool(torch.isfinite(t).all()) for t in (out if isinstance(out, (list, tuple)) else [out])):
        log.warning("Sage Attention Scope: this step is not finite with the attention kernels off either; the "
                    "model itself made the NaN/inf, and the result stands.")
    return out


def run_id():
    """The prompt ComfyUI is executing, or None outside one."""
    try:
        from comfy_execution.utils import get_executing_context
    except ImportError:
        return None
    context = get_executing_context()  # the pip-installable ComfyUI names the prompt task_id
    return context and (getattr(context, "prompt_id", None) or getattr(context, "task_id", None))


def _switch_off(session: Session, generation: Generation, bad: set, what: str) -> None:
    for key in bad:
        session.knowledge.switch_off(key)
        generation.tallies[key.device].faults[Fault.NON_FINITE] += 1
        if session.ledger.first_time("non_finite", key):
            log.warning("The attention kernel returned NaN/inf for %s after its first-call check; %s and these "
                        "calls keep ComfyUI's attention for this session.", key.describe(), what)
