"""A call like one made earlier in the run (same signature: shapes, dtypes, device, heads, flags, block;
no mask) goes the same way without being decided again; declined, it is counted as that one was without
being parsed: from its second step on, every call of a model without masks. These tests hold the
shortcut to giving exactly what ``decide`` would: the counts and the routing table's, a change of step
window, anything the pack learns in the run, an out-of-memory, a mask."""
import pytest
import torch

from sage_attention_scope.nodes.status import payload
from sage_attention_scope.patches import Reason, Settings, apply_scope, router_of
from sage_attention_scope.patches import router as router_module
from sage_attention_scope.patches.reasons import TRITON_RETIRE_AFTER, Fault
from sas_harness.doubles import FakeClock, RecordingKernel, make_kernel, reference_attention, registered
from sas_harness.models import flux_conditioning, sample, tiny_flux
from sas_harness.run import attention, hnd, in_scope, last_generation, plain_attention

MEASURED = Settings(kernel="double", min_seq_len=8)
ALWAYS = Settings(kernel="double", min_seq_len=8, routing="always")


@pytest.fixture(scope="module")
def model():
    return tiny_flux()


@pytest.fixture
def decided(monkeypatch):
    """Each call ``decide`` rules on (the router's name for it)."""
    seen, real = [], router_module.decide

    def spy(call, *rest):
        seen.append(call.q_len)
        return real(call, *rest)
    monkeypatch.setattr(router_module, "decide", spy)
    return seen


def test_calls_like_one_declined_earlier_are_counted_alike_and_not_decided_again(session, model, decided):
    session.knowledge.clock = FakeClock(3.0, 1.0)  # SDPA faster: the bucket is measured slower
    q, k, v = hnd(n=32)
    with registered(session, make_kernel("double", RecordingKernel())):
        scoped = apply_scope(model, MEASURED, session)
        outs = in_scope(scoped, lambda: [attention(scoped, q, k, v, 2, skip_reshape=True) for _ in range(5)])
    # The first call was checked and timed on the kernel, the second decided, the other three seen.
    assert len(decided) == 2
    assert last_generation(session)["declined"] == {Reason.MEASURED_SLOWER.value: 5}
    [route] = payload(session)["devices"]["cpu"]["routing"]
    assert route["calls_last"] == 5 and not route["use_kernel"]
    expected = plain_attention(q, k, v, 2, skip_reshape=True)
    assert all(torch.equal(out, expected) for out in outs)


def test_each_signature_is_decided_once_whichever_way_it_goes(session, model, decided):
    settings = Settings(kernel="double", min_seq_len=48, routing="always", first_call_check=False)
    with registered(session, make_kernel("double", RecordingKernel())):
        scoped = apply_scope(model, settings, session)

        def generation():
            for n in (32, 32, 64, 64, 32):  # too short, too short, eligible, eligible, too short
                attention(scoped, *hnd(n=n), 2, skip_reshape=True)
        in_scope(scoped, generation)
    assert decided == [32, 64]
    assert last_generation(session)["kernel"] == 2
    assert last_generation(session)["declined"] == {Reason.TOO_SHORT.value: 3}


def test_what_the_pack_learns_in_the_run_is_decided_again(session, model, decided):
    """A device retired between two like calls: the second is counted as retired, not measured slower."""
    session.knowledge.clock = FakeClock(3.0, 1.0)
    q, k, v = hnd(n=32)
    with registered(session, make_kernel("double", RecordingKernel())):
        scoped = apply_scope(model, MEASURED, session)

        def generation():
            for _ in range(2):
                attention(scoped, q, k, v, 2, skip_reshape=True)
            for _ in range(TRITON_RETIRE_AFTER):
                session.knowledge.note_fault("cpu", Fault.TRITON)
            attention(scoped, q, k, v, 2, skip_reshape=True)
        in_scope(scoped, generation)
    assert last_generation(session)["declined"] == {Reason.MEASURED_SLOWER.value: 2, Reason.DEVICE_RETIRED.value: 1}


def test_a_step_entering_the_step_window_decides_again(session, model):
    """A call outside the step window is declined; the same call in the next step, inside it, is not."""
    kernel = RecordingKernel()
    q, k, v = hnd(n=32)
    with registered(session, make_kernel("double", kernel)):
        scoped = apply_scope(model, ALWAYS, session)
        router = router_of(scoped)

        def generation():
            for in_steps in (False, False, True):  # as sampling.one_evaluation sets it, then starts the step
                router.generation.in_steps = in_steps
                router.generation.step_started(None)
                attention(scoped, q, k, v, 2, skip_reshape=True)
        in_scope(scoped, generation)
    assert len(kernel.calls) == 1
    assert last_generation(session)["declined"] == {Reason.OUTSIDE_STEPS.value: 2}


def test_after_running_out_of_memory_a_like_call_is_counted_as_such(session, model):
    """A bucket measured slower, then the kernel runs out of memory on a call of another shape: a call like
    the first is now declined because of the memory, as ``decide`` says."""
    def out_of_memory_at_64_keys(q, k, v, **kwargs):
        if k.shape[-2] == 64:
            raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")
        return reference_attention(q, k, v, **kwargs)
    session.knowledge.clock = FakeClock(3.0, 1.0)
    slower, other = hnd(n=32), hnd(n=64)
    with registered(session, make_kernel("double", RecordingKernel(out_of_memory_at_64_keys))):
        scoped = apply_scope(model, MEASURED, session)

        def generation():
            attention(scoped, *slower, 2, skip_reshape=True)  # checked and measured: slower
            attention(scoped, *slower, 2, skip_reshape=True)  # decided: measured slower
            attention(scoped, *other, 2, skip_reshape=True)   # out of memory
            attention(scoped, *slower, 2, skip_reshape=True)
        in_scope(scoped, generation)
    assert last_generation(session)["declined"] == {Reason.MEASURED_SLOWER.value: 2, Reason.KERNEL_FAULT.value: 1,
                                                Reason.OOM_EARLIER.value: 1}


def test_a_call_with_a_mask_is_decided_each_time(session, model, decided):
    """Two calls alike but for what their masks hold: one masks nothing (dropped: the kernel), one masks
    keys differently per query (a kernel without masks declines it)."""
    kernel = RecordingKernel()
    q, k, v = hnd(n=32)
    varied = torch.randn(32, 32)
    with registered(session, make_kernel("double", kernel)):
        scoped = apply_scope(model, ALWAYS, session)

        def generation():
            for mask in (varied, torch.zeros(32, 32), varied):
                attention(scoped, q, k, v, 2, skip_reshape=True, mask=mask)
        in_scope(scoped, generation)
    assert len(decided) == 3 and len(kernel.calls) == 1
    assert last_generation(session)["declined"] == {Reason.MASK.value: 2}


def test_a_sampled_model_is_decided_in_its_first_step_only(session, model, decided):
    """Four steps of tiny FLUX.1 (a double- and a single-stream block, each its own block position), every
    call too short: its two calls are decided in the first step, and counted in all four."""
    with registered(session, make_kernel("double", RecordingKernel())):
        scoped = apply_scope(model, Settings(kernel="double"), session)
        sample(scoped, flux_conditioning(), steps=4)
    assert len(decided) == 2
    assert last_generation(session)["declined"] == {Reason.TOO_SHORT.value: 8}
