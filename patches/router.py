"""The override ComfyUI calls for every attention call of a scoped model.

ComfyUI's ``wrap_attn`` calls ``transformer_options["optimized_attention_override"](func, *args,
**kwargs)``, where ``func`` is the attention function it would have used (SDPA) and ``kwargs``
already holds ``_inside_attn_wrapper``, so ``func(*args, **kwargs)`` runs it unchanged. The
router is that override: it reads the call's facts, asks ``decide``, and runs the kernel or
``func`` - via an override that was there before the Scope, if any - and counts which. Only while
its scope is open (``scope.py``) does it send anything to a kernel.
"""
from __future__ import annotations

import logging
import threading
from typing import Any, Callable, Optional

import torch

from . import compiled, trials
from .call import HND, Call
from .decide import bucket_key, check_key, decide
from .reasons import MASK_DROPPED, SAGE, Fault, Reason, classify, describe
from .session import Generation, Resolution, Session
from .settings import ROUTING_MEASURED, Settings

log = logging.getLogger(__name__)

# True while Dynamo traces; in eager one cheap call. Older torch has only is_compiling.
_tracing = getattr(torch.compiler, "is_dynamo_compiling", torch.compiler.is_compiling)


class _WrongShape(Exception):
    pass


class Router:
    """One per scoped model. Shared, not copied, when ComfyUI deep-copies model options."""

    def __init__(self, settings: Settings, session: Session, previous: Optional[Callable] = None, family=None):
        self.settings, self.session, self.previous, self.family = settings, session, previous, family
        self.local = threading.local()  # .generation: the run open on this thread, if any
        self.key = compiled.register(self)

    def __deepcopy__(self, memo):
        return self

    def __repr__(self):
        return f"Router({self.settings}, family={getattr(self.family, 'name', None)!r})"

    @property
    def generation(self) -> Optional[Generation]:
        return getattr(self.local, "generation", None)

    def __call__(self, func, *args, **kwargs):
        if _tracing():
            return compiled.trace(self, func, args, kwargs)
        generation, call = self.generation, Call.from_comfy(args, kwargs)
        if generation is None or call is None:
            if generation is None:
                self.session.count_outside(str(call.device) if call else "unknown")
            return self.through(func, args, kwargs)
        return self.route(call, generation, func, args, kwargs)

    def through(self, func, args: tuple, kwargs: dict[str, Any]):
        """The SDPA path: exactly what ComfyUI would have run without the Scope."""
        return self.previous(func, *args, **kwargs) if self.previous is not None else func(*args, **kwargs)

    def resolve(self, device: torch.device) -> Resolution:
        resolution, choice = self.session.resolve(self.settings.kernel, device), self.settings.kernel
        if choice not in self.session.kernel_lines.get(str(device), {}):  # said in the status (again after a reset)
            self.session.note_kernel(str(device), choice, resolution)
        if self.session.first_time("kernel", str(device), choice):
            bound = resolution.bound
            log.info("Sage Attention Scope on %s: %s", device, f"{bound.name}, {bound.version} ({resolution.why})"
                     if bound else f"SDPA only: {resolution.why}")
        return resolution

    def route(self, call: Call, generation: Generation, func, args, kwargs):
        bound = self.resolve(call.device).bound
        reason = decide(call, bound and bound.backend, self.settings, generation)
        counts = generation.counts[str(call.device)]
        if reason is not None:
            counts[reason] += 1
            return self.through(func, args, kwargs)
        return self._run(call, bound, counts, generation, func, args, kwargs)

    def _run(self, call: Call, bound, counts, generation: Generation, func, args, kwargs):
        settings, session, device = self.settings, self.session, str(call.device)
        layout = call.layout if call.layout in bound.backend.layouts else HND
        key = check_key(call, bound.backend)
        try:
            out = bound(call, settings, layout)
            if not isinstance(out, torch.Tensor) or tuple(out.shape) != call.kernel_shape(layout):
                raise _WrongShape(f"{bound.name} returned {getattr(out, 'shape', type(out).__name__)}, "
                                  f"expected {call.kernel_shape(layout)}")
        except Exception as exc:  # noqa: BLE001 - a kernel failure must never lose a generation
            self._fault(exc, bound, device, counts, generation)
            return self.through(func, args, kwargs)
        result = call.output(out, layout)
        if call.mask is not None and not bound.backend.masks:
            counts[MASK_DROPPED] += 1  # decide let it through: it masks nothing
        if settings.first_call_check and key not in session.checks:
            reference = func(*args, **kwargs)
            verdict = trials.judge(key, result, reference)
            session.record_check(verdict)
            if not verdict.passed:
                counts[Fault.NON_FINITE] += not verdict.finite
                counts[Reason.CHECK_FAILED] += 1
                log.warning("Attention kernel first-call check %s for %s; these calls stay on SDPA for this "
                            "session.", verdict.describe(), key.label())
                return reference
            log.info("Attention kernel first-call check %s for %s", verdict.describe(), key.label())
        else:  # after the check: a device-side flag, read once per step (scope.py)
            generation.flags.append((key, torch.isfinite(out.sum(dtype=torch.float32))))
        session.note_success(device)
        bucket = bucket_key(call, bound.backend)
        if settings.routing == ROUTING_MEASURED and bucket not in session.decisions:
            try:
                measured = session.measure(bucket, lambda: bound(call, settings, layout),
                                           lambda: self.through(func, args, kwargs), call.device, bound.version)
            except Exception as exc:  # noqa: BLE001 - the kernel failed while being timed
                self._fault(exc, bound, device, counts, generation)
                return self.through(func, args, kwargs)
            log.info("Sage Attention Scope measured %s", measured.describe())
            if not measured.use_sage:
                counts[Reason.MEASURED_SLOWER] += 1
                return self.through(func, args, kwargs)
        counts[SAGE] += 1
        return result

    def _fault(self, exc: BaseException, bound, device: str, counts, generation: Generation) -> None:
        kind = Fault.WRONG_SHAPE if isinstance(exc, _WrongShape) else classify(exc)
        counts[kind] += 1
        counts[Reason.KERNEL_FAULT] += 1
        what, session = describe(exc), self.session
        if kind is Fault.OOM:
            generation.oom.add(device)
            log.warning("%s ran out of memory on %s (%s); the rest of this generation uses SDPA there.",
                        bound.name, device, what)
        elif session.note_fault(device, kind):
            log.warning("Attention kernels retired on %s for this session after %d Triton errors in a row (last: "
                        "%s). Clearing the Triton cache (~/.triton/cache) and restarting may help.",
                        device, session.triton_streak[device], what)
        elif session.first_time("fault", device, kind, type(exc).__qualname__):
            log.warning("%s failed on %s, this call used SDPA (said once per kind): %s", bound.name, device, what)


def router_behind(override) -> Optional[Router]:
    """The router of an override a Scope node installed, or None."""
    return override if isinstance(override, Router) else None
