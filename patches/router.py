"""The override ComfyUI calls for every attention call of a scoped model, and its router.

ComfyUI's ``wrap_attn`` calls ``transformer_options["optimized_attention_override"](func,
*args, **kwargs)``, where ``func`` is the attention function it would have used (SDPA here)
and ``kwargs`` already carries ``_inside_attn_wrapper``, so ``func(*args, **kwargs)`` runs it
unchanged. What sits there is ``AttentionRouter.override``: it declines too-short calls itself
(the cheapest decision, on the commonest host-bound calls) and hands the rest to the router.
The router acts only while its own scope is open; every other call, and every call it
declines, goes through unchanged - via an override that was there before us, if any.
"""
from __future__ import annotations

import contextvars
import dataclasses
import logging
from typing import Any, Callable, Optional

import torch

from . import checks, compiled, controlnets, faults, finite_guard, kernels, stats, timing
from .eligibility import (AttentionCall, FamilyRule, KernelTraits, mask_masks_nothing, signature_reason,
                          stride_problem, too_short)
from .faults import Fault
from .reasons import Reason
from .settings import Settings

log = logging.getLogger(__name__)

OVERRIDE_KEY = "optimized_attention_override"
# Each re-run of a step fails at least one more key (device x dtype x head size x kernel), and a
# step has a handful at most; past this, the step's result stands and the rest is read at the end.
MAX_STEP_RERUNS = 8


@dataclasses.dataclass(frozen=True)
class ActiveScope:
    router: "AttentionRouter"
    generation: stats.Generation
    hooks: dict = dataclasses.field(default_factory=dict)  # id(ControlNet model) -> hook handles
    pending: finite_guard.PendingFlags = dataclasses.field(default_factory=finite_guard.PendingFlags)
    # ``generation.too_short`` itself, one attribute nearer: the too-short shortcut counts into it
    # on a host-bound call, where the second hop cost ~0.4 us on the H200's host.
    short_counts: dict = dataclasses.field(init=False)

    def __post_init__(self):
        object.__setattr__(self, "short_counts", self.generation.too_short)


_active: contextvars.ContextVar[Optional[ActiveScope]] = contextvars.ContextVar("sage_attention_scope", default=None)


def current_scope() -> Optional[ActiveScope]:
    return _active.get()


class _WrongShape(Exception):
    pass


# True while Dynamo traces (it folds the call); in eager one call that returns False, a fraction of
# what torch.compiler.is_compiling costs (it asks TorchScript first). Older torch: the latter.
_dynamo_tracing = getattr(torch.compiler, "is_dynamo_compiling", torch.compiler.is_compiling)

# Distinct call signatures a router keeps plans for; a model makes a handful per resolution.
MAX_PLANS = 256


@dataclasses.dataclass(frozen=True)
class CallPlan:
    """What a call's signature alone decides, worked out once per signature: a Reason to stay
    on SDPA, or the kernel with its first-call-check key and (measured routing) shape bucket.
    ``epoch`` is ``kernels.epoch()`` when made: a changed kernel choice outdates the plan."""
    epoch: int
    device: str
    reason: Optional[Reason]
    kernel: Optional[kernels.Kernel] = None
    check_key: Optional[checks.CheckKey] = None
    bucket: Optional[timing.BucketKey] = None


def call_signature(args: tuple, kwargs: dict[str, Any]) -> tuple | None:
    """What ``eligibility.signature_reason`` reads from a call, and its device, as a dict key.
    None for a call passed in another form (q/k/v by keyword, not tensors, heads not an int);
    those are parsed every time. Flat and small on purpose: it is built for every call."""
    if len(args) < 4 or type(args[3]) is not int:
        return None
    q, k, v = args[0], args[1], args[2]
    get = kwargs.get
    try:
        return (q.shape, k.shape, v.shape, q.dtype, k.dtype, v.dtype, q.device, args[3],
                bool(get("skip_reshape", False)), get("low_precision_attention", True) is not False,
                bool(get("enable_gqa", False)))  # as AttentionCall.parse reads them
    except AttributeError:  # not tensors
        return None


class AttentionRouter:
    """One per scoped model patcher. Immutable apart from what it has logged; shared, not
    copied, when ComfyUI deep-copies model options (``__deepcopy__``)."""

    def __init__(self, settings: Settings, previous: Callable | None = None, family=None):
        self.settings = settings
        self.previous = previous
        self.family = family  # a families.Family, or None (engine tests)
        self.family_rule: FamilyRule | None = getattr(family, "rule", None)
        self.op_key = compiled.register(self)  # how the compiled path's op finds this router
        self._announced: set[tuple[str, str]] = set()
        self._plans: dict[tuple, CallPlan] = {}  # call_signature -> CallPlan
        self.override = _override_for(self)  # what goes into transformer_options

    def __deepcopy__(self, memo):
        return self

    def __repr__(self):
        return f"AttentionRouter({self.settings}, family={getattr(self.family, 'name', None)!r})"

    # -- the scope boundary: ModelPatcher wrappers ------------------------------------------

    def outer_sample_wrapper(self, executor, *args, **kwargs):
        """Around a whole sampling run: one generation."""
        generation = stats.begin_generation(getattr(self.family, "name", ""))
        scope = ActiveScope(self, generation)
        token = _active.set(scope)
        try:
            return executor(*args, **kwargs)
        finally:
            _active.reset(token)
            # Results no step boundary read (none in ComfyUI's samplers): too late to re-run,
            # but the keys still fail and it is said.
            self._fail_non_finite(scope, scope.pending.take_bad_keys(), rerun=False)
            for handles in scope.hooks.values():
                for handle in handles:
                    handle.remove()
            stats.end_generation(generation)

    def diffusion_model_wrapper(self, executor, *args, **kwargs):
        """Around one diffusion-model forward; a forward outside a sampler is a generation."""
        active = _active.get()
        if active is not None and active.router is self:
            return executor(*args, **kwargs)
        return self.outer_sample_wrapper(
            lambda *a, **k: self.guarded(_active.get(), lambda: executor(*a, **k)), *args, **kwargs)

    def calc_cond_batch_wrapper(self, executor, model, conds, x_in, timestep, model_options, *args, **kwargs):
        """Once per step: ControlNets that run in this step get the scope's override."""
        active = _active.get()
        if active is not None and active.router is self and getattr(self.family, "scope_controlnets", False):
            for control_model in controlnets.control_models(conds):
                if id(control_model) not in active.hooks:
                    active.hooks[id(control_model)] = controlnets.hand_override(control_model,
                                                                                {OVERRIDE_KEY: self.override})
        if active is None or active.router is not self:
            return executor(model, conds, x_in, timestep, model_options, *args, **kwargs)
        return self.guarded(active, lambda: executor(model, conds, x_in, timestep, model_options, *args, **kwargs))

    def guarded(self, active: ActiveScope, run: Callable[[], Any]):
        """Runs one step (ControlNets and model forward), reads its kernel results' finite
        flags once, and if one is NaN/inf, runs the step again with those keys on SDPA; the
        counters of the discarded pass are rolled back."""
        for _ in range(MAX_STEP_RERUNS):
            before = active.generation.copy_counters()
            out = run()
            bad = active.pending.take_bad_keys()
            if not bad:
                return out
            active.generation.restore_counters(before)
            self._fail_non_finite(active, bad, rerun=True)
        return run()

    def _fail_non_finite(self, active: ActiveScope, bad: set, rerun: bool) -> None:
        for key in bad:
            checks.record(finite_guard.failed_result(key))
            active.generation.counters(key.device).faults[Fault.NON_FINITE] += 1
            if stats.first_time("non_finite", key):
                log.warning("SageAttention returned NaN/inf for %s after its first-call check; %s these calls "
                            "stay on SDPA for this session.", key.label(),
                            "the step ran again on SDPA and" if rerun else "the result was already used;")

    # -- the override ------------------------------------------------------------------------

    def __call__(self, func, *args, **kwargs):
        if _dynamo_tracing():
            return compiled.route_while_tracing(self, func, args, kwargs)
        active = _active.get()
        if active is None or active.router is not self:
            stats.count_outside_scope(_device_label(args, kwargs))
            return self.call_through(func, args, kwargs)
        # Most calls cost a signature and a dict lookup: no parsed call, no dataclasses. (Too-short
        # calls were declined before: ``override``.)
        call = None
        signature = call_signature(args, kwargs)
        plan = self._plans.get(signature) if signature is not None else None
        if plan is None or plan.epoch != kernels.epoch():
            call = AttentionCall.parse(args, kwargs)
            plan = self._plan(call)
            if signature is not None:
                self._remember(signature, plan)
        if plan.reason is not None:  # nothing per call can change it
            active.generation.counters(plan.device).sdpa[plan.reason] += 1
            return self.call_through(func, args, kwargs)
        if call is None:
            call = AttentionCall.parse(args, kwargs)
        return self._route_planned(plan, call, active, func, args, kwargs, self.call_through)

    def route(self, call: AttentionCall, active: ActiveScope, func, args, kwargs, through):
        """Decides and runs one call. ``through(func, args, kwargs)`` is the SDPA path taken for
        every call the kernel does not serve; ``func(*args, **kwargs)`` is plain SDPA, the
        reference of the first-call check and of measured routing."""
        return self._route_planned(self._plan(call), call, active, func, args, kwargs, through)

    def call_through(self, func, args, kwargs):
        """The SDPA path: exactly what ComfyUI would have run without us."""
        if self.previous is not None:
            return self.previous(func, *args, **kwargs)
        return func(*args, **kwargs)

    def _remember(self, signature: tuple, plan: CallPlan) -> None:
        if len(self._plans) >= MAX_PLANS:  # resolutions that keep changing: start over
            self._plans.clear()
        self._plans[signature] = plan

    def _plan(self, call: AttentionCall) -> CallPlan:
        """What the call's signature decides (``call_signature`` lists what that covers): the
        settings, the kernel for its device, and the engine's static rules."""
        settings = self.settings
        device = str(call.device)
        epoch = kernels.epoch()
        if not settings.enabled:
            return CallPlan(epoch, device, Reason.DISABLED)
        if too_short(call, settings.min_seq_len):
            return CallPlan(epoch, device, Reason.TOO_SHORT)  # as the override's shortcut decides
        resolution = kernels.resolve(settings.kernel, call.device)
        self._announce_kernel(device, resolution)
        kernel = resolution.kernel
        if kernel is None:
            return CallPlan(epoch, device, Reason.NOT_CUDA if resolution.not_cuda else Reason.NO_KERNEL)
        # Strides and the family's rule may differ between calls of one signature: _decide.
        reason = signature_reason(call, KernelTraits(kernel.spec.head_dims, kernel.spec.dtypes), settings.min_seq_len)
        if reason is not None:
            return CallPlan(epoch, device, reason)
        key = checks.CheckKey(device, str(call.q.dtype).removeprefix("torch."), call.head_dim, kernel.name)
        bucket = (timing.bucket_key(device, kernel.name, key.dtype, call.head_dim, call.q_len, call.kv_len)
                  if settings.routing == timing.ROUTING_MEASURED else None)
        return CallPlan(epoch, device, None, kernel, key, bucket)

    def _route_planned(self, plan: CallPlan, call: AttentionCall, active: ActiveScope, func, args, kwargs,
                       through):
        counters = active.generation.counters(plan.device)
        decision = self._decide(plan, call, counters, active.generation)
        if isinstance(decision, Reason):
            counters.sdpa[decision] += 1
            return through(func, args, kwargs)
        return self._run_kernel(plan, decision, call, func, args, kwargs, counters, active, through)

    def _decide(self, plan: CallPlan, call: AttentionCall, counters: stats.Counters,
                generation: stats.Generation):
        """A Reason (stay on SDPA), or the shape bucket still to be timed (None: none)."""
        if plan.reason is not None:
            return plan.reason
        if stride_problem(call) is not None:
            return Reason.LAYOUT
        if self.family_rule is not None:
            reason = self.family_rule(call)
            if reason is not None:
                return reason
        # What the call itself rules out came first, so a too-short call is counted as too
        # short whatever state the device is in; now the device's state.
        device = plan.device
        if stats.is_retired(device):
            return Reason.DEVICE_RETIRED
        if device in generation.oom_devices:
            return Reason.OOM_EARLIER
        prior = checks.result(plan.check_key)
        if prior is not None and not prior.passed:
            return Reason.CHECK_FAILED
        if call.mask is not None:
            if not mask_masks_nothing(call.mask):
                return Reason.MASK
            counters.masks_dropped += 1
        bucket = plan.bucket
        if bucket is not None:
            measured = timing.decision(bucket)
            if measured is not None:
                if not measured.use_sage:
                    return Reason.MEASURED_SLOWER
                bucket = None  # decided for SageAttention: nothing more to do
        return bucket

    def _run_kernel(self, plan: CallPlan, bucket, call: AttentionCall, func, args, kwargs,
                    counters: stats.Counters, active: ActiveScope, through):
        kernel, key, device = plan.kernel, plan.check_key, plan.device
        generation = active.generation
        q, k, v = call.kernel_views()

        def run_sage():
            return kernel.run(q, k, v, layout=call.layout, sm_scale=call.scale, smooth_k=self.settings.smooth_k)

        try:
            out = run_sage()
            if not isinstance(out, torch.Tensor) or tuple(out.shape) != call.expected_kernel_shape():
                raise _WrongShape(f"{kernel.name} returned {getattr(out, 'shape', type(out).__name__)}, "
                                  f"expected {call.expected_kernel_shape()}")
        except Exception as exc:  # noqa: BLE001 - a kernel failure must never lose a generation
            self._on_fault(exc, kernel, device, counters, generation)
            return through(func, args, kwargs)
        result = call.output_from_kernel(out)
        if self.settings.first_call_check and checks.result(key) is None:
            reference = func(*args, **kwargs)
            verdict = checks.judge(key, result, reference)
            checks.record(verdict)
            if not verdict.passed:
                if not verdict.finite:
                    counters.faults[Fault.NON_FINITE] += 1
                counters.sdpa[Reason.CHECK_FAILED] += 1
                log.warning("SageAttention first-call check %s for %s; these calls stay on SDPA for this "
                            "session.", verdict.describe(), key.label())
                return reference
            log.info("SageAttention first-call check %s for %s", verdict.describe(), key.label())
        else:  # after the check: a device-side flag, read once per step (finite_guard)
            active.pending.note(key, out)
        stats.note_kernel_success(device)
        if bucket is not None:
            try:
                measured = timing.measure(bucket, run_sage, lambda: through(func, args, kwargs), call.device,
                                          kernel.version)
            except Exception as exc:  # noqa: BLE001 - the kernel failed while being timed
                self._on_fault(exc, kernel, device, counters, generation)
                return through(func, args, kwargs)
            log.info("Sage Attention Scope measured %s", measured.describe())
            if not measured.use_sage:
                counters.sdpa[Reason.MEASURED_SLOWER] += 1
                return through(func, args, kwargs)
        counters.sage += 1
        return result

    def _on_fault(self, exc: BaseException, kernel: kernels.Kernel, device: str,
                  counters: stats.Counters, generation: stats.Generation) -> None:
        kind = Fault.WRONG_SHAPE if isinstance(exc, _WrongShape) else faults.classify(exc)
        counters.faults[kind] += 1
        counters.sdpa[Reason.KERNEL_FAULT] += 1
        what = faults.describe(exc)
        if kind is Fault.OOM:
            generation.oom_devices.add(device)
            log.warning("SageAttention ran out of memory on %s (%s); the rest of this generation uses "
                        "SDPA there.", device, what)
        elif kind is Fault.TRITON:
            if stats.note_triton_fault(device):
                log.warning("SageAttention retired on %s for this session after %d Triton errors in a row "
                            "(last: %s). Clearing the Triton cache (~/.triton/cache) and restarting may "
                            "help.", device, faults.TRITON_RETIRE_AFTER, what)
            elif stats.first_time("fault", device, kind):
                log.warning("SageAttention Triton error on %s, this call used SDPA: %s", device, what)
        elif stats.first_time("fault", device, kind, type(exc).__qualname__):
            log.warning("SageAttention kernel %s failed on %s, this call used SDPA (logged once per "
                        "kind): %s", kernel.name, device, what)

    def _announce_kernel(self, device: str, resolution: kernels.Resolution) -> None:
        tag = (device, self.settings.kernel)
        if tag in self._announced:
            return
        self._announced.add(tag)
        kernel = resolution.kernel
        stats.set_kernel_line(device, self.settings.kernel, {
            "kernel": kernel.name if kernel else None,
            "why": resolution.why,
            "version": kernel.version if kernel else kernels.installed().version,
        })
        if stats.first_time("announce", device, self.settings.kernel):
            if kernel is None:
                log.info("Sage Attention Scope: diffusion-model attention on %s stays on SDPA: %s", device,
                         resolution.why)
            else:
                log.info("SageAttention %s serves diffusion-model attention on %s (%s, %s)", kernel.version,
                         device, _device_name(device), kernel.name)


def _override_for(router: AttentionRouter) -> Callable:
    """The callable a scoped model's ``transformer_options[OVERRIDE_KEY]`` holds: a call shorter
    than ``min_seq_len`` - cross-attention to a text, audio - is sent to SDPA and counted here,
    from two shapes and nothing else; every other call goes to the router.

    A closure, not the router's own ``__call__``, because those short calls are host-bound (the
    H200 runs a 77-key cross-attention faster than the host issues it), so what is done per call
    shows in their time, and on a host busy with ComfyUI's own Python each attribute, method or
    tensor property read costs several times what it costs in a tight loop: measured on the H200
    host, a Counter's += cost ~2 us there, torch.compiler.is_compiling ~1 us, an instance's
    __call__ ~0.5 us more than a function's, ``Tensor.device`` ~0.7 us more than
    ``Tensor.get_device()``. Hence a plain dict of ints keyed by the device's index, and
    everything the decision needs bound once, here."""
    settings, previous = router.settings, router.previous
    short_below = settings.min_seq_len if settings.enabled and settings.min_seq_len > 1 else 0  # 0: no shortcut

    def override(func, *args, **kwargs):
        if short_below and not _dynamo_tracing():
            active = _active.get()
            if active is not None and active.router is router:
                try:  # eligibility.too_short, inlined
                    k = args[1]
                    short = k.shape[-2] < short_below or args[0].shape[-2] < short_below
                except (IndexError, AttributeError, TypeError):  # not two tensors: the router parses it
                    short = False
                if short:
                    counts, index = active.short_counts, k.get_device()
                    n = counts.get(index)
                    if n is None:  # this device's first short call in the generation: name it
                        active.generation.short_devices[index] = k.device
                        n = 0
                    counts[index] = n + 1
                    if previous is None:
                        return func(*args, **kwargs)
                    return previous(func, *args, **kwargs)
        return router(func, *args, **kwargs)

    override.sage_attention_router = router
    return override


def router_behind(override) -> AttentionRouter | None:
    """The router of an override a Scope node installed (``AttentionRouter.override``), or None."""
    router = override if isinstance(override, AttentionRouter) else getattr(override, "sage_attention_router", None)
    return router if isinstance(router, AttentionRouter) else None


def _device_label(args: tuple, kwargs: dict[str, Any]) -> str:
    q = args[0] if args else kwargs.get("q")
    return str(q.device) if isinstance(q, torch.Tensor) else "unknown"


def _device_name(device: str) -> str:
    dev = torch.device(device)
    if dev.type == "cuda":
        try:
            return torch.cuda.get_device_name(dev)
        except Exception:  # noqa: BLE001 - a name is decoration only
            return "CUDA device"
    return dev.type
