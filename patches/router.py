"""The override ComfyUI's ``wrap_attn`` calls for every attention call of a scoped model, as
``override(func, *args, **kwargs)``: ``func(*args, **kwargs)`` is what ComfyUI would have run (SDPA).
The router reads the call's facts, asks ``decide``, runs the kernel or ``func`` (through an override
that was there before the Scope, if any) and counts which; only while its scope is open (scope.py)."""
from __future__ import annotations

import importlib
import logging
import threading
from typing import Callable, Optional

import torch

from . import compiled, trials
from .call import Call, MaskKind
from .decide import bucket_key, check_key, decide
from .reasons import COPIED, MASK_DROPPED, NO_BLOCK_POSITIONS, SAGE, Fault, Reason, classify, describe
from .session import Generation, Session
from .settings import ROUTING_MEASURED, Settings

log = logging.getLogger(__name__)

# True while Dynamo traces; in eager one cheap call. Older torch has only is_compiling.
_tracing = getattr(torch.compiler, "is_dynamo_compiling", torch.compiler.is_compiling)


class Router:
    """One per scoped model; shared, not copied, when ComfyUI deep-copies model options."""

    def __init__(self, settings: Settings, session: Session, previous: Optional[Callable] = None, family=None,
                 label: str = ""):
        self.settings, self.session, self.previous, self.family, self.label = settings, session, previous, family, label
        self.local = threading.local()  # .generation: the run open on this thread
        self.key = compiled.register(self)

    def __deepcopy__(self, memo):
        return self

    @property
    def generation(self) -> Optional[Generation]:
        return getattr(self.local, "generation", None)

    def __call__(self, func, *args, **kwargs):
        if _tracing():
            return compiled.trace(self, func, args, kwargs)
        call = Call.from_comfy(args, kwargs)
        return self.through(func, args, kwargs) if self.declines(call) else self.run(call, func, args, kwargs)

    def container_function(self, q, k, v, heads, *rest, **kwargs):
        """Newer ComfyUI's ``wrap_attn`` calls this, without ``func``, where q, k, v come in single-owner
        containers (``peek``/``take``): a declined call goes, containers and all, to the containers'
        module's ``optimized_attention``, so that each is consumed exactly once."""
        comfy_attention = getattr(importlib.import_module(type(q).__module__), "optimized_attention")
        call = Call.from_comfy((q.peek(), k.peek(), v.peek(), heads, *rest), kwargs)
        declined = self.declines(call)
        if declined and self.previous is None:
            return comfy_attention(q, k, v, heads, *rest, **kwargs)
        args = (q.take(), k.take(), v.take(), heads, *rest)
        if declined:
            return self.previous(comfy_attention, *args, **kwargs)
        return self.run(call, comfy_attention, args, kwargs)

    def declines(self, call: Optional[Call]) -> bool:
        """Whether the call stays on SDPA: decided and, where it does, counted."""
        generation = self.generation
        if generation is None or call is None:
            if generation is None:
                with self.session.lock:
                    self.session.totals[str(call.device) if call else "unknown"][Reason.OUTSIDE_SCOPE] += 1
            return True
        device, bound = str(call.device), self.resolve(call.device)
        if call.block is None and max(self.settings.first_blocks, self.settings.last_blocks) > 0:
            generation.counts[device][NO_BLOCK_POSITIONS] += 1  # a block window it cannot apply: said in the status
        reason = decide(call, bound and bound.backend, self.settings, generation)
        if reason is not None:
            generation.counts[device][reason] += 1
            if reason is Reason.MEASURED_SLOWER:  # the routing table's count for the bucket
                generation.counts[device][bucket_key(call, bound.backend), "SDPA"] += 1
        return reason is not None

    def through(self, func, args: tuple, kwargs: dict):
        """The SDPA path: exactly what ComfyUI would have run without the Scope."""
        return self.previous(func, *args, **kwargs) if self.previous is not None else func(*args, **kwargs)

    def resolve(self, device: torch.device):
        return self.session.resolve(self.settings.kernel, device, note=True).bound

    def run(self, call: Call, func, args, kwargs):
        """The kernel on an eligible call; its first call of a kind checked, its shape timed once."""
        settings, session, generation, bound = self.settings, self.session, self.generation, self.resolve(call.device)
        counts, key = generation.counts[str(call.device)], check_key(call, bound.backend)
        try:
            out, layout = bound(call, settings)
        except Exception as exc:  # noqa: BLE001 - a kernel failure must never lose a generation
            return self.fault(exc, call, func, args, kwargs)
        result = call.output(out, layout)
        counts[MASK_DROPPED] += (call.mask is not None
                                 and call.mask_kind is not MaskKind.MASKS)  # no-op, or masked keys left out
        counts[COPIED] += call.copies
        if settings.first_call_check and key not in session.checks:
            reference = func(*args, **kwargs)
            verdict = session.checks[key] = trials.judge(key, result, reference)
            if not verdict.passed:
                counts[Fault.NON_FINITE] += not verdict.finite
                counts[Reason.CHECK_FAILED] += 1
                log.warning("Attention kernel first-call check %s for %s; these calls stay on SDPA for this "
                            "session.", verdict.describe(), key.label())
                return reference
            log.info("Attention kernel first-call check %s for %s", verdict.describe(), key.label())
        else:  # after the check: a device-side flag, read once a step (scope.guarded)
            generation.flags.append((key, torch.isfinite(out.sum(dtype=torch.float32))))
        session.note_fault(str(call.device), None)
        bucket = bucket_key(call, bound.backend)
        if settings.routing == ROUTING_MEASURED and bucket not in session.decisions:
            try:
                measured = session.measure(bucket, lambda: bound(call, settings),
                                           lambda: self.through(func, args, kwargs),
                                           call.device, bound.version, generation)
            except Exception as exc:  # noqa: BLE001 - the kernel failed while timed
                return self.fault(exc, call, func, args, kwargs)
            log.info("Sage Attention Scope measured %s", measured.describe())
            if not measured.use_sage:
                counts.update((Reason.MEASURED_SLOWER, (bucket, "SDPA")))
                return self.through(func, args, kwargs)
        counts.update((SAGE, (bucket, bound.backend.name)))
        return result

    def fault(self, exc: BaseException, call: Call, func, args, kwargs):
        """Counts and says a kernel failure; the call runs on SDPA."""
        kind, device, generation, session = classify(exc), str(call.device), self.generation, self.session
        generation.counts[device].update((kind, Reason.KERNEL_FAULT))
        what, kernel = describe(exc), self.resolve(call.device).backend.name
        if kind is Fault.OOM:
            generation.oom.add(device)
            log.warning("%s ran out of memory on %s (%s); the rest of this generation uses SDPA there.",
                        kernel, device, what)
        elif session.note_fault(device, kind):
            log.warning("Attention kernels retired on %s for this session after %d Triton errors in a row (last: "
                        "%s). Clearing the Triton cache (~/.triton/cache) and restarting may help.",
                        device, session.triton_streak[device], what)
        elif session.first_time("fault", device, kind, type(exc).__qualname__):
            log.warning("%s failed on %s, this call used SDPA (said once per kind): %s", kernel, device, what)
        return self.through(func, args, kwargs)
