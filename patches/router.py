"""The override ComfyUI's ``wrap_attn`` calls for every attention call of a scoped model, as
``override(func, *args, **kwargs)``: ``func(*args, **kwargs)`` is what ComfyUI would have run (its own
attention). One trip a call: the call's facts (call.py), its route (remembered for the run, else ruled
by ``decide``), the route counted (ledger.Tally), then the kernel run, or ``func`` (through an override
that was there before the Scope, if any). A kernel's first call of a kind is checked against ``func``'s
result (checks.py); a shape bucket's candidates are timed against ``func`` once (knowledge.measure); a
kernel that fails hands the call to ``func``. Only while a generation is open (sampling.py).

The extras plug in through named hooks and the core names none of them: ``tiers`` offer candidates
before the kernel choice's own (the sparse tier, sparse.py), a candidate's ``rule`` judges its first
call, ``compiled.trace`` takes the call while torch.compile traces, and the knowledge's ``store`` keeps
measured decisions across sessions (nodes/routing_store.py)."""
from __future__ import annotations

import importlib
import logging
import threading
from typing import Callable, Optional, Sequence

import torch

from .extras import compiled
from .call import Call, MaskKind, comfy_arguments, signature
from .decide import decide, fastest
from .state.route import Candidate, Route
from .state.generation import Generation
from .state.ledger import COMFY_ROUTE, Tally
from .reasons import Fault, Reason, classify, describe
from .state.session import Session
from .settings import Settings
from .timing import Decision

log = logging.getLogger(__name__)

# True while Dynamo traces; in eager one cheap call. Older torch has only is_compiling.
_tracing = getattr(torch.compiler, "is_dynamo_compiling", torch.compiler.is_compiling)


class Router:
    """One per scoped model; shared, not copied, when ComfyUI deep-copies model options."""

    def __init__(self, settings: Settings, session: Session, previous: Optional[Callable] = None, family=None,
                 model_label: str = "", tiers: Sequence = ()):
        self.settings, self.session, self.previous = settings, session, previous
        self.family, self.model_label = family, model_label
        self.tiers = tuple(tiers)  # each offers a call its candidate before the kernel choice's (``offer``)
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
        call, route = self.route(comfy_arguments(args, kwargs))
        if route.reason is not None:
            return self.through(func, args, kwargs)
        return self.run(call, route, func, args, kwargs)

    def container_function(self, q, k, v, heads, *rest, **kwargs):
        """Newer ComfyUI's ``wrap_attn`` calls this, without ``func``, where q, k, v come in single-owner
        containers (``peek``/``take``): a declined call goes, containers and all, to the containers'
        module's ``optimized_attention``, so that each is consumed exactly once."""
        comfy_attention = getattr(importlib.import_module(type(q).__module__), "optimized_attention")
        call, route = self.route(comfy_arguments((q.peek(), k.peek(), v.peek(), heads, *rest), kwargs))
        if route.reason is not None and self.previous is None:
            return comfy_attention(q, k, v, heads, *rest, **kwargs)
        args = (q.take(), k.take(), v.take(), heads, *rest)
        if route.reason is not None:
            return self.previous(comfy_attention, *args, **kwargs)
        return self.run(call, route, comfy_attention, args, kwargs)

    # -- deciding -------------------------------------------------------------------------------

    def route(self, arguments: dict) -> tuple[Optional[Call], Route]:
        """The call's facts and its route (a reason to keep ComfyUI's attention, or the kernel to run, or
        none yet: its candidates are to be checked and timed); the route counted. A call with the signature
        of one made earlier in the run's epoch goes the same way without being decided again (``remembered``);
        the first of its kind is decided (``first_decision``)."""
        generation = self.generation
        if generation is None:
            return self.outside_scope(arguments)
        key = signature(arguments)
        route = generation.route(key, generation.epoch(self.session.knowledge.version))
        if route is None:
            return self.first_decision(generation, key, arguments)
        return self.remembered(generation, route, arguments)

    def outside_scope(self, arguments: dict) -> tuple[Optional[Call], Route]:
        """A call of a scoped model while no generation is open (a forward outside sampling): counted apart."""
        call = Call.from_arguments(arguments)
        self.session.ledger.count_outside_scope(call.device_name if call is not None else "unknown")
        return call, Route("unknown", Reason.OUTSIDE_SCOPE)

    def first_decision(self, generation: Generation, key: Optional[tuple], arguments: dict):
        """The first call of its signature in this epoch: parsed and decided; its route remembered where it is
        settled (a route whose candidates are still to be timed is decided again next time)."""
        call = Call.from_arguments(arguments)
        route = self.route_of(call, generation)
        if key is not None and (route.reason is not None or route.kernel is not None):
            generation.routes[key] = route
        self.count(generation, route)
        return call, route

    def remembered(self, generation: Generation, route: Route, arguments: dict):
        """A call like one this epoch decided: counted on its route; parsed only where a kernel runs it (on a
        host-bound model every microsecond here is paid in its step)."""
        self.count(generation, route)
        if route.reason is not None:
            return None, route
        return Call.from_arguments(arguments), route

    def route_of(self, call: Optional[Call], generation: Generation) -> Route:
        """The route ``decide`` rules for ``call`` (in an open generation) among the tiers' candidates and
        the kernel choice's. Counts nothing."""
        if call is None:
            return Route("unknown", Reason.NOT_TENSORS)
        offered, tier_declined = [], None
        for tier in self.tiers:
            offer = tier.offer(call, generation)
            if offer.candidate is not None:
                offered.append(offer.candidate)
            elif tier_declined is None:
                tier_declined = offer.reason
        bounds = self.session.use_kernel(self.settings.kernel, call.device_name).candidates
        ruling = decide(call, bounds, self.settings, self.session.knowledge, generation, offered)
        unplaced = call.block is None and self.settings.places_blocks
        if ruling.reason is not None:
            comfy_bucket = ruling.eligible[0].bucket if ruling.reason is Reason.MEASURED_SLOWER else None
            return Route(call.device_name, ruling.reason, comfy_bucket, unplaced, tier_declined=tier_declined)
        return Route(call.device_name, None, None, unplaced, ruling.kernel, ruling.eligible, tier_declined)

    @staticmethod
    def count(generation: Generation, route: Route) -> None:
        generation.calls_seen += 1
        route.count_into(generation.tallies[route.device])

    # -- running --------------------------------------------------------------------------------

    def through(self, func, args: tuple, kwargs: dict):
        """ComfyUI's path: exactly what ComfyUI would have run without the Scope."""
        if self.previous is not None:
            return self.previous(func, *args, **kwargs)
        return func(*args, **kwargs)

    def run(self, call: Call, route: Route, func, args, kwargs):
        """A call a kernel takes: the route's kernel, or, where the route names none yet, the kernel the
        call's candidates are checked and timed for now (``choose``)."""
        if route.kernel is None:
            return self.choose(call, route.eligible, func, args, kwargs)
        return self.run_kernel(call, route.kernel, func, args, kwargs)

    def run_kernel(self, call: Call, candidate: Candidate, func, args, kwargs):
        """The kernel on an eligible call, its first call of a kind checked; a fault runs ComfyUI's."""
        generation = self.generation
        tally = generation.tallies[call.device_name]
        builds = candidate.bound.builds()
        try:
            result = self.kernel_output(call, candidate)
        except Exception as exc:  # noqa: BLE001 - a kernel failure must never lose a generation
            self.fault(exc, call, candidate)
            tally.declined[Reason.KERNEL_FAULT] += 1
            return self.through(func, args, kwargs)
        if candidate.bound.builds() != builds:
            generation.waited = True  # it built for a new shape in a decided bucket: no sample of the step's time
        self.count_arguments(tally, call)
        if self.needs_check(candidate):
            generation.waited = True  # the check reads both outputs
            reference = func(*args, **kwargs)
            if not self.judge_first_call(candidate, result, reference, tally):
                tally.declined[Reason.CHECK_FAILED] += 1
                return reference
        else:  # after the check: a device-side flag, read once a step (sampling.guarded)
            self.flag(candidate, result)
        self.session.knowledge.note_fault(call.device_name, None)
        self.count_kernel(tally, candidate)
        return result

    def choose(self, call: Call, eligible: tuple[Candidate, ...], func, args, kwargs):
        """The first call of a shape bucket under measured routing: each candidate runs on it, those not yet
        checked are checked against ComfyUI's result, those that may serve it are timed against ComfyUI's
        attention, and the fastest serves the bucket (``decide.fastest``); the call returns its output, else
        ComfyUI's. A candidate that raises loses this call; where others remain it loses the bucket too (one
        candidate alone is tried again on the next call, as any kernel after a fault)."""
        generation, knowledge = self.generation, self.session.knowledge
        tally = generation.tallies[call.device_name]
        generation.waited = True  # checking and timing wait for the GPU
        reference = None
        if any(self.needs_check(candidate) for candidate in eligible):
            reference = func(*args, **kwargs)
        outputs, checked, faulted = self.first_calls(call, eligible, reference, tally)
        if call.device_name in generation.oom:  # one ran out of memory: ComfyUI's attention for the rest of the run
            return self.keep_comfy(call, eligible, Reason.KERNEL_FAULT, reference, func, args, kwargs)
        if faulted and len(eligible) > 1:
            for candidate in faulted:
                knowledge.record_decision(Decision(candidate.bucket, None, float("nan")))
        timed = [c for c in eligible if c in outputs]
        faulted.extend(self.measure(call, timed, func, args, kwargs))
        winner = fastest(timed, [knowledge.decision(c.bucket) for c in timed], generation.host_bound)
        if winner is None:
            return self.keep_comfy(call, eligible, self.declined_because(eligible, faulted), reference, func, args,
                                   kwargs)
        result = outputs[winner]
        if winner not in checked:  # no check read this output: its flag is read at the step's end
            self.flag(winner, result)
        knowledge.note_fault(call.device_name, None)
        self.count_kernel(tally, winner)
        return result

    def first_calls(self, call: Call, eligible: tuple[Candidate, ...], reference: Optional[torch.Tensor],
                    tally: Tally) -> tuple[dict, set, list]:
        """Runs each candidate on the call, checking those not checked yet: (the outputs of those that may
        serve it, those checked now, those that raised). Stops at an out-of-memory error."""
        outputs, checked, faulted, ran = {}, set(), [], False
        for candidate in eligible:
            checking = self.needs_check(candidate)
            try:
                result = self.kernel_output(call, candidate)
            except Exception as exc:  # noqa: BLE001 - a kernel failure must never lose a generation
                faulted.append(candidate)
                if self.fault(exc, call, candidate) is Fault.OOM:
                    break
                continue
            if not ran:
                self.count_arguments(tally, call)
                ran = True
            if checking:
                checked.add(candidate)
            if not checking or self.judge_first_call(candidate, result, reference, tally):
                outputs[candidate] = result
        return outputs, checked, faulted

    def keep_comfy(self, call: Call, eligible: tuple[Candidate, ...], reason: Reason, reference, func, args, kwargs):
        """A call whose candidates were checked or timed, left with ComfyUI's attention for ``reason``
        (``reference``: its result, where the checks computed it)."""
        tally = self.generation.tallies[call.device_name]
        tally.declined[reason] += 1
        if reason is Reason.MEASURED_SLOWER:
            tally.routes[eligible[0].bucket, COMFY_ROUTE] += 1
        if self.previous is not None or reference is None:
            return self.through(func, args, kwargs)
        return reference

    def declined_because(self, eligible: tuple[Candidate, ...], faulted: list) -> Reason:
        """Why a call whose candidates were checked and timed keeps ComfyUI's attention."""
        if faulted:
            return Reason.KERNEL_FAULT
        knowledge = self.session.knowledge
        checks = [knowledge.verdict(candidate.check_key) for candidate in eligible]
        if all(check is not None and not check.passed for check in checks):
            return Reason.CHECK_FAILED
        return Reason.MEASURED_SLOWER

    def kernel_output(self, call: Call, candidate: Candidate) -> torch.Tensor:
        """The candidate's output for the call, shaped as ComfyUI's attention returns it."""
        out, layout = candidate.bound(call, self.settings)
        return call.output(out, layout)

    @staticmethod
    def count_arguments(tally: Tally, call: Call) -> None:
        """What a kernel's run did to the call's arguments: a mask dropped (a no-op, or the keys it masks left
        out), copies made (call.Call.copies). Once a call."""
        if call.mask is not None and call.mask_kind is not MaskKind.MASKS:
            tally.masks_dropped += 1
        if call.copies:
            tally.copied += 1

    @staticmethod
    def count_kernel(tally: Tally, candidate: Candidate) -> None:
        tally.kernel += 1
        if candidate.tier:
            tally.tiers[candidate.tier] += 1
        tally.routes[candidate.bucket, candidate.bucket.kernel] += 1

    def flag(self, candidate: Candidate, result: torch.Tensor) -> None:
        """The output's sum, read at the step's end (NaN/inf survive the sum)."""
        self.generation.flags.append((candidate.check_key, result.sum(dtype=torch.float32)))

    # -- the first-call check -------------------------------------------------------------------

    def needs_check(self, candidate: Candidate) -> bool:
        """Whether the candidate's first call of this kind is still to be checked: with first_call_check on,
        or always where its rule says so (a tier's gate)."""
        if not (self.settings.first_call_check or candidate.rule.always):
            return False
        return self.session.knowledge.verdict(candidate.check_key) is None

    def judge_first_call(self, candidate: Candidate, result: torch.Tensor, reference: torch.Tensor,
                         tally: Tally) -> bool:
        """A candidate's first call of a kind: its ``result`` against ComfyUI's ``reference`` by the
        candidate's rule, kept for the session; whether it passed."""
        rule, key = candidate.rule, candidate.check_key
        verdict = rule.judge(key, result, reference, candidate.bound.backend.exact)
        self.session.knowledge.record_verdict(verdict)
        if verdict.passed:
            log.info("%s %s for %s", rule.name, verdict.describe(), key.describe())
            return True
        if not verdict.finite:
            tally.faults[Fault.NON_FINITE] += 1
        log.warning("%s %s for %s; %s.", rule.name, verdict.describe(), key.describe(), rule.fallback)
        return False

    # -- measured routing -----------------------------------------------------------------------

    def measure(self, call: Call, candidates: list[Candidate], func, args, kwargs) -> list[Candidate]:
        """Times each candidate without a decision for its bucket against ComfyUI's attention (or takes the
        decision earlier sessions agreed on), the cost added to the generation; those that raised while
        timed (they lose the bucket)."""
        generation, knowledge = self.generation, self.session.knowledge
        untimed = [c for c in candidates if knowledge.decision(c.bucket) is None]
        if not untimed:
            return []
        kernels = {c.bucket: (self.timed_call(call, c), c.bound.version) for c in untimed}
        spent, errors = knowledge.measure(kernels, lambda: self.through(func, args, kwargs), call.device)
        generation.measuring_ms += spent
        failed = []
        for candidate in untimed:
            if candidate.bucket in errors:
                self.fault(errors[candidate.bucket], call, candidate)
                failed.append(candidate)
            else:
                log.info("Sage Attention Scope measured %s", knowledge.decision(candidate.bucket).describe())
        return failed

    def timed_call(self, call: Call, candidate: Candidate) -> Callable:
        return lambda: candidate.bound(call, self.settings)

    # -- faults ---------------------------------------------------------------------------------

    def fault(self, exc: BaseException, call: Call, candidate: Candidate) -> Fault:
        """Counts and says a kernel failure (the caller runs ComfyUI's attention); its kind."""
        kind, device = classify(exc), call.device_name
        knowledge, ledger, generation = self.session.knowledge, self.session.ledger, self.generation
        generation.tallies[device].faults[kind] += 1
        what, kernel = describe(exc), candidate.name
        if kind is Fault.OOM:
            generation.ran_out_of_memory(device)
            log.warning("%s ran out of memory on %s (%s); the rest of this generation uses ComfyUI's attention there.",
                        kernel, device, what)
        elif knowledge.note_fault(device, kind):
            log.warning("Attention kernels retired on %s for this session after %d Triton errors in a row (last: "
                        "%s). Clearing the Triton cache (~/.triton/cache) and restarting may help.",
                        device, knowledge.triton_streak[device], what)
        elif ledger.first_time("fault", device, kind, type(exc).__qualname__):
            log.warning("%s failed on %s, this call used ComfyUI's attention (said once per kind): %s", kernel, device,
                        what)
        return kind


