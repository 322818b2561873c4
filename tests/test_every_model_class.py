"""Every model class this ComfyUI supports is named by a family, served or declined, never "unrecognised";
and the audio, 3D and vision models pass through a Scope unchanged, Status saying why in one line.

Recognition needs a model, and building one of each of ComfyUI's ~100 classes is not cheap; the first
test recognises each class from the classes alone: its config class (the comfy.supported_models class)
and the diffusion model its get_model builds, read from ComfyUI's own code. The audio, 3D and vision models
are built (tiny, through the real classes) and scoped.
"""
from __future__ import annotations

import ast
import functools
import importlib
import inspect
import textwrap

import pytest
import torch

import comfy.model_base
import comfy.supported_models

from sage_attention_scope.nodes.status import payload, render
from sage_attention_scope.patches import Settings, families, router_of, scope_for_family
from sage_attention_scope.patches.families import recognise_classes
from sas_harness import host
from sas_harness.doubles import RecordingKernel, make_kernel, registered
from sas_harness.families import needs_class, release
from sas_harness.models import TINY_FLUX, TINY_FLUX2, TINY_SD15, TINY_SDXL, build


def _qualname(cls: type) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"


def _diffusion_name(model) -> str:
    return _qualname(type(model.model.diffusion_model))


def _source_tree(function) -> ast.AST:
    return ast.parse(textwrap.dedent(inspect.getsource(function)))


def _unet_model(model_base_cls: type) -> type:
    """The diffusion model class a comfy.model_base class builds: the ``unet_model=`` its __init__ (or the
    nearest base's) hands on, else that __init__'s own ``unet_model`` default (BaseModel's: UNetModel)."""
    for cls in model_base_cls.__mro__:
        init = cls.__dict__.get("__init__")
        if init is None:
            continue
        handed = [ast.unparse(node.value) for node in ast.walk(_source_tree(init))
                  if isinstance(node, ast.keyword) and node.arg == "unet_model"]
        named = [expr for expr in handed if expr != "unet_model"]  # "unet_model=unet_model" hands on the default
        if named:
            first, *rest = named[0].split(".")
            return functools.reduce(getattr, rest, vars(inspect.getmodule(cls))[first])
        default = inspect.signature(init).parameters.get("unet_model")
        if default is not None and default.default is not inspect.Parameter.empty:
            return default.default
    raise LookupError(f"no unet_model in {model_base_cls.__name__}'s __init__ or its bases'")


def diffusion_models_built_by(config_cls: type) -> set[str]:
    """The "module.Class" of each diffusion model ``config_cls.get_model`` may build, from ComfyUI's code:
    the comfy.model_base classes its get_model calls, and the diffusion model class each builds."""
    get_model = next(cls.__dict__["get_model"] for cls in config_cls.__mro__ if "get_model" in cls.__dict__)
    called = {node.func.attr for node in ast.walk(_source_tree(get_model))
              if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
              and ast.unparse(node.func.value) in ("model_base", "comfy.model_base")}
    return {_qualname(_unet_model(getattr(comfy.model_base, name))) for name in called}


@pytest.mark.parametrize("config_cls", comfy.supported_models.models, ids=lambda cls: cls.__name__)
def test_every_model_class_is_served_or_declined_by_name(config_cls):
    built = diffusion_models_built_by(config_cls)
    assert built, f"found no comfy.model_base class in {config_cls.__name__}.get_model"
    for diffusion in built:
        found = recognise_classes(config_cls, diffusion)
        assert found.family is not None, found.message


BUILT = {
    "SD15": dict(TINY_SD15, num_head_channels=-1, num_heads=8),  # get_model is BASE's: BaseModel's UNetModel
    "FluxSchnell": TINY_FLUX,  # its own get_model; model_base.Flux's unet_model default
    "Flux2": TINY_FLUX2,       # model_base.Flux2 hands model_base.Flux's default on
    "SDXL": TINY_SDXL,
}


@pytest.mark.parametrize("config_class", BUILT)
def test_reading_comfyuis_code_names_the_diffusion_model_it_builds(config_class):
    supported_cls = getattr(comfy.supported_models, config_class)
    built = build(supported_cls, BUILT[config_class])
    assert diffusion_models_built_by(supported_cls) == {_diffusion_name(built)}


def test_recognising_classes_needs_the_expected_diffusion_model():
    assert recognise_classes(comfy.supported_models.Flux, "comfy.ldm.flux.model.Flux").family.name == "FLUX.1"
    found = recognise_classes(comfy.supported_models.Flux, "torch.nn.modules.linear.Identity")
    assert found.family is None and found.message.startswith("unrecognised model: Flux config")


def _resolve(dotted: str):
    module, _, name = dotted.rpartition(".")
    try:
        return getattr(importlib.import_module(module), name, None)
    except ImportError:
        return None


@pytest.mark.parametrize("family", sorted(families.REGISTRY.values(), key=lambda f: f.name), ids=lambda f: f.name)
def test_every_class_a_family_names_exists_in_comfyui(family):
    """No typo in a declaration: each config class and diffusion model a family names is ComfyUI's, where this
    ComfyUI is as new as the release the family declares for it (patches/families)."""
    missing = [c for c in family.config_classes if not hasattr(comfy.supported_models, c)]
    missing += [d for d in family.diffusion_models if not isinstance(_resolve(d), type)]
    newer = [name for name in missing if release(family.release_with(name)) > release(host.comfyui_version())]
    assert [name for name in missing if name not in newer] == []
    if newer:
        by_release: dict[str, list[str]] = {}
        for name in newer:
            by_release.setdefault(family.release_with(name), []).append(name)
        pytest.skip("; ".join(f"needs ComfyUI {added} or newer: {', '.join(names)} added there"
                              for added, names in by_release.items()))


# -- audio, 3D and vision models: a Scope passes them through unchanged ----------------------------

def _seconds_embedder(name: str, **kwargs) -> dict:
    """The state dict of Stable Audio's seconds_start / seconds_total conditioner, which get_model loads."""
    from comfy.ldm.audio.embedders import NumberConditioner
    return {f"conditioner.conditioners.{name}.{key}": value
            for key, value in NumberConditioner(768, min_val=0, **kwargs).state_dict().items()}


# Tiny configs shaped like ComfyUI 0.33's model_detection output, narrowed (1 or 2 blocks, 2 heads).
_STABLE_AUDIO = dict(audio_model="dit1.0", io_channels=64, embed_dim=64, depth=1, num_heads=2, cond_token_dim=768,
                     global_cond_dim=1536, project_cond_tokens=False)
_HUNYUAN_3D = dict(image_model="hunyuan3d2", in_channels=64, context_in_dim=32, hidden_size=64, mlp_ratio=4.0,
                   num_heads=2, depth=1, depth_single_blocks=1, qkv_bias=True, guidance_embed=False)
TINY = {
    "StableAudio": lambda cls: build(cls, _STABLE_AUDIO, state_dict={
        **_seconds_embedder("seconds_start", max_val=512), **_seconds_embedder("seconds_total", max_val=512)}),
    "StableAudio3": lambda cls: build(cls, dict(
        _STABLE_AUDIO, global_cond_shared_embed=True, global_cond_type="adaLN", timestep_features_type="expo",
        input_concat_dim=64, norm_type="rms_norm", attn_kwargs={"qk_norm": "rms", "differential": True}),
        state_dict=_seconds_embedder("seconds_total", max_val=384, fourier_features_type="expo")),
    # ACE-Step's lyric encoder has fixed widths (most of this model's 83M parameters)
    "ACEStep": lambda cls: build(cls, dict(
        audio_model="ace", in_channels=8, num_layers=1, inner_dim=64, attention_head_dim=32, num_attention_heads=2,
        mlp_ratio=2.5, out_channels=8, patch_size=[16, 1], max_height=16, max_position=32768, max_width=32768,
        rope_theta=1000000.0, speaker_embedding_dim=512, text_embedding_dim=768, ssl_encoder_depths=[1, 1],
        ssl_latent_dims=[1024, 768], ssl_names=["mert", "m-hubert"], lyric_encoder_vocab_size=6681,
        lyric_hidden_size=1024)),
    "ACEStep15": lambda cls: build(cls, dict(
        audio_model="ace1.5", hidden_size=256, intermediate_size=256, num_heads=2, num_kv_heads=2, num_dit_layers=1,
        encoder_hidden_size=256, encoder_num_heads=2, encoder_intermediate_size=256, num_lyric_layers=1,
        num_timbre_layers=1, num_tokenizer_layers=1)),
    "Hunyuan3Dv2": lambda cls: build(cls, _HUNYUAN_3D),
    "Hunyuan3Dv2mini": lambda cls: build(cls, _HUNYUAN_3D),
    "Hunyuan3Dv2_1": lambda cls: build(cls, dict(
        image_model="hunyuan3d2_1", in_channels=64, context_dim=32, hidden_size=64, mlp_ratio=4.0, num_heads=2,
        depth=2, num_moe_layers=1, num_experts=2, qkv_bias=False, guidance_cond_proj_dim=None)),
    "TripoSplat": lambda cls: build(cls, dict(
        image_model="triposplat", q_token_length=64, model_channels=64, cond_channels=32, num_blocks=1,
        num_refiner_blocks=1, num_head_channels=32, cond2_channels=32)),
    "Trellis2": lambda cls: build(cls, dict(
        image_model="trellis2", resolution=64, init_txt_model=False, txt_only=False, model_channels=64,
        cond_channels=32, num_blocks=1, num_heads=2)),
    "DepthAnything3": lambda cls: build(cls, dict(  # the smallest backbone, ViT-S (25M parameters)
        image_model="DepthAnything3", backbone_name="vits", out_layers=[2, 5, 8, 11], head_dim_in=384,
        head_features=64, head_out_channels=[48, 96, 192, 384])),
    "RT_DETR_v4": lambda cls: build(cls, dict(  # its HGNetv2 backbone has fixed widths (35M parameters)
        image_model="RT_DETR_v4", enc_h=64, dec_h=64, enc_ff=64, dec_ff=64, num_queries=10)),
    # Fixed architectures that take no widths (SAM 3: 0.5B parameters, MiniMax Music 3: 2.5B): built on
    # PyTorch's meta device, the real classes without their weights' memory. The Scope reads only classes.
    "SAM3": lambda cls: _on_meta(cls, dict(image_model="SAM3")),
    "SAM31": lambda cls: _on_meta(cls, dict(image_model="SAM31")),
    "MiniMaxMusic3": lambda cls: _on_meta(cls, dict(audio_model="minimax_music3")),
}


def _on_meta(supported_cls, unet_config: dict):
    with torch.device("meta"):  # also on a GPU, where build() would make the weights on the device
        return build(supported_cls, unet_config, device="meta")


@pytest.mark.parametrize("config_class", sorted(TINY), ids=str)
def test_an_audio_3d_or_vision_model_passes_through_a_scope_and_status_says_why_in_one_line(session, config_class,
                                                                                             caplog_sas):
    supported_cls = needs_class(config_class)
    model = TINY[config_class](supported_cls)
    found = families.recognise(model)
    assert found.family is not None and not found.opens, found.message  # declined by name
    # the class-level reading agrees with what ComfyUI built and with recognise()
    assert _diffusion_name(model) in diffusion_models_built_by(supported_cls)
    assert found == recognise_classes(supported_cls, _diffusion_name(model))
    with registered(session, make_kernel("double", RecordingKernel())):
        passed, _ = scope_for_family(model, Settings(kernel="double", min_seq_len=1), session)
    assert passed is model and router_of(model) is None  # the same ModelPatcher, no override put on it
    why = f"model {found.name}: passed through unchanged: {found.message}"
    assert "\n" not in found.message
    # Status names it on one line under "This run" and once under "Session", each the why
    assert [line.strip() for line in render(payload(session)).splitlines() if found.name in line] == [why, why]
    said = [r.getMessage() for r in caplog_sas.records if found.name in r.getMessage()]
    assert len(said) == 1 and found.message in said[0]
