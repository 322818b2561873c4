"""Every SDPA reason, and the SageAttention path's layout handling, through ComfyUI's own
optimized_attention (wrap_attn) with a scoped model's transformer_options."""
import pytest
import torch

from sage_attention_scope.patches import Reason, Settings, apply_scope
from sas_harness.doubles import RecordingKernel, make_kernel, registered, smoothing_in_place
from sas_harness.models import tiny_flux
from sas_harness.run import attention, hnd, in_scope, last_generation, plain_attention


@pytest.fixture(scope="module")
def model():
    return tiny_flux()


def run(session, model, settings, q, k, v, heads, *, kernel=None, spec=None, **kwargs):
    """One attention call inside a fresh scope; returns (output, kernel calls, counters)."""
    kernel = kernel or RecordingKernel()
    with registered(session, make_kernel("double", kernel, **(spec or {}))):
        scoped = apply_scope(model, settings, session)
        out = in_scope(scoped, lambda: attention(scoped, q, k, v, heads, **kwargs))
    return out, kernel.calls, last_generation(session, str(q.device))


ON = Settings(kernel="double", min_seq_len=8)


@pytest.mark.parametrize("case, settings, spec, make, kwargs, reason", [
    ("disabled", Settings(enabled=False, kernel="double"), None, lambda: hnd(), {}, Reason.DISABLED),
    ("too short q", Settings(kernel="double", min_seq_len=33), None, lambda: hnd(n=32), {}, Reason.TOO_SHORT),
    ("opt-out", ON, None, lambda: hnd(), {"low_precision_attention": False}, Reason.LOW_PRECISION_OPT_OUT),
    ("dtype", ON, {"dtypes": {torch.float16, torch.bfloat16}}, lambda: hnd(), {}, Reason.DTYPE),
    ("head size", ON, {"head_dims": {128}}, lambda: hnd(d=64), {}, Reason.HEAD_DIM),
    ("not cuda", ON, {"devices": {"cuda"}}, lambda: hnd(), {}, Reason.NOT_CUDA),
    # grouped-query k/v without enable_gqa: a shape mismatch no kernel is handed
    ("gqa unflagged", ON, None, lambda: (hnd()[0], *hnd(h=1)[1:]), {}, Reason.LAYOUT),
])
def test_each_reason_keeps_sdpa_and_is_counted(session, model, case, settings, spec, make, kwargs, reason):
    q, k, v = make()
    out, calls, counts = run(session, model, settings, q, k, v, q.shape[1], spec=spec, skip_reshape=True, **kwargs)
    assert calls == []
    assert counts["kernel"] == 0 and counts["declined"] == {reason.value: 1}
    assert torch.equal(out, plain_attention(q, k, v, q.shape[1], skip_reshape=True, **kwargs))


def _comfyui_takes_grouped_query_calls() -> bool:
    """Whether this ComfyUI's attention reads enable_gqa (0.33 does; 0.3.75 has no such call)."""
    import inspect

    import comfy.ldm.modules.attention as comfy_attention
    return "enable_gqa" in inspect.getsource(comfy_attention)


@pytest.mark.skipif(not _comfyui_takes_grouped_query_calls(),
                    reason="this ComfyUI's attention has no grouped-query calls (no enable_gqa)")
@pytest.mark.parametrize("skip_reshape", [True, False], ids=["HND", "NHD"])
def test_grouped_query_calls_reach_the_kernel_with_k_and_v_repeated_to_the_query_heads(session, model, skip_reshape):
    """ComfyUI 0.33 hands OmniGen2's 1 key/value head beside its 2 query heads (enable_gqa): the kernel gets k
    and v repeated, query head h reading key/value head h // 2, as SDPA's enable_gqa reads them; counted copied."""
    q, _, _ = hnd(h=4, n=64)
    _, k, v = hnd(h=2, n=64, seed=1)
    if not skip_reshape:  # (B, N, H*D), as ComfyUI hands the projections before splitting heads
        q, k, v = (t.transpose(1, 2).flatten(-2) for t in (q, k, v))
    out, calls, counts = run(session, model, ON, q, k, v, 4, skip_reshape=skip_reshape, enable_gqa=True)
    assert counts["kernel"] == 1 and counts["copied"] == 1 and counts["declined"] == {}
    heads_axis = 1 if skip_reshape else 2
    assert calls[0]["k"].shape[heads_axis] == 4
    torch.testing.assert_close(out, plain_attention(q, k, v, 4, skip_reshape=skip_reshape, enable_gqa=True))


def test_a_last_dimension_not_contiguous_is_copied_for_the_kernel(session, model):
    """comfy-kitchen's CPU RoPE (0.2.40) hands FLUX's q/k with a last dimension of stride 2 on ComfyUI 0.33:
    the kernel gets contiguous copies (SageAttention reads rows), counted copied, and the result is SDPA's."""
    q, k, v = (t.transpose(-1, -2) for t in hnd(n=64, d=64))  # (B, H, N, D) whose last dimension has stride N
    out, calls, counts = run(session, model, ON, q, k, v, 2, skip_reshape=True)
    assert counts["kernel"] == 1 and counts["copied"] == 1
    assert all(calls[0][t].is_contiguous() for t in ("q", "k", "v"))
    torch.testing.assert_close(out, plain_attention(q, k, v, 2, skip_reshape=True))


def test_short_key_alone_keeps_sdpa(session, model):
    q, _, _ = hnd(n=64)
    _, k, v = hnd(n=16)
    _, calls, counts = run(session, model, Settings(kernel="double", min_seq_len=32), q, k, v, 2, skip_reshape=True)
    assert calls == [] and counts["declined"] == {Reason.TOO_SHORT.value: 1}


def test_a_mask_that_masks_keeps_sdpa(session, model):
    q, k, v = hnd()
    mask = torch.zeros(1, 1, 32, 32)
    mask[..., :4] = float("-inf")
    out, calls, counts = run(session, model, ON, q, k, v, 2, skip_reshape=True, mask=mask)
    assert calls == [] and counts["declined"] == {Reason.MASK.value: 1}
    assert torch.equal(out, plain_attention(q, k, v, 2, skip_reshape=True, mask=mask))


@pytest.mark.parametrize("mask", [torch.zeros(1, 1, 32, 32), torch.ones(1, 32, 32, dtype=torch.bool)])
def test_a_mask_that_masks_nothing_is_dropped(session, model, mask):
    q, k, v = hnd()
    out, calls, counts = run(session, model, ON, q, k, v, 2, skip_reshape=True, mask=mask)
    assert len(calls) == 1 and counts["kernel"] == 1 and counts["masks_dropped"] == 1
    torch.testing.assert_close(out, plain_attention(q, k, v, 2, skip_reshape=True), rtol=1e-5, atol=1e-5)


def test_hnd_inputs_pass_through_without_copies(session, model):
    q, k, v = hnd()
    out, calls, counts = run(session, model, ON, q, k, v, 2, skip_reshape=True)
    got = calls[0]
    assert got["layout"] == "HND"
    assert all(got[n] is t for n, t in zip("qkv", (q, k, v)))
    assert out.shape == (1, 32, 2 * 64) and counts["kernel"] == 1
    torch.testing.assert_close(out, plain_attention(q, k, v, 2, skip_reshape=True), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("skip_output_reshape, shape", [(False, (1, 32, 128)), (True, (1, 2, 32, 64))])
def test_nhd_inputs_are_views_and_outputs_match_comfyui(session, model, skip_output_reshape, shape):
    q, k, v = (t.transpose(1, 2).reshape(1, 32, 128) for t in hnd())
    out, calls, counts = run(session, model, ON, q, k, v, 2, skip_output_reshape=skip_output_reshape)
    got = calls[0]
    assert got["layout"] == "NHD" and got["q"].shape == (1, 32, 2, 64)
    assert all(got[n].data_ptr() == t.data_ptr() for n, t in zip("qkv", (q, k, v)))
    assert out.shape == shape and counts["kernel"] == 1
    torch.testing.assert_close(out, plain_attention(q, k, v, 2, skip_output_reshape=skip_output_reshape),
                               rtol=1e-5, atol=1e-5)


def test_a_custom_scale_is_forwarded(session, model):
    q, k, v = hnd()
    out, calls, _ = run(session, model, ON, q, k, v, 2, skip_reshape=True, scale=0.05)
    assert calls[0]["sm_scale"] == 0.05
    torch.testing.assert_close(out, plain_attention(q, k, v, 2, skip_reshape=True, scale=0.05),
                               rtol=1e-5, atol=1e-5)


def test_smooth_k_never_writes_the_callers_k(session, model):
    q, k, v = hnd()
    k = k + 3.0  # an offset smoothing would remove
    k_before = k.clone()
    kernel = RecordingKernel(smoothing_in_place)
    settings = Settings(kernel="double", min_seq_len=8, smooth_k=True)
    out, calls, counts = run(session, model, settings, q, k, v, 2, kernel=kernel, spec={"smooth_k_in_place": True},
                             skip_reshape=True)
    assert torch.equal(k, k_before)
    assert calls[0]["smooth_k"] is False and counts["kernel"] == 1
    torch.testing.assert_close(out, plain_attention(q, k, v, 2, skip_reshape=True), rtol=1e-4, atol=1e-4)


def test_a_retired_device_keeps_sdpa(session, model):
    session.knowledge.retired["cpu"] = "test"  # the hnd() tensors live on the CPU
    q, k, v = hnd()
    _, calls, counts = run(session, model, ON, q, k, v, 2, skip_reshape=True)
    assert calls == [] and counts["declined"] == {Reason.DEVICE_RETIRED.value: 1}


@pytest.mark.parametrize("skip_reshape", [True, False])
def test_too_short_comes_before_every_other_reason(session, model, skip_reshape):
    """A short call counts as too short whatever else it is (here also of a dtype the kernel does
    not take), in either layout."""
    q, k, v = hnd(n=64)
    _, k, v = hnd(n=16)
    heads = q.shape[1]
    if not skip_reshape:  # (B, N, H*D): the sequence axis is still the second-to-last
        q, k, v = (t.transpose(1, 2).flatten(-2) for t in (q, k, v))
    kernel = RecordingKernel()
    with registered(session, make_kernel("double", kernel, dtypes={torch.float16})):
        scoped = apply_scope(model, Settings(kernel="double", min_seq_len=32), session)
        outs = in_scope(scoped, lambda: [attention(scoped, q, k, v, heads, skip_reshape=skip_reshape)
                                         for _ in range(3)])
    assert kernel.calls == []
    assert last_generation(session, "cpu")["declined"] == {Reason.TOO_SHORT.value: 3}
    assert torch.equal(outs[0], plain_attention(q, k, v, heads, skip_reshape=skip_reshape))


def test_a_disabled_scope_counts_short_calls_as_disabled(session, model):
    q, k, v = hnd(n=16)
    _, calls, counts = run(session, model, Settings(enabled=False, kernel="double", min_seq_len=32), q, k, v, 2,
                           skip_reshape=True)
    assert calls == [] and counts["declined"] == {Reason.DISABLED.value: 1}


def test_calls_of_one_signature_keep_their_own_strides_and_masks(session, model):
    """Same shapes, dtypes and flags as an eligible call, but strided (copied for the kernel) or masked (SDPA)."""
    q, k, v = hnd(n=64)
    strided = tuple(t.transpose(-1, -2).contiguous().transpose(-1, -2) for t in (q, k, v))
    masking = torch.zeros(1, 1, 64, 64)
    masking[..., :4] = float("-inf")
    kernel = RecordingKernel()
    with registered(session, make_kernel("double", kernel)):
        scoped = apply_scope(model, ON, session)
        outs = in_scope(scoped, lambda: [attention(scoped, q, k, v, 2, skip_reshape=True),
                                         attention(scoped, *strided, 2, skip_reshape=True),
                                         attention(scoped, q, k, v, 2, skip_reshape=True, mask=masking),
                                         attention(scoped, q, k, v, 2, skip_reshape=True)])
    counts = last_generation(session, "cpu")
    assert len(kernel.calls) == 3 and counts["kernel"] == 3 and counts["copied"] == 1
    assert all(c["q"].stride(-1) == 1 and c["k"].stride(-1) == 1 for c in kernel.calls)
    assert counts["declined"] == {Reason.MASK.value: 1}
    torch.testing.assert_close(outs[1], plain_attention(*strided, 2, skip_reshape=True))
    assert torch.equal(outs[2], plain_attention(q, k, v, 2, skip_reshape=True, mask=masking))


def test_a_kernel_that_appears_later_is_used(session, model):
    """What was resolved while no kernel of that name existed is forgotten once one is added."""
    q, k, v = hnd()
    kernel = RecordingKernel()
    scoped = apply_scope(model, Settings(kernel="late", min_seq_len=8), session)

    def calls():
        attention(scoped, q, k, v, 2, skip_reshape=True)
        with registered(session, make_kernel("late", kernel)):
            attention(scoped, q, k, v, 2, skip_reshape=True)
    in_scope(scoped, calls)
    assert len(kernel.calls) == 1
    # Before: no kernel of that name, and the CPU has no SageAttention.
    assert last_generation(session, "cpu")["kernel"] == 1
    assert last_generation(session, "cpu")["declined"] == {Reason.NOT_CUDA.value: 1}


def _padding(n=64, kept=50, value=float("-inf"), shape=(1, 1)):
    mask = torch.zeros(*shape, n)
    mask[..., kept:] = value
    return mask


@pytest.mark.parametrize("mask", [_padding(), _padding(value=-torch.finfo(torch.float32).max),
                                  _padding(value=-10000.0, shape=(1, 1, 1))],
                         ids=["-inf (1, 1, N)", "-finfo.max, as HunyuanVideo", "-1e4 (1, 1, 1, N)"])
def test_a_key_padding_mask_is_sliced_off_and_the_call_qualifies(session, model, mask):
    """The same trailing keys masked for every query: attending over the kept keys alone is exact."""
    q, k, v = hnd(n=64)
    out, calls, counts = run(session, model, ON, q, k, v, 2, skip_reshape=True, mask=mask)
    assert counts["kernel"] == 1 and counts["masks_dropped"] == 1
    assert calls[0]["k"].shape[-2] == calls[0]["v"].shape[-2] == 50 and calls[0]["k"].data_ptr() == k.data_ptr()
    torch.testing.assert_close(out, plain_attention(q, k, v, 2, skip_reshape=True, mask=mask), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("masked", ["every other key", "the first 14 keys"])
def test_keys_masked_for_every_query_anywhere_are_left_out_by_gathering_the_rest(session, model, masked):
    """One row of 0 and -inf for every query, the masked keys not all trailing (HunyuanVideo's text padding
    once its text comes first, Qwen-Image's padded prompt before the image): the kernel gets the kept keys
    gathered (a copy, counted) and no mask, which is exact."""
    keys = torch.arange(64)
    keep = keys % 2 == 0 if masked == "every other key" else keys >= 14
    mask = torch.where(keep, 0.0, float("-inf")).reshape(1, 1, 64)
    q, k, v = hnd(n=64)
    out, calls, counts = run(session, model, ON, q, k, v, 2, skip_reshape=True, mask=mask)
    assert counts["kernel"] == 1 and counts["masks_dropped"] == 1 and counts["copied"] == 1
    torch.testing.assert_close(calls[0]["k"], k[:, :, keep])
    torch.testing.assert_close(calls[0]["v"], v[:, :, keep])
    torch.testing.assert_close(out, plain_attention(q, k, v, 2, skip_reshape=True, mask=mask), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("mask", [_padding(shape=(2, 1)),                      # per batch item
                                  torch.cat([_padding(kept=10).expand(1, 32, 64), _padding().expand(1, 32, 64)], 1),
                                  _padding() + _padding(kept=20, value=-1.0),    # a bias besides the padding
                                  torch.arange(64).reshape(1, 1, 64) < 50],
                         ids=["per batch item", "per query", "a bias on kept keys", "boolean"])
def test_other_masks_stay_on_sdpa(session, model, mask):
    q, k, v = hnd(b=mask.shape[0] if mask.shape[0] > 1 else 1, n=64)
    out, calls, counts = run(session, model, ON, q, k, v, 2, skip_reshape=True, mask=mask)
    assert calls == [] and counts["declined"] == {Reason.MASK.value: 1}
