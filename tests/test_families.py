"""Each family's tiny random-weight model (tests/sas_families.py), one sampling step through
the scope, routed call by call as the model's structure says."""
from __future__ import annotations

import dataclasses
import logging

import pytest
import torch

import comfy.supported_models

from sage_attention_scope.nodes.status import payload
from sage_attention_scope.nodes.status import render
from sage_attention_scope.patches import Reason, Settings, families, scope_for_family
from sas_harness.doubles import RecordingKernel, make_kernel, registered
from sas_harness.families import (CASES, FLUX_TOKENS, QWEN_TOKENS, SAGE, model_of as _model, routing_table as _table,
                          sample_case as _sample)
from sas_harness.models import TINY_FLUX, TINY_FLUX2, TINY_QWEN_IMAGE, TINY_SD15, TINY_SDXL, TINY_Z_IMAGE, build, \
    flux_conditioning, sample, text_conditioning
from sas_harness.run import last_generation
from sas_harness import z_image_control

@pytest.mark.parametrize("case", CASES, ids=lambda c: c.family)
def test_family_is_recognised_from_comfyuis_classes(session, case):
    found = families.recognise(_model(case))
    assert found.opens and found.family.name == case.family


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.family)
def test_one_step_routes_each_call_as_the_structure_says(session, case):
    model = _model(case)
    plain = _sample(model, case)
    kernel = RecordingKernel()
    with registered(session, make_kernel("double", kernel)):
        scoped, found = scope_for_family(model, Settings(kernel="double", min_seq_len=case.min_seq_len), session)
        assert found.family.name == case.family
        routed = _sample(scoped, case)
    assert _table(last_generation(session)) == case.per_step
    assert len(kernel.calls) == case.per_step[SAGE]
    torch.testing.assert_close(routed, plain, rtol=1e-3, atol=1e-3)


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.family)
def test_disabled_scope_is_bit_identical_to_no_node(session, case):
    model = _model(case)
    plain = _sample(model, case)
    scoped, _ = scope_for_family(model, Settings(enabled=False), session)
    assert torch.equal(_sample(scoped, case), plain)
    assert _table(last_generation(session)) == {Reason.DISABLED: sum(case.per_step.values())}


def test_flux2_and_schnell_are_told_apart_by_class(session):
    assert families.recognise(build(comfy.supported_models.FluxSchnell, TINY_FLUX)).family.name == "FLUX.1"
    assert families.recognise(build(comfy.supported_models.Flux2, TINY_FLUX2)).family.name == "FLUX.2"


@pytest.mark.parametrize("config_class, message", [
    ("SD15", "SD1.5 is not supported: unmeasured: its head sizes are 40, 80 and 160"),
    ("SD20", "SD2 is not supported: unmeasured"),
])
def test_sd1_and_sd2_pass_through_unchanged_and_say_why(session, config_class, message, caplog_sas):
    model = build(getattr(comfy.supported_models, config_class), dict(TINY_SD15, num_head_channels=-1, num_heads=8))
    cond = text_conditioning(tokens=77)
    plain = sample(model, cond, channels=4)
    with registered(session, make_kernel("double", RecordingKernel())):
        for _ in range(2):
            passed, found = scope_for_family(model, Settings(kernel="double", min_seq_len=1), session)
            assert passed is model and not found.opens
    assert torch.equal(sample(passed, cond, channels=4), plain)
    assert found.message.startswith(message)
    said = [r.getMessage() for r in caplog_sas.records if "through unchanged" in r.getMessage()]
    assert len(said) == 1 and message in said[0]
    name = f"{found.family.name} ({config_class})"
    assert {"model": name, "note": f"passed through unchanged: {found.message}"} in payload(session)["models"]
    assert f"model {name}: passed through unchanged: {message}" in render(payload(session))


def test_unrecognised_model_passes_through_and_is_named(session):
    import comfy.latent_formats
    import comfy.model_base
    import comfy.supported_models_base

    class LoaderConfig(comfy.supported_models_base.BASE):
        """A model config of no ComfyUI (a custom loader's own class, with AuraFlow's diffusion model):
        recognition knows comfy.supported_models' classes only, and every one of those is claimed; a
        subclass of one would be recognised through it, so this derives from their common base."""
        unet_config, unet_extra_config, latent_format = {}, {}, comfy.latent_formats.SDXL

        def get_model(self, state_dict, prefix="", device=None):
            return comfy.model_base.AuraFlow(self, device=device)

    aura_flow = dict(cond_seq_dim=32, dim=64, n_layers=2, n_double_layers=1, n_heads=2, global_conddim=64)
    model = build(LoaderConfig, aura_flow)
    passed, found = scope_for_family(model, Settings(), session)
    assert passed is model and found.family is None
    assert found.message == "unrecognised model LoaderConfig (diffusion model comfy.ldm.aura.mmdit.MMDiT)"


def test_a_config_with_an_unexpected_diffusion_model_is_not_opened(session):
    model = build(comfy.supported_models.Flux, TINY_FLUX)
    model.model.diffusion_model = torch.nn.Identity()
    found = families.recognise(model)
    assert found.family is None and "Flux config with diffusion model torch.nn.modules.linear.Identity" in found.message


# -- masks ------------------------------------------------------------------------------------

def _flux_mask_conditioning(mask):
    cond = flux_conditioning()
    cond[0][1].update(attention_mask=mask, attention_mask_img_shape=(4, 4))  # 4x4 image tokens: kept as is
    return cond


@pytest.mark.parametrize("fill, expected", [
    (0.0, {SAGE: 2}),                     # additive all-zero mask: masks nothing, dropped
    (-10000.0, {Reason.MASK: 2}),         # masks the last token
])
def test_flux_masks_that_mask_are_kept_and_noop_masks_dropped(session, fill, expected):
    model = build(comfy.supported_models.Flux, TINY_FLUX)
    mask = torch.zeros(1, FLUX_TOKENS, FLUX_TOKENS)
    mask[..., -1] = fill
    plain = sample(model, _flux_mask_conditioning(mask))
    with registered(session, make_kernel("double", RecordingKernel())):
        scoped, _ = scope_for_family(model, Settings(kernel="double", min_seq_len=FLUX_TOKENS), session)
        routed = sample(scoped, _flux_mask_conditioning(mask))
    counts = last_generation(session)
    assert _table(counts) == expected
    assert counts["masks_dropped"] == (2 if fill == 0.0 else 0)
    torch.testing.assert_close(routed, plain, rtol=1e-3, atol=1e-3)


def _qwen_image_passes_its_text_mask() -> bool:
    import inspect

    import comfy.ldm.qwen_image.model
    return "attn_mask" in inspect.getsource(comfy.ldm.qwen_image.model.Attention.forward)


@pytest.mark.parametrize("text_mask, copied", [
    ([1, 1, 1, 1, 1], 0),  # masks nothing: dropped
    ([1, 1, 1, 0, 0], 1),  # masks two text keys, which lie before the image's, for every query: the rest gathered
])
def test_qwen_image_text_masks_are_dropped_or_leave_their_masked_keys_out(session, text_mask, copied):
    if not _qwen_image_passes_its_text_mask():
        pytest.skip("this ComfyUI's Qwen-Image passes no text mask to attention (0.3.75 drops it; 0.12 passes it)")
    model = build(comfy.supported_models.QwenImage, TINY_QWEN_IMAGE)
    cond = text_conditioning(attention_mask=torch.tensor([text_mask]))
    plain = sample(model, cond, latent_hw=(1, 8, 8))
    with registered(session, make_kernel("double", RecordingKernel())):
        scoped, _ = scope_for_family(model, Settings(kernel="double", min_seq_len=QWEN_TOKENS), session)
        routed = sample(scoped, cond, latent_hw=(1, 8, 8))
    counts = last_generation(session)
    layers = TINY_QWEN_IMAGE["num_layers"]
    assert _table(counts) == {SAGE: layers} and counts["masks_dropped"] == layers
    assert counts["copied"] == copied * layers
    torch.testing.assert_close(routed, plain, rtol=1e-3, atol=1e-3)


# -- work that runs inside the sampling loop ---------------------------------------------------

def _controlnet(net, **options):
    """``net`` with random weights, as ComfyUI's ControlNet wrapper runs it in the sampling loop."""
    import comfy.controlnet
    import comfy.model_management
    with torch.no_grad():
        for p in net.parameters():
            p.normal_(0, 0.2)
    return comfy.controlnet.ControlNet(net, load_device=comfy.model_management.get_torch_device(), **options)


def _flux_controlnet(depth=1):
    import comfy.ldm.flux.controlnet
    import comfy.ops
    torch.manual_seed(3)
    config = {k: v for k, v in TINY_FLUX.items() if k != "image_model"}
    net = comfy.ldm.flux.controlnet.ControlNetFlux(operations=comfy.ops.disable_weight_init,
                                                   **dict(config, depth=depth, depth_single_blocks=0))
    return _controlnet(net, extra_conds=["y", "guidance"])


def _with_control(cond, control):
    hint = torch.rand(1, 3, 64, 64, generator=torch.Generator().manual_seed(4))  # pixels: latent 8x8 x 8
    applied = control.copy().set_cond_hint(hint, 1.0, (0.0, 1.0))
    return [[cond[0][0], dict(cond[0][1], control=applied, control_apply_to_uncond=False)]]


def test_flux_controlnet_in_the_sampling_loop_runs_in_the_scope(session):
    model, control = build(comfy.supported_models.Flux, TINY_FLUX), _flux_controlnet()
    cond = _with_control(flux_conditioning(), control)
    plain = sample(model, cond, steps=2)
    kernel = RecordingKernel()
    with registered(session, make_kernel("double", kernel)):
        scoped, _ = scope_for_family(model, Settings(kernel="double", min_seq_len=FLUX_TOKENS), session)
        routed = sample(scoped, cond, steps=2)
    main_calls = TINY_FLUX["depth"] + TINY_FLUX["depth_single_blocks"]
    control_calls = 1  # the ControlNet's one double-stream block
    assert _table(last_generation(session)) == {SAGE: 2 * (main_calls + control_calls)}
    torch.testing.assert_close(routed, plain, rtol=1e-3, atol=1e-3)
    # the hooks went with the scope: a plain run afterwards calls no kernel
    kernel.calls.clear()
    assert torch.equal(sample(model, cond, steps=2), plain) and kernel.calls == []


def test_qwen_image_controlnet_in_the_sampling_loop_runs_in_the_scope(session):
    import comfy.ldm.qwen_image.controlnet
    import comfy.ops
    torch.manual_seed(3)
    config = {k: v for k, v in TINY_QWEN_IMAGE.items() if k != "image_model"}
    net = comfy.ldm.qwen_image.controlnet.QwenImageControlNetModel(operations=comfy.ops.disable_weight_init,
                                                                   **dict(config, num_layers=1))
    # No VAE: the hint is given in latent space (compression 1), shaped like Qwen-Image's latent.
    control = _controlnet(net, compression_ratio=1, extra_conds=[])
    hint = torch.rand(1, 16, 1, 8, 8, generator=torch.Generator().manual_seed(4))
    text = text_conditioning()
    cond = [[text[0][0], dict(text[0][1], control=control.copy().set_cond_hint(hint, 1.0, (0.0, 1.0)),
                              control_apply_to_uncond=False)]]
    model = build(comfy.supported_models.QwenImage, TINY_QWEN_IMAGE)
    plain = sample(model, cond, latent_hw=(1, 8, 8), steps=2)
    kernel = RecordingKernel()
    with registered(session, make_kernel("double", kernel)):
        scoped, _ = scope_for_family(model, Settings(kernel="double", min_seq_len=QWEN_TOKENS), session)
        routed = sample(scoped, cond, latent_hw=(1, 8, 8), steps=2)
    control_calls = 1  # the ControlNet's one joint block
    assert _table(last_generation(session)) == {SAGE: 2 * (TINY_QWEN_IMAGE["num_layers"] + control_calls)}
    torch.testing.assert_close(routed, plain, rtol=1e-3, atol=1e-3)
    kernel.calls.clear()
    assert torch.equal(sample(model, cond, latent_hw=(1, 8, 8), steps=2), plain) and kernel.calls == []


def test_z_image_control_blocks_never_reach_the_scope(session):
    case = next(c for c in CASES if c.family == "Z-Image")
    plain, routed = z_image_control.with_and_without_scope(session, _model(case), TINY_Z_IMAGE,
                                                           lambda model: _sample(model, case), case.min_seq_len)
    # The control blocks' attention (one call per main layer) is on SDPA and was never offered.
    assert _table(last_generation(session)) == case.per_step
    torch.testing.assert_close(routed, plain, rtol=1e-3, atol=1e-3)


def _tiled(tiles_per_side: int):
    """A model_function_wrapper that denoises the latent in tiles, as multi-diffusion nodes do."""
    def wrapper(apply_model, args):
        x, t, c = args["input"], args["timestep"], args["c"]
        out = torch.empty_like(x)
        th, tw = x.shape[-2] // tiles_per_side, x.shape[-1] // tiles_per_side
        for i in range(tiles_per_side):
            for j in range(tiles_per_side):
                tile = (..., slice(i * th, (i + 1) * th), slice(j * tw, (j + 1) * tw))
                out[tile] = apply_model(x[tile], t, **c)
        return out
    return wrapper


def test_sdxl_tiled_multidiffusion_runs_every_tile_in_the_scope(session):
    case = next(c for c in CASES if c.family == "SDXL")
    tiled = dataclasses.replace(case, latent_hw=(32, 32))  # 2x2 tiles of the 16x16 the table is for
    model = build(comfy.supported_models.SDXL, TINY_SDXL)
    model.set_model_unet_function_wrapper(_tiled(2))
    plain = _sample(model, tiled)
    with registered(session, make_kernel("double", RecordingKernel())):
        scoped, _ = scope_for_family(model, Settings(kernel="double", min_seq_len=case.min_seq_len), session)
        routed = _sample(scoped, tiled)
    assert _table(last_generation(session)) == {route: 4 * n for route, n in case.per_step.items()}
    torch.testing.assert_close(routed, plain, rtol=1e-3, atol=1e-3)


def test_status_names_the_scoped_family(session):
    with registered(session, make_kernel("double", RecordingKernel())):
        scope_for_family(build(comfy.supported_models.Flux, TINY_FLUX), Settings(kernel="double"), session)
    assert "model FLUX.1 (Flux): scoped" in render(payload(session))


def test_a_device_without_a_kernel_passes_a_supported_model_through_and_says_why(session, caplog_sas):
    model = build(comfy.supported_models.Flux, TINY_FLUX, device=torch.device("cpu"))
    for _ in range(2):
        passed, found = scope_for_family(model, Settings(), session)  # auto: no kernel on a CPU
        assert passed is model and found.opens
    message = "on cpu: the attention kernels need a CUDA device, got cpu"
    said = [r for r in caplog_sas.records if "through unchanged" in r.getMessage()]
    assert len(said) == 1 and said[0].levelno == logging.WARNING and message in said[0].getMessage()
    assert f"model FLUX.1 (Flux): passed through unchanged: {message}" in render(payload(session))
