"""Routing that pays on every GPU: the automatic floor with measured routing above it, first-call
checks per key-length class, the kernel ``auto`` picks per compute capability, and the step and
block windows."""
import logging
import types

import pytest
import torch

import comfy.supported_models

from sage_attention_scope.nodes.status import payload, render
from sage_attention_scope.patches import Reason, Session, Settings, apply_scope, backends, router_of
from sas_harness import doubles
from sas_harness.doubles import CrossoverClock, FakeClock, RecordingKernel, make_kernel, noisy, reference_attention, \
    registered
from sas_harness.families import CASES, routing_table, sample_case
from sas_harness.models import TINY_FLUX, TINY_QWEN_IMAGE, build, flux_conditioning, sample, text_conditioning
from sas_harness.run import attention, in_scope, last_generation

SAGE = "kernel"
FLUX_1024, FLUX_2048 = 4608, 16896  # joint tokens of FLUX.1 at 1024² and 2048²


# -- the automatic floor, and measured routing above it -------------------------------------------

@pytest.mark.parametrize("clock, routes", [
    (CrossoverClock(2048), {FLUX_1024: SAGE}),                          # a GPU where the kernel pays from 2k
    (CrossoverClock(2048, reversed_=True), {FLUX_1024: "measured_slower"}),
    (CrossoverClock(12288), {FLUX_1024: "measured_slower", FLUX_2048: SAGE}),  # the H200's crossover
])
def test_defaults_route_flux_by_what_is_measured_on_the_gpu(session, clock, routes):
    """min_seq_len 0 (auto): nothing above the floor is decided by a length, only by the clock."""
    session.knowledge.clock = clock
    with registered(session, make_kernel("double", RecordingKernel())):
        scoped = apply_scope(tiny_flux_carrier(), Settings(kernel="double"), session)
        for tokens, route in routes.items():
            q, k, v = (torch.randn(1, 1, tokens, 128) for _ in range(3))  # FLUX's head size; one head keeps it quick
            in_scope(scoped, lambda: [attention(scoped, q, k, v, 1, skip_reshape=True) for _ in range(2)])
            counts = last_generation(session, "cpu")
            assert (counts["kernel"] == 2) if route == SAGE else (counts["declined"] == {route: 2}), tokens


def test_the_floor_keeps_short_calls_on_sdpa_whatever_the_clock():
    session = Session(store=None, clock=CrossoverClock(1))
    with registered(session, make_kernel("double", RecordingKernel())):
        scoped = apply_scope(tiny_flux_carrier(), Settings(kernel="double"), session)
        for q_len, kv_len in ((1023, 4096), (4096, 511), (4096, 77)):
            q, (k, v) = torch.randn(1, 1, q_len, 64), (torch.randn(1, 1, kv_len, 64) for _ in range(2))
            in_scope(scoped, lambda: attention(scoped, q, k, v, 1, skip_reshape=True))
            assert last_generation(session, "cpu")["declined"] == {Reason.TOO_SHORT.value: 1}, (q_len, kv_len)


def tiny_flux_carrier():
    return build(comfy.supported_models.Flux, TINY_FLUX)


def test_timing_costs_under_one_percent_of_a_20_step_flux_generation_and_nothing_after(session, caplog):
    """57 blocks (FLUX.1's 19 + 38) over 1029 tokens, 20 steps: one shape bucket is timed once."""
    caplog.set_level(logging.INFO, logger="sage_attention_scope")
    session.knowledge.clock = FakeClock(kernel_ms=1.0, comfy_ms=2.0)
    model = build(comfy.supported_models.Flux, dict(TINY_FLUX, depth=19, depth_single_blocks=38))
    with registered(session, make_kernel("double", RecordingKernel())):
        scoped = apply_scope(model, Settings(kernel="double"), session)
        sample(scoped, flux_conditioning(), latent_hw=(64, 64), steps=20)
        counts, shown = last_generation(session, "cpu"), payload(session)
        on_the_clock = counts["kernel"] * 1.0 + counts["declined_total"] * 2.0  # the generation's attention time
        assert counts["kernel"] == 20 * 57 and shown["last_ms"]["timing"] / on_the_clock <= 0.01
        assert f"of which {shown['last_ms']['timing']:.0f} ms timing kernels" in render(shown)
        assert any("timing kernels" in r.getMessage() for r in caplog.records)
        sample(scoped, flux_conditioning(), latent_hw=(64, 64), steps=2)
        assert payload(session)["last_ms"]["timing"] == 0.0


# -- first-call checks per key-length class -----------------------------------------------------

def wrong_at_short_keys(q, k, v, tensor_layout="HND", **kwargs):
    """Right where keys are many, wrong (as sageattention 1.0.6 is) where they are under 512."""
    kv_len = k.shape[2 if tensor_layout == "HND" else 1]
    return (noisy if kv_len < 512 else reference_attention)(q, k, v, tensor_layout=tensor_layout, **kwargs)


def test_a_check_at_long_keys_never_clears_short_keys(session):
    """SDXL with every call eligible: its 1024-token self-attention runs on a kernel that is wrong
    at short keys, while the 77-key cross-attention (and 256-token level) fail their own check."""
    case = next(c for c in CASES if c.family == "SDXL")
    model = build(getattr(comfy.supported_models, case.config_class), case.unet_config)
    cond = case.conditioning()
    plain = sample(model, cond, latent_hw=(32, 32), channels=4)
    kernel = RecordingKernel(wrong_at_short_keys)
    with registered(session, make_kernel("double", kernel)):
        scoped = apply_scope(model, Settings(kernel="double", min_seq_len=1, routing="always"), session)
        for _ in range(2):  # the failed class stays off for the session; the long one keeps running
            routed = sample(scoped, cond, latent_hw=(32, 32), channels=4)
            level0_blocks = 3  # 32x32 latent: level 0 has 1024 tokens (long keys), level 1 256
            assert routing_table(last_generation(session)) == {SAGE: level0_blocks, Reason.CHECK_FAILED: 11}
    checks = {c["key"]: c["passed"] for c in payload(session)["devices"]["cpu"]["checks"]}
    assert checks == {"cpu float32 d64 long keys double": True, "cpu float32 d64 short keys double": False}
    keys = [call["k"].shape[2 if call["layout"] == "HND" else 1] for call in kernel.calls]
    assert keys[:2] == [1024, 77] and set(keys[2:]) == {1024}  # the two checks, then long keys only
    torch.testing.assert_close(routed, plain, rtol=1e-3, atol=1e-3)


def _wan_image_attention_opts_out() -> bool:
    """ComfyUI 0.33 makes Wan's cross-attention to the CLIP image with low_precision_attention=False."""
    import inspect

    import comfy.ldm.wan.model
    return "low_precision_attention=False" in inspect.getsource(comfy.ldm.wan.model.WanI2VCrossAttention.forward)


def test_wan_i2v_clip_cross_attention_fails_its_own_short_key_check(session):
    """Wan I2V with every call eligible: the 512-token self-attention and 512-key text
    cross-attention (long keys) run on a kernel that is wrong at short keys, while the 257-key
    CLIP cross-attention fails its own check and stays on SDPA for the session. Where ComfyUI
    opts that call out of low precision (0.33), it stays on SDPA for that reason, never checked."""
    opts_out = _wan_image_attention_opts_out()
    case = next(c for c in CASES if c.config_class == "WAN21_I2V")
    model = build(getattr(comfy.supported_models, case.config_class), case.unet_config)
    cond = case.conditioning()
    plain = sample(model, cond, latent_hw=case.latent_hw, channels=case.channels)
    kernel = RecordingKernel(wrong_at_short_keys)
    layers = case.unet_config["num_layers"]
    with registered(session, make_kernel("double", kernel)):
        scoped = apply_scope(model, Settings(kernel="double", min_seq_len=1, routing="always"), session)
        for _ in range(2):
            routed = sample(scoped, cond, latent_hw=case.latent_hw, channels=case.channels)
            image_calls = Reason.LOW_PRECISION_OPT_OUT if opts_out else Reason.CHECK_FAILED
            assert routing_table(last_generation(session)) == {SAGE: 2 * layers, image_calls: layers}
    checks = {c["key"]: c["passed"] for c in payload(session)["devices"]["cpu"]["checks"]}
    keys = [call["k"].shape[2 if call["layout"] == "HND" else 1] for call in kernel.calls]
    if opts_out:
        assert checks == {"cpu float32 d128 long keys double": True} and 257 not in keys
    else:
        assert checks == {"cpu float32 d128 long keys double": True, "cpu float32 d128 short keys double": False}
        assert 257 in keys[:3] and keys.count(257) == 1  # checked once, then never sent again
    torch.testing.assert_close(routed, plain, rtol=1e-3, atol=1e-3)


# -- the kernel auto picks per compute capability -----------------------------------------------

ROWS = [((7, 5), "kitchen_int8"), ((8, 0), "sage2_fp16_cuda"), ((8, 6), "sage2_fp16_cuda"),
        ((8, 7), "sage2_fp16_cuda"), ((8, 9), "sage2_fp8_cuda"), ((9, 0), "sage2_fp8_sm90"),
        ((10, 0), "sage2_fp16_cuda"), ((12, 0), "sage2_fp16_cuda"), ((12, 1), "sage2_fp16_cuda")]


def _finder(capability, **modules):
    def find(name):
        if name not in modules:
            raise ImportError(f"No module named {name!r}")
        return modules[name]
    return Session(store=None, finder=backends.Finder(find, lambda m: "2.2.0", lambda device: capability))


KITCHEN = types.SimpleNamespace(int8_attention=doubles.int8_attention,
                                int8_attention_is_available=doubles.int8_attention_is_available)


@pytest.mark.parametrize("capability, expected", ROWS, ids=lambda x: "sm%d%d" % x if isinstance(x, tuple) else x)
def test_auto_per_compute_capability(capability, expected):
    """With SageAttention 2 and comfy-kitchen installed: SageAttention 2's kernel for the GPU (sm86's the CUDA
    one with fp32 accumulation, never the fp16 Triton one), comfy-kitchen where SageAttention has none."""
    session = _finder(capability, sageattention=doubles.sageattention2_module(), comfy_kitchen=KITCHEN)
    assert session.knowledge.kernel("auto", torch.device("cuda", 0)).bound.name == expected


@pytest.mark.parametrize("capability", [c for c, _ in ROWS])
def test_auto_falls_back_to_what_is_installed(capability):
    kitchen_only = _finder(capability, comfy_kitchen=KITCHEN).knowledge.kernel("auto", torch.device("cuda", 0))
    assert kitchen_only.bound.name == "kitchen_int8"
    nothing = _finder(capability).knowledge.kernel("auto", torch.device("cuda", 0))
    assert nothing.bound is None and "not installed" in nothing.why


# -- the step window ----------------------------------------------------------------------------

def _evaluations(model):
    """A model wrapper noting each model evaluation's sigma and what it did to the counters since the
    evaluation before ended (an evaluation the Scope steps aside from is counted as it starts, from the
    routes it knows, before this wrapper runs)."""
    seen, ended = [], {}

    def wrapper(apply_model, args):
        tally = router_of(model).generation.tallies["cpu"]
        before = ended.get(id(router_of(model).generation), {})
        out = apply_model(args["input"], args["timestep"], **args["c"])
        after = {"kernel": tally.kernel, **tally.declined}
        ended[id(router_of(model).generation)] = after
        seen.append((float(args["timestep"][0]),
                     {k: after[k] - before.get(k, 0) for k in after if after[k] != before.get(k, 0)}))
        return out
    model.set_model_unet_function_wrapper(wrapper)
    return seen


@pytest.mark.parametrize("sampler, start_step", [("euler", None), ("euler", 4), ("heun", None)],
                         ids=["euler", "a sliced schedule (KSamplerAdvanced from step 4)", "heun"])
def test_the_step_window_keeps_the_steps_outside_it_on_sdpa(session, sampler, start_step):
    model = build(comfy.supported_models.Flux, TINY_FLUX)
    start, end = (model.model.model_sampling.percent_to_sigma(p) for p in (0.2, 0.8))
    with registered(session, make_kernel("double", RecordingKernel())):
        scoped = apply_scope(model, Settings(kernel="double", min_seq_len=1, start_percent=0.2,
                                             end_percent=0.8), session)
        seen = _evaluations(scoped)
        sample(scoped, flux_conditioning(), steps=10, sampler=sampler, start_step=start_step)
    calls = TINY_FLUX["depth"] + TINY_FLUX["depth_single_blocks"]
    assert seen and any(end <= s <= start for s, _ in seen) and any(not end <= s <= start for s, _ in seen)
    for sigma, routes in seen:
        expected = {"kernel": calls} if end <= sigma <= start else {Reason.OUTSIDE_STEPS: calls}
        assert routes == expected, sigma


# -- the block window -------------------------------------------------------------------------

@pytest.mark.parametrize("config_class, config, blocks", [
    ("Flux", dict(TINY_FLUX, depth=3, depth_single_blocks=3), {"double": 3, "single": 3}),
    ("QwenImage", dict(TINY_QWEN_IMAGE, num_layers=3), {"double": 3}),
])
@pytest.mark.parametrize("how", ["chosen", "the kernel's default"])
def test_the_first_and_last_block_of_each_type_stay_on_sdpa(session, config_class, config, blocks, how):
    model = build(getattr(comfy.supported_models, config_class), config)
    edges = {"first_blocks": 1, "last_blocks": 1} if how == "chosen" else {}
    cond = flux_conditioning() if config_class == "Flux" else text_conditioning()
    latent = {"latent_hw": (8, 8)} if config_class == "Flux" else {"latent_hw": (1, 8, 8)}
    with registered(session, make_kernel("double", RecordingKernel(), edge_blocks=(1, 1) if not edges else (0, 0))):
        sample(apply_scope(model, Settings(kernel="double", min_seq_len=1, **edges), session), cond, **latent)
    inner = sum(n - 2 for n in blocks.values())
    assert routing_table(last_generation(session)) == {SAGE: inner, Reason.OUTSIDE_BLOCKS: 2 * len(blocks)}


def test_a_model_that_says_no_block_positions_keeps_every_block_in_and_the_status_says_so(session):
    case = next(c for c in CASES if c.family == "SDXL")  # its UNet sets a local block_index, no total_blocks
    model = build(getattr(comfy.supported_models, case.config_class), case.unet_config)
    with registered(session, make_kernel("double", RecordingKernel())):
        scoped = apply_scope(model, Settings(kernel="double", min_seq_len=case.min_seq_len, first_blocks=1,
                                             last_blocks=1), session)
        sample_case(scoped, case)
    assert routing_table(last_generation(session)) == case.per_step
    assert "block window not applied to 14 calls" in render(payload(session))
