"""Putting the scope on a model: a patched clone with the router at
``transformer_options[OVERRIDE_KEY]`` and ModelPatcher wrappers that bound the scope. OUTER_SAMPLE
opens it for one sampling run (a generation), DIFFUSION_MODEL for a forward made outside a sampler,
and CALC_COND_BATCH runs each model evaluation under the step window and the non-finite guard.

ComfyUI calls a ControlNet's blocks in the sampling loop without ``transformer_options``: for the
families that want them, the scope hooks (forward pre-hooks, removed when the scope closes) each of
its submodules whose ``forward`` takes them, handing a caller that passed none the override."""
from __future__ import annotations

import collections
import functools
import inspect
import logging

import torch

from . import families, trials
from .reasons import Fault
from .router import Router
from .session import Generation, Session
from .settings import Settings

log = logging.getLogger(__name__)
OVERRIDE_KEY, WRAPPER_KEY = "optimized_attention_override", "sage_attention_scope"


def scope_for_family(model_patcher, settings: Settings, session: Session):
    """(the scoped clone, Recognition) for a model the scope serves; ``model_patcher`` itself for a
    model of no supported family or (scope enabled) on a device without a kernel, said once."""
    found = families.recognise(model_patcher)
    label = session.label(found.name, getattr(model_patcher, "model", model_patcher), run_id())
    label += "" if settings.enabled else " (Scope off)"  # a with/without comparison's two runs, apart
    why_not = None if found.opens else found.message
    if why_not is None and settings.enabled:
        device = model_patcher.load_device
        resolution = session.resolve(settings.kernel, device, note=True)
        if resolution.bound is None:
            why_not = f"on {device}: {resolution.why}"
    if why_not is None:
        scoped = apply_scope(model_patcher, settings, session, found.family, label)
        previous = router_of(scoped).previous
        note = "scoped" if settings.enabled else "Scope off: every call on ComfyUI's attention"
        session.note_model(label, note + (f"; calls it declines go to {_name(previous)}" if previous else ""), run_id())
        return scoped, found
    session.note_model(label, f"passed through unchanged: {why_not}", run_id())
    if session.first_time("pass-through", label, why_not):
        log.log(logging.WARNING if found.opens else logging.INFO,
                "Sage Attention Scope passes the model %s through unchanged: %s", label, why_not)
    return model_patcher, found


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
    router = options[OVERRIDE_KEY] = Router(settings, session, previous, family, label or getattr(family, "name", ""))
    for kind, wrapper in ((ext.WrappersMP.OUTER_SAMPLE, outer_sample), (ext.WrappersMP.CALC_COND_BATCH, one_step),
                          (ext.WrappersMP.DIFFUSION_MODEL, forward)):
        patched.remove_wrappers_with_key(kind, WRAPPER_KEY)
        patched.add_wrapper_with_key(kind, WRAPPER_KEY, functools.partial(wrapper, router))
    return patched


def router_of(model_patcher) -> Router | None:
    found = model_patcher.model_options.get("transformer_options", {}).get(OVERRIDE_KEY)
    return found if isinstance(found, Router) else None


def outer_sample(router: Router, executor, *args, **kwargs):
    """One generation."""
    generation = router.local.generation = Generation(router.session, router.label, run_id())
    try:
        return executor(*args, **kwargs)
    finally:
        router.local.generation = None
        # Kernel outputs no step boundary read (a forward outside a sampler): too late to re-run.
        _switch_off(router.session, generation, generation.take_bad_keys(), "the result was already used")
        for handle in (h for handles in generation.hooks.values() for h in handles):
            handle.remove()
        router.session.end_generation(generation)
        if generation.measuring_ms:
            wall = router.session.last_ms[0]
            log.info("Sage Attention Scope spent %.0f ms of this %.0f ms generation timing kernels (%.2f%%); later "
                     "generations reuse what it measured.",
                     generation.measuring_ms, wall, 100 * generation.measuring_ms / wall)


def forward(router: Router, executor, *args, **kwargs):
    """One diffusion-model forward; made outside a sampler, it is a generation of its own."""
    if router.generation is not None:
        return executor(*args, **kwargs)
    return outer_sample(router, lambda *a, **k: guarded(router, lambda: executor(*a, **k)), *args, **kwargs)


def one_step(router: Router, executor, model, conds, x_in, timestep, model_options, *args, **kwargs):
    """One model evaluation in a step: whether the override there is still the Scope's, whether its
    sigma lies in the step window (ComfyUI's percent convention, as ControlNets use it), the
    override for ControlNets in it, and the guard."""
    generation, settings = router.generation, router.settings
    if generation is None:
        return executor(model, conds, x_in, timestep, model_options, *args, **kwargs)
    installed = model_options.get("transformer_options", {}).get(OVERRIDE_KEY)
    if installed is not router and not generation.said_override:  # a node after the Scope set its own
        generation.said_override = True
        if _reaches(installed, router):
            note = f"below {_name(installed)}, which wraps the Scope: the calls it passes on reach the Scope"
        else:
            note = f"replaced by {_name(installed)}: SageAttention Scope inactive for this model"
            log.warning("Sage Attention Scope: the attention override of %s was %s.", router.label, note)
        router.session.note_model(router.label, note, generation.run_id)
    if (settings.start_percent, settings.end_percent) != (0.0, 1.0):
        start, end = (model.model_sampling.percent_to_sigma(p) for p in (settings.start_percent, settings.end_percent))
        generation.in_steps = end <= float(timestep[0]) <= start
    if getattr(router.family, "scope_controlnets", False):
        for net in control_models(conds):
            if id(net) not in generation.hooks:
                generation.hooks[id(net)] = hand_override(net, {OVERRIDE_KEY: router})
    return guarded(router, lambda: executor(model, conds, x_in, timestep, model_options, *args, **kwargs))


def guarded(router: Router, run):
    """Runs one step and reads its kernel outputs' finite flags once. If one is NaN/inf, the step
    runs once more with those kernels switched off for the session (the discarded pass uncounted);
    if that is not finite either, the model itself made it: the result stands, with a warning."""
    generation = router.generation
    before = {device: collections.Counter(c) for device, c in generation.counts.items()}
    out = run()
    bad = generation.take_bad_keys()
    if not bad:
        return out
    generation.counts.clear()
    generation.counts.update(before)
    _switch_off(router.session, generation, bad, "the step ran again on SDPA")
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


def _name(override) -> str:
    return f"{getattr(override, '__module__', '?')}.{getattr(override, '__qualname__', type(override).__qualname__)}"


def _reaches(override, router, depth: int = 3) -> bool:
    """Whether ``override`` holds ``router`` (a closure, a partial, an attribute) and so calls it."""
    if override is router:
        return True
    if depth == 0 or override is None:
        return False
    held = [c.cell_contents for c in getattr(override, "__closure__", None) or () if c.cell_contents is not None]
    held += [getattr(override, a) for a in ("__self__", "__wrapped__", "func") if hasattr(override, a)]
    held += list(getattr(override, "args", ())) + list(vars(override).values() if hasattr(override, "__dict__") else ())
    return any(_reaches(h, router, depth - 1) for h in held if callable(h) or isinstance(h, Router))


def _switch_off(session: Session, generation: Generation, bad: set, what: str) -> None:
    for key in bad:
        session.checks[key] = trials.CheckResult(key, False)
        generation.counts[key.device][Fault.NON_FINITE] += 1
        if session.first_time("non_finite", key):
            log.warning("The attention kernel returned NaN/inf for %s after its first-call check; %s and these "
                        "calls stay on SDPA for this session.", key.label(), what)


def control_models(conds) -> list[torch.nn.Module]:
    """The ControlNet models attached to ``calc_cond_batch``'s conds, each chain of previous ones too."""
    found: dict[int, torch.nn.Module] = {}
    for cond in (c for conds_list in conds for c in conds_list or () if isinstance(c, dict)):
        control = cond.get("control")
        while control is not None:
            if isinstance(getattr(control, "control_model", None), torch.nn.Module):
                found.setdefault(id(control.control_model), control.control_model)
            control = getattr(control, "previous_controlnet", None)
    return list(found.values())


def hand_override(module: torch.nn.Module, options: dict) -> list:
    """Hooks every submodule of ``module`` whose forward takes ``transformer_options``; the handles."""
    handles, positions = [], {}
    for sub in module.modules():
        forward = type(sub).forward
        if forward not in positions:  # where transformer_options stands among its parameters, if anywhere
            params = [p for p in inspect.signature(forward).parameters.values() if p.name != "self"]
            positions[forward] = next((i for i, p in enumerate(params) if p.name == "transformer_options"
                                       and p.kind != p.VAR_KEYWORD), None)
        if positions[forward] is None:
            continue

        def inject(_module, args, kwargs, position=positions[forward]):
            if "transformer_options" in kwargs or len(args) > position:
                return None
            return args, {**kwargs, "transformer_options": options}
        handles.append(sub.register_forward_pre_hook(inject, with_kwargs=True))
    return handles
