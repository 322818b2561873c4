"""Whole model evaluations with and without the Scope: stepping aside and the step trial. It plugs into the
evaluation wrapper (sampling.one_evaluation) through one hook, ``evaluate``, which runs an evaluation
one of two ways, with the Scope (``Runs.with_scope``) or without it (``Runs.without_scope``):

- **Stepping aside.** Where the evaluation before sent every call to ComfyUI's attention for a reason
  ``decide`` gives, an evaluation like it in the same epoch runs without the Scope, its calls counted
  from the routes already known (``StepAside``).
- **The step trial.** Per-call timings can miss what a kernel costs inside a step (its host time in a
  host-bound step, its launches among the model's). So under measured routing, on a device the step
  clock times, evaluations of a shape whose routes are settled are timed with the Scope and without it
  in turns; a first pair far apart (``DECISIVE``) makes the verdict alone, a closer one takes the medians
  of ``TRIAL_PAIRS`` pairs (a small model's step varies by more than the margin from one to the next).
  One trial a shape for the session: its samples are the knowledge's, so a generation too short to finish
  it leaves them to the next. The verdict holds for evaluations of that shape and epoch for the session
  (``StepVerdict``), and where the Scope is slower it steps aside from them (reason ``step_slower``)."""
from __future__ import annotations

import logging
from typing import Any, Callable, NamedTuple, Optional

import torch

from ..state.generation import CondPart, Epoch, EvaluationKey, Generation, StepAside, StepShape, StepTrial
from ..state.knowledge import Knowledge
from ..state.ledger import Tally
from ..reasons import Reason
from ..settings import ROUTING_MEASURED
from ..timing import StepVerdict, median

log = logging.getLogger(__name__)

TRIAL_PAIRS = 3   # the most pairs of evaluations (with and without the Scope) a trial takes
DECISIVE = 1.25   # a first pair whose times differ by this factor or more decides alone


class Runs(NamedTuple):
    """One model evaluation, ready to run with the Scope (guarded against non-finite kernel output) or
    without it."""
    with_scope: Callable[[], Any]
    without_scope: Callable[[], Any]


def evaluation_key(conds, x_in, timestep) -> Optional[EvaluationKey]:
    """The evaluation's key, or None where its calls can change in ways this cannot see: a ControlNet (on
    and off by its own percent) or a latent that is not one tensor."""
    if not isinstance(x_in, torch.Tensor):
        return None
    now = float(timestep[0])
    parts = []
    for cond_list in conds:
        for cond in cond_list or ():
            if not isinstance(cond, dict) or cond.get("control") is not None:
                return None
            outside = ("timestep_start" in cond and now > cond["timestep_start"]) or (
                "timestep_end" in cond and now < cond["timestep_end"])
            parts.append(CondPart(id(cond), not outside))
    return EvaluationKey(tuple(x_in.shape), x_in.dtype, x_in.device, tuple(parts))


def evaluate(router, runs: Runs, evaluation: Optional[EvaluationKey]):
    """Runs one evaluation of ``router``'s model (``evaluation``: its key, None where the Scope cannot
    tell it from another or is not the override there): aside where a verdict or the evaluation before
    says so, as the second half of a trial, timed as a trial's first half, or plainly."""
    generation, knowledge = router.generation, router.session.knowledge
    epoch = generation.epoch(knowledge.version)
    shape = None
    if evaluation is not None and router.settings.routing == ROUTING_MEASURED and (
            knowledge.step_clock.times(evaluation.device)):
        shape = step_shape(router.model_label, evaluation)
    verdict = None if shape is None else knowledge.step_verdict(shape, epoch)
    if verdict is not None and not verdict.keep_scope:
        count_evaluation(generation, verdict.calls, Reason.STEP_SLOWER)
        return runs.without_scope()
    if stepping_aside(generation, evaluation, epoch):
        count_stepped_aside(generation)
        return runs.without_scope()
    trial = None if shape is None or verdict is not None else knowledge.step_trial(shape, epoch)
    if trial is not None and trial.comfy_turn():
        return compare_step(router, trial, runs.without_scope)
    calls_before, before = generation.calls_seen, generation.save_tallies()
    if shape is None or verdict is not None:
        out = runs.with_scope()
    else:
        out, scope_ms = knowledge.step_clock("scope", runs.with_scope, evaluation.device)
        offer_trial(generation, knowledge, shape, epoch, scope_ms, before, trial)
    note_step(generation, evaluation, generation.epoch(knowledge.version), before,
              generation.calls_seen - calls_before)
    return out


def step_shape(model_label: str, evaluation: EvaluationKey) -> StepShape:
    conds_taking_part = sum(1 for part in evaluation.conds if part.taking_part)
    return StepShape(model_label, evaluation.latent_shape, evaluation.dtype, evaluation.device, conds_taking_part)


def stepping_aside(generation: Generation, evaluation: Optional[EvaluationKey], epoch: Epoch) -> bool:
    """Whether this evaluation runs without the Scope: the one before it was like it, sent every call to
    ComfyUI's attention, and the epoch is the same. Else forgets the one before."""
    aside = generation.aside
    if aside is None:
        return False
    if evaluation is not None and (aside.evaluation, aside.epoch) == (evaluation, epoch):
        return True
    generation.aside = None
    return False


def count_stepped_aside(generation: Generation) -> None:
    """Counts an evaluation the Scope stepped aside from with the routes its calls had the time before."""
    for device, profile in generation.aside.calls.items():
        tally = generation.tallies[device]
        tally.add(profile)
        tally.counted_from_routes += profile.calls()


def count_evaluation(generation: Generation, calls: dict[str, Tally], reason: Reason) -> None:
    """Counts an evaluation run without the Scope because of its step's timing (``reason``), its calls
    (``calls``: per device, those of an evaluation like it) kept on ComfyUI's attention."""
    for device, profile in calls.items():
        tally = generation.tallies[device]
        tally.declined[reason] += profile.calls()
        tally.counted_from_routes += profile.calls()


def note_step(generation: Generation, evaluation: Optional[EvaluationKey], epoch: Epoch, before: dict[str, Tally],
              calls: int) -> None:
    """After an evaluation the Scope routed: where every one of its ``calls`` went to ComfyUI's attention
    for a reason ``decide`` gives (no kernel ran, none failed), the next one like it may step aside."""
    generation.aside = None
    if evaluation is None or calls == 0:
        return
    profile = {}
    for device, tally in generation.tallies.items():
        change = tally.since(before.get(device))
        if change.kernel or sum(change.faults.values()):
            return
        if change.calls():
            profile[device] = change
    if sum(change.calls() for change in profile.values()) == calls:
        generation.aside = StepAside(evaluation, epoch, profile)


def offer_trial(generation: Generation, knowledge: Knowledge, shape: StepShape, epoch: Epoch, scope_ms: float,
                before: dict[str, Tally], going_on: Optional[StepTrial]) -> None:
    """After an evaluation timed with the Scope: where it ran kernels, none failed and nothing was checked or
    timed in it, its time is a sample of the trial (``going_on``, or a new one), and the next one of its
    shape is timed without the Scope. One that waited for a check or a timing is no sample (the trial goes
    on); one that ran no kernel or where one failed ends the trial unjudged (not the routes it times)."""
    waited = generation.waited
    generation.waited = True  # the clock's synchronisation says nothing of the pace: not read
    if waited:
        return
    calls = generation.calls_since(before)
    ran_kernels = any(change.kernel for change in calls.values())
    faulted = any(sum(change.faults.values()) for change in calls.values())
    if not ran_kernels or faulted:
        knowledge.end_step_trial(shape)
        return
    trial = going_on if going_on is not None else StepTrial(shape, epoch, calls)
    trial.scope_ms.append(scope_ms)
    knowledge.keep_step_trial(trial)


def trial_verdict(trial: StepTrial) -> Optional[StepVerdict]:
    """The trial's verdict once its samples make one: a first pair ``DECISIVE`` apart, or ``TRIAL_PAIRS``
    pairs (their medians); else None (it goes on)."""
    pairs = len(trial.comfy_ms)
    if pairs == 0:
        return None
    first = trial.comfy_ms[0] / trial.scope_ms[0]
    if pairs < TRIAL_PAIRS and 1 / DECISIVE < first < DECISIVE:
        return None
    return StepVerdict(median(trial.scope_ms[:pairs]), median(trial.comfy_ms), trial.calls, pairs)


def compare_step(router, trial: StepTrial, without_scope: Callable[[], Any]):
    """A trial's evaluation without the Scope, timed (its output stands); where the samples now make a
    verdict, it holds for evaluations of that shape and epoch for the session (said in the log)."""
    generation, knowledge = router.generation, router.session.knowledge
    generation.waited = True
    out, comfy_ms = knowledge.step_clock("comfy", without_scope, trial.shape.device)
    trial.comfy_ms.append(comfy_ms)
    count_evaluation(generation, trial.calls, Reason.STEP_TRIAL)
    generation.measuring_ms += comfy_ms
    verdict = trial_verdict(trial)
    if verdict is not None:
        knowledge.record_step_verdict(trial.shape, trial.epoch, verdict)
        log.log(logging.INFO if verdict.keep_scope else logging.WARNING, "Sage Attention Scope timed %s: %s.",
                router.model_label, verdict.describe())
    return out
