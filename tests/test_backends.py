"""Kernel backends as the pack declares them, bound to named doubles of their libraries (the real
functions' signatures, real attention): what each accepts, how it is called, how it is found and
named; and sessions that never share what they learn."""
import types

import pytest
import torch

from sage_attention_scope.nodes.status import payload
from sage_attention_scope.nodes.status import render
from sage_attention_scope.patches import Reason, Session, Settings, apply_scope, backends
from sas_harness import doubles
from sas_harness.doubles import RecordingKernel, make_kernel, noisy, reference_attention, registered
from sas_harness.models import flux_conditioning, sample, tiny_flux
from sas_harness.run import attention, hnd, in_scope, last_generation, plain_attention

CUDA = torch.device("cuda", 0)  # resolved with a faked capability only: nothing runs there


def session_with(modules: dict, capability=(9, 0), versions=backends.distribution_version) -> Session:
    """A session whose libraries are ``modules`` (others not installed) on a GPU of ``capability``: every
    device is one, the CPU where the tests' tensors are too, so the pack's own declarations bind there."""
    return Session(store=None, clock=doubles.FakeClock(), finder=doubles.machine_finder(modules, capability, versions))


def routed(session, settings, calls):
    """One generation of ``calls`` ((q, k, v, keyword arguments) each); outputs and counters."""
    scoped = apply_scope(tiny_flux(), settings, session)
    outs = in_scope(scoped, lambda: [attention(scoped, q, k, v, q.shape[1], skip_reshape=True, **kw)
                                     for q, k, v, kw in calls])
    return outs, last_generation(session, "cpu")


# -- SageAttention 3 --------------------------------------------------------------------------

@pytest.fixture
def sage3():
    calls = []

    def sageattn3_blackwell(q, k, v, attn_mask=None, is_causal=False, per_block_mean=True, **kwargs):
        calls.append(k)
        return doubles.sageattn3_blackwell(q, k, v, attn_mask, is_causal, per_block_mean, **kwargs)
    session = session_with({"sageattn3": types.SimpleNamespace(sageattn3_blackwell=sageattn3_blackwell)}, (12, 0))
    return session, calls


HALF = torch.bfloat16  # SageAttention 3 takes fp16/bf16 only


def test_sageattention_3_runs_without_touching_the_callers_k(sage3):
    session, calls = sage3
    q, k, v = hnd(n=64, d=64, dtype=HALF)
    k = k + 3.0  # an offset its in-place smoothing would remove
    k_before = k.clone()
    [out], counts = routed(session, Settings(kernel="sage3_fp4", min_seq_len=1), [(q, k, v, {})])
    assert counts["kernel"] == 1 and len(calls) == 1 and calls[0] is not k
    assert torch.equal(k, k_before)
    torch.testing.assert_close(out, plain_attention(q, k, v, 2, skip_reshape=True), rtol=2e-2, atol=2e-2)


def test_sageattention_3_never_gets_masks_custom_scales_or_other_head_sizes(sage3):
    session, calls = sage3
    q, k, v = hnd(n=64, d=64, dtype=HALF)
    masking = torch.zeros(64, 64, dtype=HALF)
    masking[:, -4:] = -1e4
    cases = [(q, k, v, {"mask": masking}), (q, k, v, {"scale": 0.3}), (*hnd(n=64, d=96, dtype=HALF), {}),
             (q, k, v, {"mask": torch.zeros(64, 64, dtype=HALF)}), (q, k, v, {"scale": 64 ** -0.5})]
    outs, counts = routed(session, Settings(kernel="sage3_fp4", min_seq_len=1), cases)
    assert counts["declined"] == {Reason.MASK.value: 1, Reason.SCALE.value: 1, Reason.HEAD_DIM.value: 1}
    # the no-op mask, the D^-0.5 scale
    assert counts["kernel"] == 2 and len(calls) == 2 and counts["masks_dropped"] == 1
    assert torch.equal(outs[1], plain_attention(q, k, v, 2, skip_reshape=True, scale=0.3))


@pytest.mark.parametrize("capability", [(9, 0), (8, 9), (10, 0)])
def test_sageattention_3_is_declined_on_gpus_other_than_sm120_and_sm121(capability):
    session = session_with({"sageattn3": types.SimpleNamespace(sageattn3_blackwell=doubles.sageattn3_blackwell)},
                           capability)
    resolution = session.knowledge.kernel("sage3_fp4", CUDA)
    assert resolution.bound is None and "needs sm120 or sm121" in resolution.why
    assert session_with({"sageattn3": types.SimpleNamespace(sageattn3_blackwell=doubles.sageattn3_blackwell)},
                        (12, 1)).knowledge.kernel("sage3_fp4", CUDA).bound is not None


def test_auto_never_picks_sageattention_3():
    session = session_with({"sageattn3": types.SimpleNamespace(sageattn3_blackwell=doubles.sageattn3_blackwell)},
                           (12, 0))
    assert session.knowledge.kernel("auto", CUDA).bound is None  # FP4 only where the user picks it


# -- comfy-kitchen ----------------------------------------------------------------------------

@pytest.fixture
def kitchen():
    seen = []

    def int8_attention(q, k, v, *, scale=None, attn_mask=None):
        seen.append(attn_mask)
        return doubles.int8_attention(q, k, v, scale=scale, attn_mask=attn_mask)
    module = types.SimpleNamespace(int8_attention=int8_attention, int8_attention_is_available=lambda device: True)
    session = session_with({"comfy_kitchen": module})
    return session, seen


def _masks(n=64):
    keep = torch.ones(2, n, n, dtype=torch.bool)  # (B, Nq, Nkv) boolean: the last keys of batch 1 masked
    keep[1, :, -5:] = False
    additive = torch.zeros(1, n, n)  # (1, Nq, Nkv) additive, as FLUX's attention bias comes
    additive[..., -3:] = float("-inf")
    padding = torch.zeros(2, 1, 1, n)  # (B, 1, 1, Nkv): key padding
    padding[0, ..., -7:] = -1e4
    return {"bool (B, Nq, Nkv)": keep, "additive (1, Nq, Nkv)": additive, "key padding (B, 1, 1, Nkv)": padding}


@pytest.mark.parametrize("kind", list(_masks()))
def test_comfy_kitchen_takes_masks_as_comfyui_sends_them(kitchen, kind):
    """Passed on in the shape ComfyUI's attention_pytorch gives SDPA; the result is SDPA's with
    that mask (ComfyUI's CPU attention reads a boolean mask otherwise, so SDPA itself is the
    reference here, as on the GPUs comfy-kitchen runs on)."""
    session, seen = kitchen
    mask = _masks()[kind]
    q, k, v = hnd(b=2, n=64, d=64)
    [out], counts = routed(session, Settings(kernel="kitchen_int8", min_seq_len=1), [(q, k, v, {"mask": mask})])
    assert counts["kernel"] == 1 and counts["faults"] == {} and seen[0] is not None
    broadcast = mask.unsqueeze(1) if mask.ndim == 3 else mask
    expected = torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=broadcast)
    torch.testing.assert_close(out, expected.transpose(1, 2).reshape(2, 64, 128), rtol=1e-4, atol=1e-4)


def test_an_integer_mask_stays_on_sdpa_with_a_backend_that_takes_masks(kitchen):
    """Z-Image's caption masks reach attention as torch.long on ComfyUI 0.3.75: not a mask comfy-kitchen
    (or SDPA) takes, so the call keeps ComfyUI's own attention."""
    session, seen = kitchen
    q, k, v = hnd(n=64, d=64)
    caption = torch.ones(1, 64, dtype=torch.long)
    try:
        plain = plain_attention(q, k, v, 2, skip_reshape=True, mask=caption)
    except RuntimeError as exc:
        pytest.skip(f"this ComfyUI's own CPU attention rejects an integer mask too: {exc}")
    [out], counts = routed(session, Settings(kernel="kitchen_int8", min_seq_len=1), [(q, k, v, {"mask": caption})])
    assert counts["declined"] == {Reason.MASK.value: 1} and seen == []
    assert torch.equal(out, plain)


@pytest.mark.parametrize("head_dim", [40, 96, 160, 256])
def test_comfy_kitchen_takes_head_sizes_it_pads(kitchen, head_dim):
    session, _ = kitchen
    q, k, v = hnd(n=64, d=head_dim)
    [out], counts = routed(session, Settings(kernel="kitchen_int8", min_seq_len=1), [(q, k, v, {})])
    assert counts["kernel"] == 1
    torch.testing.assert_close(out, plain_attention(q, k, v, 2, skip_reshape=True), rtol=1e-4, atol=1e-4)


# -- which SageAttention is installed ---------------------------------------------------------

def test_a_sageattention_2_whose_metadata_says_1_0_6_is_driven_as_2(session):
    """The module decides; its distribution metadata only labels it, and the status says both."""
    fake = doubles.sageattention2_module()
    sa2 = session_with({"sageattention": fake}, versions=lambda module: "1.0.6")
    resolution = sa2.knowledge.kernel("auto", CUDA)
    assert resolution.bound.name == "sage2_fp8_sm90"
    assert resolution.bound.version == "SageAttention 2 (its distribution metadata says sageattention 1.0.6)"
    assert sa2.knowledge.kernel("sage1_triton", CUDA).bound is None  # its sageattn does not take smooth_k
    routed(sa2, Settings(kernel="sage2_fp8_sm90", min_seq_len=1), [(*hnd(n=64, dtype=torch.float16), {})])
    assert fake.calls == ["sageattn_qk_int8_pv_fp8_cuda_sm90"]
    assert "cpu: sage2_fp8_sm90, SageAttention 2 (its distribution metadata says sageattention 1.0.6)" in render(
        payload(sa2))
    unlabelled = session_with({"sageattention": fake}, versions=lambda module: None)
    assert unlabelled.knowledge.kernel("auto", CUDA).bound.version.endswith("version unknown (no distribution metadata "
                                                                   "for sageattention)")


def test_the_installed_sageattention_1_is_found_and_named():
    """The real PyPI sageattention 1.0.6 of the test environment: its sageattn declares what the
    adapter passes; SageAttention 2's functions are not there."""
    session = Session(store=None, finder=backends.Finder(capability=lambda device: (9, 0)))
    resolution = session.knowledge.kernel("auto", CUDA)
    if resolution.bound is None:
        pytest.skip(f"sageattention 1.x is not importable here: {resolution.why}")
    assert resolution.bound.name == "sage1_triton" and resolution.bound.version.startswith("SageAttention 1 (")
    assert "does not export sageattn_qk_int8_pv_fp8_cuda_sm90" in session.knowledge.kernel("sage2_fp8_sm90", CUDA).why


def test_a_function_that_swallows_arguments_is_refused():
    def swallows(q, k, v, tensor_layout="HND", is_causal=False, sm_scale=None, smooth_k=True, **kwargs):
        raise AssertionError("never called")
    module = doubles.sageattention2_module()
    module.sageattn_qk_int8_pv_fp8_cuda_sm90 = swallows
    resolution = session_with({"sageattention": module}).knowledge.kernel("sage2_fp8_sm90", CUDA)
    assert resolution.bound is None and "does not take pv_accum_dtype" in resolution.why


# -- sessions ---------------------------------------------------------------------------------

def test_two_sessions_side_by_side_share_nothing_they_learn():
    """A check failure, a retired device and counters in one session never show in the other."""
    model, cond = tiny_flux(), flux_conditioning()
    first, second = Session(store=None, clock=doubles.FakeClock()), Session(store=None, clock=doubles.FakeClock())
    with registered(first, make_kernel("double", RecordingKernel(noisy))), \
            registered(second, make_kernel("double", RecordingKernel(reference_attention))):
        sample(apply_scope(model, Settings(kernel="double", min_seq_len=1), first), cond)
        first.knowledge.retired["cuda:7"] = "retired in the first session"
        sample(apply_scope(model, Settings(kernel="double", min_seq_len=1), second), cond)
    assert last_generation(first, "cpu")["declined"] == {Reason.CHECK_FAILED.value: 2}
    assert last_generation(second, "cpu")["kernel"] == 2 and last_generation(second, "cpu")["declined"] == {}
    assert [c.passed for c in first.knowledge.checks.values()] == [False]
    assert [c.passed for c in second.knowledge.checks.values()] == [True]
    assert "cuda:7" not in payload(second)["devices"] and second.knowledge.retired == {}
    assert payload(second)["generations"] == payload(first)["generations"] == 1
