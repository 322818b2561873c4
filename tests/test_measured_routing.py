"""Measured routing with a fake clock: a bucket goes to the faster arm, ties go to SDPA, a
failing SageAttention never wins, and the decision holds for the session."""
import json
from pathlib import Path

import pytest
import torch

from sage_attention_scope.nodes.status import payload
from sage_attention_scope.nodes.status import render
from sage_attention_scope.nodes import routing_store
from sage_attention_scope.patches import Reason, Session, Settings, apply_scope, router_of, timing
from sas_harness.doubles import FakeClock, RecordingKernel, make_kernel, raising, reference_attention, registered
from sas_harness.models import tiny_flux
from sas_harness.run import attention, hnd, in_scope, last_generation, plain_attention

MEASURED = Settings(kernel="double", min_seq_len=8)


@pytest.fixture(scope="module")
def model():
    return tiny_flux()


def calls(session, model, settings, shapes, fake, kernel=None):
    """One generation making one call per (n, d) in ``shapes``, timed on ``fake``; the kernel's calls."""
    kernel = kernel or RecordingKernel()
    session.knowledge.clock = fake
    with registered(session, make_kernel("double", kernel)):
        scoped = apply_scope(model, settings, session)

        def generation():
            for n, d in shapes:
                q, k, v = hnd(n=n, d=d)
                attention(scoped, q, k, v, 2, skip_reshape=True)
        in_scope(scoped, generation)
    return kernel.calls


@pytest.mark.parametrize("sage_ms, sdpa_ms, on_sage", [
    (1.0, 2.0, True),     # SageAttention faster
    (3.0, 2.0, False),    # SDPA faster
    (2.0, 2.0, False),    # a tie goes to SDPA
    (1.99, 2.0, False),   # within the tie margin
])
def test_bucket_goes_to_the_faster_arm(session, model, sage_ms, sdpa_ms, on_sage):
    fake = FakeClock(sage_ms, sdpa_ms)
    calls(session, model, MEASURED, [(32, 64)] * 3, fake)
    counts = last_generation(session, "cpu")
    assert counts["kernel"] == (3 if on_sage else 0)
    assert counts["declined"] == ({} if on_sage else {Reason.MEASURED_SLOWER.value: 3})
    assert fake.timed == ["comfy", "kernel"] * timing.ROUNDS, "timed once per bucket (interleaved rounds), not per call"


def test_output_is_sdpa_when_sdpa_wins(session, model):
    q, k, v = hnd(n=32)
    session.knowledge.clock = FakeClock(5.0, 1.0)
    with registered(session, make_kernel("double", RecordingKernel())):
        scoped = apply_scope(model, MEASURED, session)
        outs = in_scope(scoped, lambda: [attention(scoped, q, k, v, 2, skip_reshape=True) for _ in range(2)])
    plain = plain_attention(q, k, v, 2, skip_reshape=True)
    assert all(torch.equal(out, plain) for out in outs)


def test_buckets_are_powers_of_two_per_head_size(session, model):
    fake = FakeClock(1.0, 2.0)
    calls(session, model, MEASURED, [(33, 64), (60, 64), (64, 64), (65, 64), (40, 32)], fake)
    buckets = sorted((d.key.q_bucket, d.key.head_dim) for d in session.knowledge.decisions.values())
    assert buckets == [(64, 32), (64, 64), (128, 64)]
    assert timing.bucket(1) == 1 and timing.bucket(4096) == 4096 and timing.bucket(4097) == 8192


def test_a_failing_kernel_never_wins(session, model):
    """The kernel answers the call, then raises when the clock runs it: SDPA takes the bucket."""
    fake = FakeClock(0.001, 100.0, run_arms=True)
    boom = raising(lambda: RuntimeError("boom while timed"))
    failing = RecordingKernel(
        lambda q, k, v, **kw: (reference_attention if not failing.calls[1:] else boom)(q, k, v, **kw))
    session.knowledge.clock = fake
    with registered(session, make_kernel("double", failing)):
        scoped = apply_scope(model, Settings(kernel="double", min_seq_len=8, first_call_check=False), session)
        q, k, v = hnd(n=32)
        in_scope(scoped, lambda: attention(scoped, q, k, v, 2, skip_reshape=True))
    (decision,) = session.knowledge.decisions.values()
    assert decision.kernel_ms is None and not decision.use_kernel
    assert last_generation(session, "cpu")["declined"] == {Reason.KERNEL_FAULT.value: 1}


def test_decision_holds_for_the_session_and_always_skips_timing(session, model):
    fake = FakeClock(3.0, 2.0)
    calls(session, model, MEASURED, [(32, 64)], fake)
    calls(session, model, MEASURED, [(32, 64)], fake)
    assert fake.timed == ["comfy", "kernel"] * timing.ROUNDS
    assert payload(session)["devices"]["cpu"]["session"]["declined"] == {Reason.MEASURED_SLOWER.value: 2}
    always = FakeClock(3.0, 2.0)
    assert len(calls(session, model, Settings(kernel="double", min_seq_len=8, routing="always"),
                     [(32, 64)], always)) == 1
    assert always.timed == [] and last_generation(session, "cpu")["kernel"] == 1


def test_status_shows_the_decisions(session, model):
    calls(session, model, MEASURED, [(32, 64)], FakeClock(4.6, 5.6))
    snap = payload(session)
    (routing,) = snap["devices"]["cpu"]["routing"]
    assert routing["use_kernel"] and routing["kernel_ms"] == 4.6
    assert ("routing cpu 32x32 tokens, float32 d64: double 1.22× ComfyUI's (double 4.600 ms; ComfyUI 5.600 ms); "
            "calls in the last generation: double 1") in render(snap)


def test_routing_setting_is_validated():
    with pytest.raises(ValueError, match="routing must be one of measured, always"):
        Settings(routing="fastest")


def test_the_clock_times_what_it_runs_on_a_cpu():
    import time
    ms = timing.event_clock("sdpa", lambda: time.sleep(0.005), torch.device("cpu"), repeats=3)
    assert 5.0 <= ms < 50.0


class SequenceClock:
    """Each arm takes the next of its given times: a transient in one round."""

    def __init__(self, sage, sdpa):
        self.ms = {"kernel": list(sage), "comfy": list(sdpa)}

    def __call__(self, arm, fn, device, bucket):
        return self.ms[arm].pop(0)


def test_one_transient_round_does_not_lock_the_bucket(session, model):
    # Round 2 of SageAttention hit a 10x spike; the median round still says Sage is faster.
    kernel_calls = calls(session, model, MEASURED, [(32, 64)] * 2,
                         SequenceClock(sage=[1.0, 10.0, 1.1], sdpa=[2.0, 2.1, 1.9]))
    assert len(kernel_calls) == 2
    [decision] = session.knowledge.decisions.values()
    assert decision.use_kernel and decision.kernel_ms == 1.1 and decision.comfy_ms == 2.0


# -- decisions kept between sessions (nodes/routing_store.py) -------------------------------

def _session(model, path, fake, fingerprint=None) -> tuple[dict, Session]:
    """One ComfyUI session - a fresh process: its own session and store object - making one
    eligible call; its counters and the session."""
    session = Session(store=routing_store.Store(path))
    calls(session, model, MEASURED, [(32, 64)], fake)
    return last_generation(session, "cpu"), session


def test_a_decision_two_sessions_agreed_on_is_reused_without_timing(model, tmp_path):
    path = tmp_path / routing_store.FILE
    for _ in range(routing_store.AGREEMENTS_TO_USE):
        fake = FakeClock(1.0, 2.0)
        assert _session(model, path, fake)[0]["kernel"] == 1
        assert fake.timed, "one session's measurement is not enough to skip timing"
    fake = FakeClock(5.0, 1.0)  # would say SDPA now; the agreed decision stands
    counts, later = _session(model, path, fake)
    assert counts["kernel"] == 1 and fake.timed == []
    [decision] = later.knowledge.decisions.values()
    assert decision.saved and decision.use_kernel and "(saved)" in render(payload(later))


def test_sessions_that_disagree_start_counting_again(model, tmp_path):
    path = tmp_path / routing_store.FILE
    _session(model, path, FakeClock(1.0, 2.0))   # Sage
    _session(model, path, FakeClock(3.0, 2.0))   # SDPA: the saved one is replaced, count 1
    fake = FakeClock(1.0, 2.0)
    _session(model, path, fake)                  # Sage again: count 1, still measured
    assert fake.timed
    [entries] = json.loads(path.read_text()).values()
    [entry] = entries.values()
    assert entry["use_kernel"] is True and entry["agreed"] == 1


def test_a_saved_decision_serves_only_the_setup_that_measured_it(model, tmp_path, monkeypatch):
    path = tmp_path / routing_store.FILE
    for _ in range(routing_store.AGREEMENTS_TO_USE):
        _session(model, path, FakeClock(1.0, 2.0))
    # Another GPU, driver, torch or sageattention: the saved decision does not apply.
    monkeypatch.setattr(timing, "fingerprint", lambda device, version: "another setup")
    fake = FakeClock(1.0, 2.0)
    _session(model, path, fake)
    assert fake.timed


def test_an_unusable_store_is_said_once_and_measuring_goes_on(model, tmp_path, caplog_sas):
    (tmp_path / "a_file").write_text("not a folder")
    fake = FakeClock(1.0, 2.0)
    assert _session(model, tmp_path / "a_file" / routing_store.FILE, fake)[0]["kernel"] == 1 and fake.timed
    said = [r.getMessage() for r in caplog_sas.records if "saved routing decisions" in r.getMessage()]
    assert len(said) == 1 and "could not write" in said[0]
    corrupt = tmp_path / "corrupt.json"
    corrupt.write_text("{not json")
    _session(model, corrupt, FakeClock(1.0, 2.0))
    assert json.loads(corrupt.read_text())  # measured, then written afresh


def test_the_store_lives_in_comfyuis_user_directory(monkeypatch):
    try:
        import folder_paths
    except ImportError:
        from comfy.cmd import folder_paths
    store = routing_store.default_store()
    assert store is not None and store.path == Path(folder_paths.get_user_directory()) / routing_store.FILE
    monkeypatch.undo()  # the session the pack made at load, not the test's, keeps its decisions there
    from sage_attention_scope import nodes
    assert nodes.SESSION.knowledge.store.path == store.path


# -- the host's time: what a host-bound model pays (LTX-Video 2B on an H100), and a GPU-bound one does not --

@pytest.mark.parametrize("host_extra_ms, host_bound, on_sage", [
    (0.0, True, True), (0.4, True, True), (0.6, True, False),  # the host sets the pace: its time counts
    (0.6, False, True), (5.0, False, True),                   # the GPU sets it: the host's time is hidden
])
def test_the_kernels_host_time_counts_only_where_the_host_sets_the_steps_pace(host_extra_ms, host_bound, on_sage):
    key = timing.BucketKey("cuda:0", "k", "bfloat16", 64, 8192, 8192)
    decision = timing.Decision(key, 1.0, 1.5, host_extra_ms=host_extra_ms)  # 0.5 ms faster on the device
    assert decision.use_kernel_when(host_bound) is on_sage
    assert decision.use_kernel  # the device's verdict, what the routing store agrees on
    assert ("host +" in decision.describe()) is (host_extra_ms > 0)
    assert ("where the host sets" in decision.describe()) is (host_extra_ms >= 0.5)


def test_a_device_loss_is_never_made_up_by_the_host():
    key = timing.BucketKey("cuda:0", "k", "bfloat16", 64, 8192, 8192)
    for host_bound in (False, True):
        assert not timing.Decision(key, 2.0, 1.5, host_extra_ms=-1.0).use_kernel_when(host_bound)
        assert not timing.Decision(key, None, 1.5).use_kernel_when(host_bound)


@pytest.mark.parametrize("host_ms, gpu_ms, host_bound", [
    (66.0, 67.0, True),     # LTX-Video 2B: the GPU ran as fast as the host launched
    (60.0, 180.0, False),   # FLUX.1 1024²: the GPU's queue drained long after the launches
    (10.0, 10.9, True), (10.0, 11.1, False),
])
def test_a_step_is_host_bound_where_its_gpu_span_stays_within_its_host_time(host_ms, gpu_ms, host_bound):
    assert timing.host_sets_pace(host_ms, gpu_ms) is host_bound


def test_routing_follows_the_pace_of_the_last_step(session, model):
    """One bucket measured 0.5 ms faster on the device at 0.6 ms more host time: the kernel serves it
    while the GPU sets the pace, SDPA while the host does."""
    import dataclasses
    kernel = RecordingKernel()
    session.knowledge.clock = FakeClock(1.0, 1.5)
    with registered(session, make_kernel("double", kernel)):
        scoped = apply_scope(model, MEASURED, session)
        router = router_of(scoped)

        def generation():
            q, k, v = hnd(n=64)
            attention(scoped, q, k, v, 2, skip_reshape=True)  # checked and measured: a CPU has no host extra
            [(key, decision)] = session.knowledge.decisions.items()
            session.knowledge.decisions[key] = dataclasses.replace(decision, host_extra_ms=0.6)
            routed = []
            for host_bound in (False, True, False):  # three steps, each of that pace
                router.generation.host_bound = host_bound  # as step_started reads it from the step before
                router.generation.step_started(None)
                before = len(kernel.calls)
                attention(scoped, q, k, v, 2, skip_reshape=True)
                routed.append(len(kernel.calls) > before)
            return routed
        assert in_scope(scoped, generation) == [True, False, True]
    assert last_generation(session)["declined"] == {Reason.MEASURED_SLOWER.value: 1}


def test_a_step_that_checks_or_times_a_kernel_is_marked_as_having_waited(session, model):
    """Such a step's host time includes waiting for the GPU: its pace is not read."""
    session.knowledge.clock = FakeClock(1.0, 2.0)
    with registered(session, make_kernel("double", RecordingKernel())):
        scoped = apply_scope(model, MEASURED, session)
        router = router_of(scoped)

        def generation():
            q, k, v = hnd(n=64)
            waited = []
            for _ in range(2):
                router.generation.step_started(torch.device("cpu"))
                attention(scoped, q, k, v, 2, skip_reshape=True)
                waited.append(router.generation.waited)
            return waited
        assert in_scope(scoped, generation) == [True, False]  # checked and timed, then neither


def test_a_generation_on_the_cpu_times_no_step_and_keeps_the_devices_verdict():
    from sage_attention_scope.patches.state.generation import Generation
    generation = Generation()
    for device in (torch.device("cpu"), None):  # None: a latent without one device (LTX-2's nested one)
        generation.step_started(device)
        generation.step_launched()
        assert generation.step_timer is None and generation.host_bound is False


def test_time_arms_takes_each_arms_host_time_on_a_gpu_and_not_on_the_cpu():
    """The clock here reports the device's time only; the kernel arm keeps the host 2 ms longer a call."""
    import time

    def clock(arm, fn, device, key):
        fn()
        return {"kernel": 1.0, "comfy": 2.0}[arm]
    key = timing.BucketKey("cuda:0", "k", "bfloat16", 64, 8192, 8192)
    slow_host = lambda: time.sleep(0.002)  # noqa: E731
    timed = timing.time_arms(clock, {key: slow_host}, lambda: None, torch.device("cuda", 0))
    sage, sdpa, host_extra = timed.kernel_ms[key], timed.comfy_ms, timed.host_extra_ms[key]
    assert (sage, sdpa) == (1.0, 2.0) and 1.5 < host_extra < 50
    assert not timing.Decision(key, sage, sdpa, host_extra_ms=host_extra).use_kernel_when(True)  # 1 ms gained, 2 lost
    assert timing.time_arms(clock, {key: slow_host}, lambda: None, torch.device("cpu")).host_extra_ms[key] == 0.0


def test_decisions_saved_under_the_device_only_rule_are_measured_again(model, tmp_path, monkeypatch):
    path = tmp_path / routing_store.FILE
    real = timing.fingerprint
    monkeypatch.setattr(timing, "fingerprint", lambda device, version: real(device, version).replace(
        f" | rule {timing.RULE}", ""))  # as the store was written before the host's time counted
    for _ in range(routing_store.AGREEMENTS_TO_USE):
        _session(model, path, FakeClock(1.0, 2.0))
    monkeypatch.setattr(timing, "fingerprint", real)
    fake = FakeClock(1.0, 2.0)
    _session(model, path, fake)
    assert fake.timed, "a decision saved under the earlier rule was reused"
