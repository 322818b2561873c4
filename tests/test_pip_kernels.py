"""FlashAttention 4 and cuDNN's frontend SDPA, the kernels pip installs without a compiler, as the pack
declares them, bound to named doubles of their libraries (sas_harness/pip_doubles.py: the real signatures
and layouts, real attention) on a machine that says it is an sm100 GPU, the tensors on the CPU. Calls go
through ComfyUI's own attention of a tiny FLUX with the Scope: binding, layouts, each fault falling back
with its reason counted, the first-call check, where FP8 is offered, and where the compile is paid."""
from __future__ import annotations

import types

import pytest
import torch

from sage_attention_scope.nodes.status import payload, render
from sage_attention_scope.patches import (Fault, Reason, Session, Settings, apply_scope, backends, checks, router_of,
                                          timing)
from sas_harness import doubles
from sas_harness.models import tiny_flux
from sas_harness.pip_doubles import Cudnn, DSLRuntimeError, FlashAttention4, cudnnGraphNotSupportedError
from sas_harness.run import attention, hnd, in_scope, last_generation, plain_attention

CPU = torch.device("cpu")  # the tensors' device: the doubles run there, the machine says its GPU's capability
BF16 = torch.bfloat16
PIP_KERNELS = ("fa4", "cudnn_fe_bf16", "cudnn_fe_fp8")


def machine(modules: dict, capability=(10, 0), clock=None) -> Session:
    """A session on a GPU of ``capability`` (every device is one, the CPU where the tensors are too) whose
    libraries are ``modules`` (others not installed); an import that is a raised exception fails as that
    import would."""
    return Session(store=None, clock=clock or doubles.FakeClock(), finder=doubles.machine_finder(modules, capability))


def routed(session, settings, calls):
    """One generation of ``calls`` ((q, k, v, keyword arguments) each, q/k/v as (B, H, N, D), or (B, N, H*D)
    where the arguments say ``heads``); outputs and counters."""
    scoped = apply_scope(tiny_flux(), settings, session)

    def one(q, k, v, kw):
        if "heads" in kw:
            return attention(scoped, q, k, v, **kw)
        return attention(scoped, q, k, v, q.shape[1], skip_reshape=True, **kw)
    outs = in_scope(scoped, lambda: [one(q, k, v, kw) for q, k, v, kw in calls])
    return outs, last_generation(session, "cpu")


def comfy(q, k, v, **kw):
    """ComfyUI's own result for an HND call."""
    return plain_attention(q, k, v, q.shape[1], skip_reshape=True, **kw)


def named(kernel: str, **settings) -> Settings:
    return Settings(kernel=kernel, min_seq_len=1, **settings)


@pytest.fixture
def flash():
    return FlashAttention4()


@pytest.fixture
def cudnn():
    return Cudnn()


# -- binding ----------------------------------------------------------------------------------

def test_each_kernel_binds_to_its_installed_library(flash, cudnn):
    session = machine({"flash_attn.cute": flash.module(), "cudnn": cudnn.module()})
    for name in PIP_KERNELS:
        resolution = session.knowledge.kernel(name, CPU)
        assert [b.name for b in resolution.candidates] == [name], resolution.why
    fa4, cudnn_fe = session.knowledge.kernel("fa4", CPU).bound, session.knowledge.kernel("cudnn_fe_bf16", CPU).bound
    assert fa4.version == "FlashAttention 4, version unknown (no distribution metadata for flash_attn.cute)"
    assert cudnn_fe.version == "9.14.0 (test double)"


def test_without_the_libraries_nothing_binds_and_says_why():
    session = machine({})
    for name in PIP_KERNELS:
        resolution = session.knowledge.kernel(name, CPU)
        assert resolution.bound is None and "is not installed or failed to import" in resolution.why


def test_a_missing_cuda_library_at_import_keeps_comfyuis_attention_and_says_why(cudnn):
    """FlashAttention 4 installed on a machine whose CUDA driver library is missing: its import raises, it
    does not bind, every call keeps ComfyUI's attention and Status says why."""
    missing = OSError("libcuda.so.1: cannot open shared object file: No such file or directory")
    session = machine({"flash_attn.cute": missing, "cudnn": cudnn.module()})
    assert "libcuda.so.1: cannot open shared object file" in session.knowledge.kernel("fa4", CPU).why
    assert "fa4" not in [b.name for b in session.knowledge.kernel("exact", CPU).candidates]
    q, k, v = hnd(n=64, d=64, dtype=BF16)
    [out], counts = routed(session, named("fa4"), [(q, k, v, {})])
    assert counts["kernel"] == 0 and sum(counts["declined"].values()) == 1 and counts["faults"] == {}
    assert set(counts["declined"]) <= {Reason.NO_KERNEL.value, Reason.NOT_CUDA.value}  # (the CPU's tensors: NOT_CUDA)
    assert torch.equal(out, comfy(q, k, v))
    assert "libcuda.so.1" in render(payload(session))


def test_a_function_that_lacks_a_parameter_the_adapter_passes_is_refused(cudnn):
    def flash_attn_func(q, k, v, causal=False, return_lse=False):  # no softmax_scale: it would be dropped
        raise AssertionError("never called")

    class pygraph:  # no handle: its graphs would run on a handle of its own making
        def __init__(self, name="test_graph", io_data_type=None, intermediate_data_type=None,
                     compute_data_type=None):
            raise AssertionError("never made")
    library = cudnn.module()
    library.pygraph = pygraph
    session = machine({"flash_attn.cute": types.SimpleNamespace(flash_attn_func=flash_attn_func), "cudnn": library})
    assert "does not take softmax_scale" in session.knowledge.kernel("fa4", CPU).why
    for name in ("cudnn_fe_bf16", "cudnn_fe_fp8"):
        assert "pygraph of " in session.knowledge.kernel(name, CPU).why
        assert "does not take handle" in session.knowledge.kernel(name, CPU).why


@pytest.mark.parametrize("capability, binds", [
    ((7, 5), set()), ((8, 0), {"fa4", "cudnn_fe_bf16"}), ((8, 9), {"fa4", "cudnn_fe_bf16"}),
    ((9, 0), {"fa4", "cudnn_fe_bf16"}), ((10, 0), set(PIP_KERNELS)), ((12, 0), {"fa4", "cudnn_fe_bf16"})])
def test_each_kernel_binds_on_the_gpus_its_library_runs_on(flash, cudnn, capability, binds):
    """FA4: compute capability 8.x to 12.x; cuDNN's SDPA sm80 on; its FP8 SDPA with a bf16 output datacenter
    Blackwell only (cuDNN refuses that graph on Hopper)."""
    session = machine({"flash_attn.cute": flash.module(), "cudnn": cudnn.module()}, capability)
    bound = {name for name in PIP_KERNELS if session.knowledge.kernel(name, CPU).bound is not None}
    assert bound == binds
    if "cudnn_fe_fp8" not in binds:
        assert "needs sm100 or sm103" in session.knowledge.kernel("cudnn_fe_fp8", CPU).why


# -- where each is offered --------------------------------------------------------------------

def test_exact_offers_the_exact_ones_after_torchs_and_never_fp8(flash, cudnn):
    modules = {"flash_attn.cute": flash.module(), "cudnn": cudnn.module(),
               backends.torch_sdpa.__name__: doubles.torch_sdpa_module()}
    session = machine(modules)
    exact = [b.name for b in session.knowledge.kernel("exact", CPU).candidates]
    assert exact == ["sdpa_cudnn", "sdpa_flash", "sdpa_efficient", "fa4", "cudnn_fe_bf16"]
    assert all(b.backend.exact for b in session.knowledge.kernel("exact", CPU).candidates)
    assert not backends.REGISTRY["cudnn_fe_fp8"].exact and backends.REGISTRY["fa4"].exact
    auto = [b.name for b in session.knowledge.kernel("auto", CPU).candidates]
    assert auto == ["cudnn_fe_fp8", *exact]  # sm100: the quantised ones first


def test_auto_offers_cudnns_fp8_after_sageattentions_where_cudnn_runs_fp8():
    assert backends.AUTO[(9, 0)] == ("sage2_fp8_sm90", "sage1_triton", "kitchen_int8")
    assert backends.AUTO[(10, 0)] == ("sage2_fp16_cuda", "sage1_triton", "cudnn_fe_fp8", "kitchen_int8")
    assert all("cudnn_fe_fp8" not in backends.AUTO[arch] for arch in ((8, 0), (8, 9), (9, 0), (12, 0), (7, 5)))


# -- layouts ----------------------------------------------------------------------------------

def nhd(q, k, v):
    """An HND call's tensors as ComfyUI hands most models' calls: (B, N, H*D), contiguous."""
    return tuple(t.transpose(1, 2).flatten(-2).contiguous() for t in (q, k, v))


@pytest.mark.parametrize("layout", ["HND", "NHD"])
def test_flashattention_4_gets_b_n_h_d_views_and_returns_comfyuis_result(flash, cudnn, layout):
    session = machine({"flash_attn.cute": flash.module(), "cudnn": cudnn.module()})
    q, k, v = hnd(b=2, h=2, n=64, d=64, dtype=BF16)
    call = (q, k, v, {}) if layout == "HND" else (*nhd(q, k, v), {"heads": 2})
    [out], counts = routed(session, named("fa4"), [call])
    assert counts["kernel"] == 1 and counts["faults"] == {} and counts["copied"] == 0
    [received] = flash.calls
    assert received["shape"] == (2, 64, 2, 64) and received["softmax_scale"] is None and received["causal"] is False
    if layout == "HND":  # (B, N, H, D) views of the (B, H, N, D) tensors: no copy
        assert received["strides"][0] == (8192, 64, 4096, 1)
    expected = comfy(q, k, v)
    if layout == "NHD":
        expected = expected.reshape(out.shape)  # (B, N, H*D) both
    torch.testing.assert_close(out, expected, rtol=1e-2, atol=1e-2)


@pytest.mark.parametrize("kernel", PIP_KERNELS)
def test_a_custom_softmax_scale_reaches_the_kernel(flash, cudnn, kernel):
    """(ComfyUI's own CPU attention ignores the scale, so torch's SDPA is the reference here, unchecked.)"""
    session = machine({"flash_attn.cute": flash.module(), "cudnn": cudnn.module()})
    q, k, v = hnd(n=64, d=64, dtype=BF16)
    [out], counts = routed(session, named(kernel, first_call_check=False), [(q, k, v, {"scale": 0.3})])
    expected = torch.nn.functional.scaled_dot_product_attention(q.float(), k.float(), v.float(), scale=0.3)
    _, rel_l2, finite = checks.compare(out, expected.transpose(1, 2).reshape(out.shape))
    assert counts["kernel"] == 1 and finite
    assert rel_l2 < (checks.MAX_REL_L2_EXACT if backends.REGISTRY[kernel].exact else checks.MAX_REL_L2)
    assert (flash.calls[0]["softmax_scale"] if kernel == "fa4" else cudnn.builds[0]["attn_scale"]) == 0.3


@pytest.mark.parametrize("layout", ["HND", "NHD"])
@pytest.mark.parametrize("kernel", ["cudnn_fe_bf16", "cudnn_fe_fp8"])
def test_cudnn_graphs_declare_the_tensors_real_strides_and_return_comfyuis_result(flash, cudnn, layout, kernel):
    """The graph reads q/k/v through the strides it declared, so an NHD call's (B, H, N, D) views run without
    a copy only where those strides are the tensors' own; the output comes back in ComfyUI's shape."""
    session = machine({"flash_attn.cute": flash.module(), "cudnn": cudnn.module()})
    q, k, v = hnd(b=2, h=2, n=64, d=64, dtype=BF16)
    k = k + 2.0  # keys with an offset, as diffusion models' keys have
    call = (q, k, v, {}) if layout == "HND" else (*nhd(q, k, v), {"heads": 2})
    [out], counts = routed(session, named(kernel), [call])
    assert counts["kernel"] == 1 and counts["faults"] == {} and counts["declined"] == {}
    [build] = cudnn.builds
    assert build["q"][:2] == ([2, 2, 64, 64], [8192, 4096, 64, 1] if layout == "HND" else [8192, 64, 128, 1])
    assert build["attn_scale"] == pytest.approx(64 ** -0.5) and build["handle"] is cudnn.handles[0]
    expected = comfy(q, k, v)
    if layout == "NHD":
        expected = expected.reshape(out.shape)
    tolerance = 2e-2 if kernel == "cudnn_fe_bf16" else 0.15
    torch.testing.assert_close(out, expected, rtol=tolerance, atol=tolerance)


def test_fp8_passes_its_descales_and_scales_and_keeps_within_the_quantised_bound(cudnn):
    session = machine({"cudnn": cudnn.module()})
    q, k, v = hnd(n=256, d=128, dtype=BF16)
    [out], counts = routed(session, named("cudnn_fe_fp8"), [(q, k, v, {})])
    [build] = cudnn.builds
    assert build["op"] == "sdpa_fp8" and build["q"][2].name == "FP8_E4M3" and build["sdpa_fp8::O"][2].name == "BFLOAT16"
    assert {"descale_q", "descale_k", "descale_v", "descale_s", "scale_s", "scale_o", "sdpa_fp8::Amax_O"} <= set(build)
    check = next(iter(session.knowledge.checks.values()))
    assert check.passed and 0 < check.rel_l2 < 0.1 and counts["kernel"] == 1


@pytest.mark.parametrize("smooth_k", [False, True])
def test_fp8_smooths_k_where_the_node_says_and_the_check_judges_the_difference(cudnn, smooth_k):
    """Keys offset by 8: one scale for the whole of k spends its range on the offset, and the output is off
    by about 0.2 (relative L2), past the quantised bound; with each head's mean key subtracted it is not."""
    session = machine({"cudnn": cudnn.module()})
    q, k, v = hnd(n=64, d=64, dtype=BF16)
    k = k + 8.0
    k_before = k.clone()
    [out], counts = routed(session, named("cudnn_fe_fp8", smooth_k=smooth_k), [(q, k, v, {})])
    check = next(iter(session.knowledge.checks.values()))
    assert check.passed is smooth_k and (check.rel_l2 < 0.1) is smooth_k
    assert counts["declined"] == ({} if smooth_k else {Reason.CHECK_FAILED.value: 1})
    assert torch.equal(k, k_before)  # smoothed in a copy
    torch.testing.assert_close(out, comfy(q, k, v), rtol=0.1, atol=0.1)


# -- faults fall back, counted ----------------------------------------------------------------

def test_a_compile_error_at_the_first_call_keeps_comfyuis_attention_counted(cudnn):
    flash = FlashAttention4(compile_error=lambda: DSLRuntimeError("ptxas fatal: Unresolved extern function"))
    session = machine({"flash_attn.cute": flash.module(), "cudnn": cudnn.module()})
    q, k, v = hnd(n=64, d=64, dtype=BF16)
    outs, counts = routed(session, named("fa4"), [(q, k, v, {})] * 2)
    assert counts["faults"] == {Fault.OTHER.value: 2} and counts["declined"] == {Reason.KERNEL_FAULT.value: 2}
    assert all(torch.equal(out, comfy(q, k, v)) for out in outs) and flash.events == ["compile", "compile"]


def test_a_graph_cudnn_cannot_build_keeps_comfyuis_attention_counted():
    cudnn = Cudnn(build_error=lambda: cudnnGraphNotSupportedError("No valid execution plans built."))
    session = machine({"cudnn": cudnn.module()})
    q, k, v = hnd(n=64, d=64, dtype=BF16)
    [out], counts = routed(session, named("cudnn_fe_bf16"), [(q, k, v, {})])
    assert counts["faults"] == {Fault.OTHER.value: 1} and counts["declined"] == {Reason.KERNEL_FAULT.value: 1}
    assert torch.equal(out, comfy(q, k, v)) and cudnn.events == ["build"]


@pytest.mark.parametrize("kernel, head_dim", [("fa4", 136), ("fa4", 36), ("cudnn_fe_bf16", 264),
                                              ("cudnn_fe_fp8", 72), ("cudnn_fe_fp8", 8)])
def test_a_head_size_the_kernel_does_not_take_keeps_comfyuis_attention(flash, cudnn, kernel, head_dim):
    session = machine({"flash_attn.cute": flash.module(), "cudnn": cudnn.module()})
    q, k, v = hnd(n=64, d=head_dim, dtype=BF16)
    [out], counts = routed(session, named(kernel), [(q, k, v, {})])
    assert counts["declined"] == {Reason.HEAD_DIM.value: 1} and flash.calls == [] and cudnn.events == []
    assert torch.equal(out, comfy(q, k, v))


@pytest.mark.parametrize("kernel", PIP_KERNELS)
def test_fp32_and_masked_calls_keep_comfyuis_attention(flash, cudnn, kernel):
    session = machine({"flash_attn.cute": flash.module(), "cudnn": cudnn.module()})
    q, k, v = hnd(n=64, d=64, dtype=BF16)
    masking = torch.zeros(64, 64, dtype=BF16)
    masking[:, ::3] = -1e4  # not keys dropped for every query alike: a real mask
    q32, k32, v32 = hnd(n=64, d=64)
    outs, counts = routed(session, named(kernel), [(q, k, v, {"mask": masking}), (q32, k32, v32, {})])
    assert counts["declined"] == {Reason.MASK.value: 1, Reason.DTYPE.value: 1} and counts["kernel"] == 0
    assert flash.calls == [] and cudnn.events == []
    assert torch.equal(outs[1], comfy(q32, k32, v32))


# -- the first-call check ---------------------------------------------------------------------

def test_the_first_call_check_catches_a_nan_output(cudnn):
    def nan_first(out):
        out = out.clone()
        out[0, 0, 0, 0] = float("nan")
        return out
    flash = FlashAttention4(behave=nan_first)
    session = machine({"flash_attn.cute": flash.module(), "cudnn": cudnn.module()})
    q, k, v = hnd(n=64, d=64, dtype=BF16)
    outs, counts = routed(session, named("fa4"), [(q, k, v, {})] * 2)
    assert counts["faults"] == {Fault.NON_FINITE.value: 1} and counts["declined"] == {Reason.CHECK_FAILED.value: 2}
    assert len(flash.calls) == 1 and all(torch.equal(out, comfy(q, k, v)) for out in outs)


@pytest.mark.parametrize("kernel", ["cudnn_fe_bf16", "cudnn_fe_fp8"])
def test_the_first_call_check_catches_a_wrong_output(flash, kernel):
    cudnn = Cudnn(behave=lambda out: out.flip(-2))  # each query's answer given to another
    session = machine({"flash_attn.cute": flash.module(), "cudnn": cudnn.module()})
    q, k, v = hnd(n=64, d=64, dtype=BF16)
    outs, counts = routed(session, named(kernel), [(q, k, v, {})] * 2)
    assert counts["declined"] == {Reason.CHECK_FAILED.value: 2} and counts["kernel"] == 0
    assert cudnn.events == ["build", "execute"] and all(torch.equal(out, comfy(q, k, v)) for out in outs)


def test_an_exact_kernel_is_held_to_exact_rounding(cudnn):
    """An FA4 off by 5% would pass a quantised kernel's check; an exact one's fails it."""
    flash = FlashAttention4(behave=lambda out: out * 1.05)
    session = machine({"flash_attn.cute": flash.module(), "cudnn": cudnn.module()})
    q, k, v = hnd(n=64, d=64, dtype=BF16)
    _, counts = routed(session, named("fa4"), [(q, k, v, {})])
    assert counts["declined"] == {Reason.CHECK_FAILED.value: 1}


# -- a graph per configuration, the compile before the timing ---------------------------------

def test_a_graph_is_built_once_per_configuration_and_kept_per_session(flash, cudnn):
    modules = {"flash_attn.cute": flash.module(), "cudnn": cudnn.module()}
    session = machine(modules)
    q, k, v = hnd(n=64, d=64, dtype=BF16)
    q2, k2, v2 = hnd(n=128, d=64, dtype=BF16)
    routed(session, named("cudnn_fe_bf16"), [(q, k, v, {})] * 3 + [(q2, k2, v2, {})] * 2)
    routed(session, named("cudnn_fe_bf16"), [(q, k, v, {})])
    assert cudnn.events.count("build") == 2 and cudnn.events.count("execute") == 6 and len(cudnn.handles) == 1
    routed(machine(modules), named("cudnn_fe_bf16"), [(q, k, v, {})])  # another session builds its own
    assert cudnn.events.count("build") == 3 and len(cudnn.handles) == 2


class OrderedClock(doubles.FakeClock):
    """The fake clock, noting each timed arm in ``events`` beside the libraries' own events."""

    def __init__(self, events: list, **kwargs):
        super().__init__(run_arms=True, **kwargs)
        self.events = events

    def __call__(self, arm, fn, device, bucket=None):
        self.events.append(f"timed {arm}")
        return super().__call__(arm, fn, device, bucket)


@pytest.mark.parametrize("first_call_check", [True, False])
def test_the_compile_and_the_graph_build_come_before_the_timed_rounds(first_call_check):
    """Under measured routing the bucket's first call runs every candidate once (checked where the check
    is on), then times them: FA4's compile and cuDNN's graph build are paid by that first run, and every
    timed run finds them done."""
    events = []
    flash, cudnn = FlashAttention4(), Cudnn()
    flash.events = cudnn.events = events
    session = machine({"flash_attn.cute": flash.module(), "cudnn": cudnn.module()},
                      clock=OrderedClock(events, per_kernel={"fa4": 0.5}))
    q, k, v = hnd(n=64, d=64, dtype=BF16)
    outs, counts = routed(session, Settings(kernel="exact", min_seq_len=1, first_call_check=first_call_check),
                          [(q, k, v, {})] * 2)
    first_timed = events.index("timed kernel")
    assert events[:first_timed].count("compile") == 1 and events[:first_timed].count("build") == 1
    assert "compile" not in events[first_timed:] and "build" not in events[first_timed:]
    assert events.count("timed kernel") == 2 * timing.ROUNDS  # two candidates, each in every round
    assert counts["kernel"] == 2
    torch.testing.assert_close(outs[1], comfy(q, k, v), rtol=1e-2, atol=1e-2)


def test_the_first_call_of_each_configuration_is_logged_with_its_time(flash, cudnn, caplog):
    caplog.set_level("INFO")
    session = machine({"flash_attn.cute": flash.module(), "cudnn": cudnn.module()})
    q, k, v = hnd(n=64, d=64, dtype=BF16)
    routed(session, named("fa4"), [(q, k, v, {})] * 2)
    routed(session, named("cudnn_fe_bf16"), [(q, k, v, {})] * 2)
    messages = [r.getMessage() for r in caplog.records]
    assert sum("FlashAttention 4: the first call of torch.bfloat16 d64" in m for m in messages) == 1
    assert sum("cuDNN frontend: built the SDPA graph for torch.bfloat16 1x2x64x64" in m for m in messages) == 1


def test_a_librarys_version_is_found_under_its_import_name(tmp_path, monkeypatch):
    """Status and the log name each library by its module: ``cudnn`` is nvidia-cudnn-frontend's and
    ``flash_attn.cute`` flash-attn-4's (beside flash-attn's own flash_attn, the one whose files hold it); a
    lookup by the module's name found neither and said "not installed"."""
    def install(distribution: str, version: str, files: list[str]):
        info = tmp_path / f"{distribution.replace('-', '_')}-{version}.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {distribution}\nVersion: {version}\n")
        (info / "RECORD").write_text("".join(f"{file},,\n" for file in files))
        for file in files:  # the modules themselves, as an install leaves them
            (tmp_path / file).parent.mkdir(parents=True, exist_ok=True)
            (tmp_path / file).touch()
    install("nvidia-cudnn-frontend", "1.32.0", ["cudnn/__init__.py", "cudnn/graph.py"])
    install("flash-attn", "2.8.3", ["flash_attn/__init__.py", "flash_attn/flash_attn_interface.py"])
    install("flash-attn-4", "4.0.0b40", ["flash_attn/cute/__init__.py", "flash_attn/cute/interface.py"])
    monkeypatch.syspath_prepend(str(tmp_path))
    assert backends.distribution_version("cudnn") == "1.32.0"
    assert backends.distribution_version("flash_attn.cute") == "4.0.0b40"
    assert backends.distribution_version("no_such_library") is None


@pytest.mark.parametrize("kernel", ["fa4", "cudnn_fe_bf16"])
def test_a_call_that_builds_for_a_new_shape_marks_its_step_as_one_that_waited(flash, cudnn, kernel):
    """FlashAttention 4 compiles and cuDNN builds a graph at a shape's first call: in a bucket already decided
    that is a plain kernel call, and the step it falls in waited for the build, so it is no sample of the
    step trial (a trial's first pair far apart decides alone: a build inside it would send the Scope aside)."""
    session = machine({"flash_attn.cute": flash.module(), "cudnn": cudnn.module()})
    scoped = apply_scope(tiny_flux(), named(kernel, routing="always"), session)
    router = router_of(scoped)

    def waits():
        seen = []
        for tokens in (32, 32, 48, 48):  # the first call is checked (it waits); 48 tokens: a new shape
            router.generation.waited = False
            q, k, v = hnd(n=tokens, dtype=BF16)
            attention(scoped, q, k, v, q.shape[1], skip_reshape=True)
            seen.append(router.generation.waited)
        return seen
    assert in_scope(scoped, waits) == [True, False, True, False]
    assert last_generation(session, "cpu")["kernel"] == 4
