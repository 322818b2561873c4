"""Every SDPA reason, and the SageAttention path's layout handling, through ComfyUI's own
optimized_attention (wrap_attn) with a scoped model's transformer_options."""
import pytest
import torch

from sage_attention_scope.patches import Reason, Settings, apply_scope, stats
from sas_doubles import RecordingKernel, make_kernel, registered, smoothing_in_place
from sas_models import tiny_flux
from sas_scope import attention, hnd, in_scope, last_generation


@pytest.fixture(scope="module")
def model():
    return tiny_flux()


def run(model, settings, q, k, v, heads, *, kernel=None, spec=None, **kwargs):
    """One attention call inside a fresh scope; returns (output, kernel calls, counters)."""
    kernel = kernel or RecordingKernel()
    with registered(make_kernel("double", kernel, **(spec or {}))):
        scoped = apply_scope(model, settings)
        out = in_scope(scoped, lambda: attention(scoped, q, k, v, heads, **kwargs))
    return out, kernel.calls, last_generation(str(q.device))


ON = Settings(kernel="double", min_seq_len=8)


def sdpa_only(model, q, k, v, heads, **kwargs):
    """What plain ComfyUI returns for the same call."""
    import comfy.ldm.modules.attention as comfy_attention
    return comfy_attention.optimized_attention(q, k, v, heads, **kwargs)


@pytest.mark.parametrize("case, settings, spec, make, kwargs, reason", [
    ("disabled", Settings(enabled=False, kernel="double"), None, lambda: hnd(), {}, Reason.DISABLED),
    ("too short q", Settings(kernel="double", min_seq_len=33), None, lambda: hnd(n=32), {}, Reason.TOO_SHORT),
    ("opt-out", ON, None, lambda: hnd(), {"low_precision_attention": False}, Reason.LOW_PRECISION_OPT_OUT),
    ("dtype", ON, {"dtypes": {torch.float16, torch.bfloat16}}, lambda: hnd(), {}, Reason.DTYPE),
    ("head size", ON, {"head_dims": {128}}, lambda: hnd(d=64), {}, Reason.HEAD_DIM),
    ("not cuda", ON, {"device_types": {"cuda"}}, lambda: hnd(), {}, Reason.NOT_CUDA),
    ("gqa", ON, None, lambda: (hnd()[0], *hnd(h=1)[1:]), {"enable_gqa": True}, Reason.LAYOUT),
    ("strided", ON, None, lambda: tuple(t.transpose(-1, -2) for t in hnd(n=64, d=64)), {}, Reason.LAYOUT),
])
def test_each_reason_keeps_sdpa_and_is_counted(model, case, settings, spec, make, kwargs, reason):
    q, k, v = make()
    out, calls, counts = run(model, settings, q, k, v, q.shape[1], spec=spec, skip_reshape=True, **kwargs)
    assert calls == []
    assert counts["sage"] == 0 and counts["sdpa"] == {reason.value: 1}
    assert torch.equal(out, sdpa_only(model, q, k, v, q.shape[1], skip_reshape=True, **kwargs))


def test_short_key_alone_keeps_sdpa(model):
    q, _, _ = hnd(n=64)
    _, k, v = hnd(n=16)
    _, calls, counts = run(model, Settings(kernel="double", min_seq_len=32), q, k, v, 2, skip_reshape=True)
    assert calls == [] and counts["sdpa"] == {Reason.TOO_SHORT.value: 1}


def test_a_mask_that_masks_keeps_sdpa(model):
    q, k, v = hnd()
    mask = torch.zeros(1, 1, 32, 32)
    mask[..., :4] = float("-inf")
    out, calls, counts = run(model, ON, q, k, v, 2, skip_reshape=True, mask=mask)
    assert calls == [] and counts["sdpa"] == {Reason.MASK.value: 1}
    assert torch.equal(out, sdpa_only(model, q, k, v, 2, skip_reshape=True, mask=mask))


@pytest.mark.parametrize("mask", [torch.zeros(1, 1, 32, 32), torch.ones(1, 32, 32, dtype=torch.bool)])
def test_a_mask_that_masks_nothing_is_dropped(model, mask):
    q, k, v = hnd()
    out, calls, counts = run(model, ON, q, k, v, 2, skip_reshape=True, mask=mask)
    assert len(calls) == 1 and counts["sage"] == 1 and counts["masks_dropped"] == 1
    torch.testing.assert_close(out, sdpa_only(model, q, k, v, 2, skip_reshape=True), rtol=1e-5, atol=1e-5)


def test_hnd_inputs_pass_through_without_copies(model):
    q, k, v = hnd()
    out, calls, counts = run(model, ON, q, k, v, 2, skip_reshape=True)
    got = calls[0]
    assert got["layout"] == "HND"
    assert all(got[n] is t for n, t in zip("qkv", (q, k, v)))
    assert out.shape == (1, 32, 2 * 64) and counts["sage"] == 1
    torch.testing.assert_close(out, sdpa_only(model, q, k, v, 2, skip_reshape=True), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("skip_output_reshape, shape", [(False, (1, 32, 128)), (True, (1, 2, 32, 64))])
def test_nhd_inputs_are_views_and_outputs_match_comfyui(model, skip_output_reshape, shape):
    q, k, v = (t.transpose(1, 2).reshape(1, 32, 128) for t in hnd())
    out, calls, counts = run(model, ON, q, k, v, 2, skip_output_reshape=skip_output_reshape)
    got = calls[0]
    assert got["layout"] == "NHD" and got["q"].shape == (1, 32, 2, 64)
    assert all(got[n].data_ptr() == t.data_ptr() for n, t in zip("qkv", (q, k, v)))
    assert out.shape == shape and counts["sage"] == 1
    torch.testing.assert_close(out, sdpa_only(model, q, k, v, 2, skip_output_reshape=skip_output_reshape),
                               rtol=1e-5, atol=1e-5)


def test_a_custom_scale_is_forwarded(model):
    q, k, v = hnd()
    out, calls, _ = run(model, ON, q, k, v, 2, skip_reshape=True, scale=0.05)
    assert calls[0]["sm_scale"] == 0.05
    torch.testing.assert_close(out, sdpa_only(model, q, k, v, 2, skip_reshape=True, scale=0.05),
                               rtol=1e-5, atol=1e-5)


def test_smooth_k_never_writes_the_callers_k(model):
    q, k, v = hnd()
    k = k + 3.0  # an offset smoothing would remove
    k_before = k.clone()
    kernel = RecordingKernel(smoothing_in_place)
    settings = Settings(kernel="double", min_seq_len=8, smooth_k=True)
    out, calls, counts = run(model, settings, q, k, v, 2, kernel=kernel, spec={"smooth_k_in_place": True},
                             skip_reshape=True)
    assert torch.equal(k, k_before)
    assert calls[0]["smooth_k"] is False and counts["sage"] == 1
    torch.testing.assert_close(out, sdpa_only(model, q, k, v, 2, skip_reshape=True), rtol=1e-4, atol=1e-4)


def test_a_retired_device_keeps_sdpa(model):
    stats.retire("cpu", "test")  # the hnd() tensors live on the CPU
    q, k, v = hnd()
    _, calls, counts = run(model, ON, q, k, v, 2, skip_reshape=True)
    assert calls == [] and counts["sdpa"] == {Reason.DEVICE_RETIRED.value: 1}


def test_reason_labels_cover_every_reason():
    assert all(r.label for r in Reason)


# -- the per-signature plan: worked out once, per-call reasons still per call ----------------

def _counting_parses(monkeypatch) -> list:
    from sage_attention_scope.patches.eligibility import AttentionCall
    parsed = []
    original = AttentionCall.parse
    monkeypatch.setattr(AttentionCall, "parse", classmethod(lambda cls, a, kw: parsed.append(1) or original(a, kw)))
    return parsed


def test_a_signatures_reasons_are_worked_out_once(model, monkeypatch):
    """Declined calls cost a signature and a lookup: ten calls of a head size the kernel does
    not take parse the call once."""
    parsed = _counting_parses(monkeypatch)
    q, k, v = hnd(d=64)
    with registered(make_kernel("double", RecordingKernel(), head_dims={128})):
        scoped = apply_scope(model, ON)
        in_scope(scoped, lambda: [attention(scoped, q, k, v, 2, skip_reshape=True) for _ in range(10)])
    assert len(parsed) == 1
    assert last_generation("cpu")["sdpa"] == {Reason.HEAD_DIM.value: 10}


@pytest.mark.parametrize("skip_reshape", [True, False])
def test_too_short_calls_are_declined_from_their_shapes_alone(model, monkeypatch, skip_reshape):
    """The cheapest decline comes first: no parse, no signature, and a short call counts as
    too short whatever else it is (here also of a dtype the kernel does not take)."""
    parsed = _counting_parses(monkeypatch)
    q, k, v = hnd(n=64)
    _, k, v = hnd(n=16)
    heads = q.shape[1]
    if not skip_reshape:  # (B, N, H*D): the sequence axis is still the second-to-last
        q, k, v = (t.transpose(1, 2).flatten(-2) for t in (q, k, v))
    kernel = RecordingKernel()
    with registered(make_kernel("double", kernel, dtypes={torch.float16})):
        scoped = apply_scope(model, Settings(kernel="double", min_seq_len=32))
        outs = in_scope(scoped, lambda: [attention(scoped, q, k, v, heads, skip_reshape=skip_reshape)
                                         for _ in range(3)])
    assert parsed == [] and kernel.calls == []
    assert last_generation("cpu")["sdpa"] == {Reason.TOO_SHORT.value: 3}
    assert torch.equal(outs[0], sdpa_only(model, q, k, v, heads, skip_reshape=skip_reshape))


def test_a_disabled_scope_counts_short_calls_as_disabled(model):
    q, k, v = hnd(n=16)
    _, calls, counts = run(model, Settings(enabled=False, kernel="double", min_seq_len=32), q, k, v, 2,
                           skip_reshape=True)
    assert calls == [] and counts["sdpa"] == {Reason.DISABLED.value: 1}


def test_calls_of_one_signature_keep_their_own_strides_and_masks(model):
    """Same shapes, dtypes and flags as an eligible call, but strided or masked: still SDPA."""
    q, k, v = hnd(n=64)
    strided = tuple(t.transpose(-1, -2).contiguous().transpose(-1, -2) for t in (q, k, v))
    masking = torch.zeros(1, 1, 64, 64)
    masking[..., :4] = float("-inf")
    kernel = RecordingKernel()
    with registered(make_kernel("double", kernel)):
        scoped = apply_scope(model, ON)
        outs = in_scope(scoped, lambda: [attention(scoped, q, k, v, 2, skip_reshape=True),
                                         attention(scoped, *strided, 2, skip_reshape=True),
                                         attention(scoped, q, k, v, 2, skip_reshape=True, mask=masking),
                                         attention(scoped, q, k, v, 2, skip_reshape=True)])
    counts = last_generation("cpu")
    assert len(kernel.calls) == 2 and counts["sage"] == 2
    assert counts["sdpa"] == {Reason.LAYOUT.value: 1, Reason.MASK.value: 1}
    assert torch.equal(outs[1], sdpa_only(model, *strided, 2, skip_reshape=True))
    assert torch.equal(outs[2], sdpa_only(model, q, k, v, 2, skip_reshape=True, mask=masking))


def test_a_kernel_that_appears_later_outdates_the_plan(model):
    """A plan made while no kernel of that name existed is not kept once one is registered."""
    q, k, v = hnd()
    kernel = RecordingKernel()
    scoped = apply_scope(model, Settings(kernel="late", min_seq_len=8))

    def calls():
        attention(scoped, q, k, v, 2, skip_reshape=True)
        with registered(make_kernel("late", kernel)):
            attention(scoped, q, k, v, 2, skip_reshape=True)
    in_scope(scoped, calls)
    assert len(kernel.calls) == 1
    # Before: no kernel of that name, and the CPU has no SageAttention.
    assert last_generation("cpu")["sage"] == 1 and last_generation("cpu")["sdpa"] == {Reason.NOT_CUDA.value: 1}


def test_the_shortcuts_counts_fold_into_the_device_and_a_rerun_step_drops_its_own():
    """The too-short shortcut counts in a plain dict; a step that runs again (non-finite
    kernel output) must not count its discarded pass, and the generation's end folds the rest."""
    gen = stats.begin_generation("unit")
    cpu = torch.empty(0).get_device()  # the shortcut's key: the device's index, named once
    gen.short_devices[cpu] = torch.device("cpu")
    gen.too_short[cpu] = 3
    before_rerun = gen.copy_counters()  # a step boundary: folded, then copied
    assert before_rerun["cpu"].sdpa == {Reason.TOO_SHORT: 3} and gen.too_short == {}
    gen.too_short[cpu] = 2  # the discarded pass
    gen.restore_counters(before_rerun)
    gen.too_short[cpu] = 2  # the pass that stands
    stats.end_generation(gen)
    assert last_generation("cpu")["sdpa"] == {Reason.TOO_SHORT.value: 5}
