"""The override ComfyUI's ``wrap_attn`` calls for every attention call of a scoped model, as
``override(func, *args, **kwargs)``: ``func(*args, **kwargs)`` is what ComfyUI would have run (SDPA).
The router reads the call's facts, asks ``decide``, counts the route, and runs the kernel or ``func``
(through an override that was there before the Scope, if any); only while a generation is open
(sampling.py). On the kernel, the first call of a kind is checked against SDPA and a shape bucket is
timed once (measured routing); a kernel that fails hands the call to SDPA."""
from __future__ import annotations

import importlib
import logging
import threading
from typing import Callable, Optional

import torch

from . import compiled
from .backends import Bound
from .call import Call, MaskKind, comfy_arguments, signature
from .checks import CheckKey, judge
from .decide import bucket_key, check_key, decide
from .generation import Generation
from .ledger import SDPA_ROUTE, Route, Tally
from .reasons import Fault, Reason, classify, describe
from .session import Session
from .settings import ROUTING_MEASURED, Settings
from .timing import BucketKey

log = logging.getLogger(__name__)

# True while Dynamo traces; in eager one cheap call. Older torch has only is_compiling.
_tracing = getattr(torch.compiler, "is_dynamo_compiling", torch.compiler.is_compiling)


class Router:
    """One per scoped model; shared, not copied, when ComfyUI deep-copies model options."""

    def __init__(self, settings: Settings, session: Session, previous: Optional[Callable] = None, family=None,
                 model_label: str = ""):
        self.settings, self.session, self.previous = settings, session, previous
        self.family, self.model_label = family, model_label
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
        call, reason, bound = self.route(comfy_arguments(args, kwargs))
        if reason is not None:
            return self.through(func, args, kwargs)
        return self.run(call, self.generation, bound, func, args, kwargs)

    def container_function(self, q, k, v, heads, *rest, **kwargs):
        """Newer ComfyUI's ``wrap_attn`` calls this, without ``func``, where q, k, v come in single-owner
        containers (``peek``/``take``): a declined call goes, containers and all, to the containers'
        module's ``optimized_attention``, so that each is consumed exactly once."""
        comfy_attention = getattr(importlib.import_module(type(q).__module__), "optimized_attention")
        call, reason, bound = self.route(comfy_arguments((q.peek(), k.peek(), v.peek(), heads, *rest), kwargs))
        if reason is not None and self.previous is None:
            return comfy_attention(q, k, v, heads, *rest, **kwargs)
        args = (q.take(), k.take(), v.take(), heads, *rest)
        if reason is not None:
            return self.previous(comfy_attention, *args, **kwargs)
        return self.run(call, self.generation, bound, comfy_attention, args, kwargs)

    def route(self, arguments: dict) -> tuple[Optional[Call], Optional[Reason], Optional[Bound]]:
        """The call's facts, why it stays on SDPA (None: the kernel takes it) and the kernel bound on its
        device; counted. A call with the signature of one made earlier in the run, while nothing ``decide``
        reads has changed since, goes the same way without being decided again, and a declined one without
        being parsed (no facts, no kernel): from its second step on, a model's calls are such, and on a
        host-bound model every microsecond here is paid in its step."""
        generation = self.generation
        if generation is None:
            call = Call.from_arguments(arguments)
            self.session.ledger.count_outside_scope(call.device_name if call is not None else "unknown")
            return call, Reason.OUTSIDE_SCOPE, None
        key = signature(arguments)
        route = generation.route_seen(key, self.session.knowledge.version)
        if route is not None and route.reason is not None:
            self.count(generation, route)
            return None, route.reason, None
        call = Call.from_arguments(arguments)
        bound = self.bound(call)
        if route is None:
            route = self.route_of(call, self.decline_reason(call, generation, bound), bound)
            if key is not None:
                generation.routes_seen[key] = route
        self.count(generation, route)
        return call, route.reason, bound

    def bound(self, call: Optional[Call]) -> Optional[Bound]:
        """The kernel this router's choice binds on the call's device, or None (None for no call)."""
        return call and self.session.use_kernel(self.settings.kernel, call.device_name).bound

    def decline_reason(self, call: Optional[Call], generation: Generation, bound: Optional[Bound]) -> Optional[Reason]:
        """Why ``call`` (in an open generation) stays on SDPA, or None where the kernel takes it. Counts nothing."""
        if call is None:
            return Reason.NOT_TENSORS
        return decide(call, bound and bound.backend, self.settings, self.session.knowledge, generation)

    def route_of(self, call: Optional[Call], reason: Optional[Reason], bound: Optional[Bound]) -> Route:
        """How the Tally counts the call on arrival (a call the kernel takes is counted by ``run``)."""
        if call is None:
            return Route("unknown", reason, None, False)
        return Route(call.device_name, reason,
                     bucket_key(call, bound.backend) if reason is Reason.MEASURED_SLOWER else None,
                     call.block is None and self.settings.places_blocks)

    @staticmethod
    def count(generation: Generation, route: Route) -> None:
        generation.calls_seen += 1
        generation.tallies[route.device].count(route)

    def through(self, func, args: tuple, kwargs: dict):
        """The SDPA path: exactly what ComfyUI would have run without the Scope."""
        return self.previous(func, *args, **kwargs) if self.previous is not None else func(*args, **kwargs)

    def run(self, call: Call, generation: Generation, bound: Bound, func, args, kwargs):
        """The kernel on an eligible call; its first call of a kind checked, its shape bucket timed once."""
        settings, knowledge = self.settings, self.session.knowledge
        tally, key = generation.tallies[call.device_name], check_key(call, bound.backend)
        try:
            out, layout = bound(call, settings)
        except Exception as exc:  # noqa: BLE001 - a kernel failure must never lose a generation
            return self.fault(exc, call, generation, bound, func, args, kwargs)
        result = call.output(out, layout)
        tally.masks_dropped += call.mask is not None and call.mask_kind is not MaskKind.MASKS  # no-op, or keys left out
        tally.copied += call.copies
        if settings.first_call_check and knowledge.check(key) is None:
            generation.waited = True  # the check reads both outputs
            reference = func(*args, **kwargs)
            if not self.check(key, result, reference, tally):
                return reference
        else:  # after the check: a device-side flag, read once a step (sampling.guarded)
            generation.flags.append((key, out.sum(dtype=torch.float32)))  # NaN/inf survive the sum
        knowledge.note_fault(call.device_name, None)
        bucket = bucket_key(call, bound.backend)
        if settings.routing == ROUTING_MEASURED and knowledge.decision(bucket) is None:
            try:
                use_kernel = self.measure(bucket, call, generation, bound, func, args, kwargs)
            except Exception as exc:  # noqa: BLE001 - the kernel failed while timed
                return self.fault(exc, call, generation, bound, func, args, kwargs)
            if not use_kernel:
                tally.declined[Reason.MEASURED_SLOWER] += 1
                tally.routes[bucket, SDPA_ROUTE] += 1
                return self.through(func, args, kwargs)
        tally.kernel += 1
        tally.routes[bucket, bound.backend.name] += 1
        return result

    def check(self, key: CheckKey, result: torch.Tensor, reference: torch.Tensor, tally: Tally) -> bool:
        """The first call of a kind: the kernel's ``result`` against SDPA's ``reference``, kept for the
        session; whether it passed (where not, the call's counts say so)."""
        verdict = judge(key, result, reference)
        self.session.knowledge.record_check(verdict)
        if verdict.passed:
            log.info("Attention kernel first-call check %s for %s", verdict.describe(), key.describe())
            return True
        tally.faults[Fault.NON_FINITE] += not verdict.finite
        tally.declined[Reason.CHECK_FAILED] += 1
        log.warning("Attention kernel first-call check %s for %s; these calls stay on SDPA for this session.",
                    verdict.describe(), key.describe())
        return False

    def measure(self, bucket: BucketKey, call: Call, generation: Generation, bound: Bound, func, args, kwargs) -> bool:
        """Measured routing's decision for the call's bucket (timed now, its cost added to the
        generation, or agreed by earlier sessions): whether the kernel is faster."""
        generation.waited = True  # timing waits for each arm
        decision, spent = self.session.knowledge.measure(
            bucket, lambda: bound(call, self.settings), lambda: self.through(func, args, kwargs), call.device,
            bound.version)
        generation.measuring_ms += spent
        log.info("Sage Attention Scope measured %s", decision.describe())
        return decision.use_sage_when(generation.host_bound)

    def fault(self, exc: BaseException, call: Call, generation: Generation, bound: Bound, func, args, kwargs):
        """Counts and says a kernel failure; the call runs on SDPA."""
        kind, device = classify(exc), call.device_name
        knowledge, ledger = self.session.knowledge, self.session.ledger
        tally = generation.tallies[device]
        tally.faults[kind] += 1
        tally.declined[Reason.KERNEL_FAULT] += 1
        what, kernel = describe(exc), bound.backend.name
        if kind is Fault.OOM:
            generation.ran_out_of_memory(device)
            log.warning("%s ran out of memory on %s (%s); the rest of this generation uses SDPA there.",
                        kernel, device, what)
        elif knowledge.note_fault(device, kind):
            log.warning("Attention kernels retired on %s for this session after %d Triton errors in a row (last: "
                        "%s). Clearing the Triton cache (~/.triton/cache) and restarting may help.",
                        device, knowledge.triton_streak[device], what)
        elif ledger.first_time("fault", device, kind, type(exc).__qualname__):
            log.warning("%s failed on %s, this call used SDPA (said once per kind): %s", kernel, device, what)
        return self.through(func, args, kwargs)
