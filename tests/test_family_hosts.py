"""The oldest ComfyUI release the harness declares for each family (``sas_harness.families.NEWER_FAMILIES``, which
the docs' supported-model table prints with the test hosts), held against the ComfyUI this suite runs on: a family
this release should have is all here, one it should not have is not, and every class it names exists."""
from __future__ import annotations

import importlib

import pytest

import comfy.supported_models

from sage_attention_scope.patches import families
from sas_harness.families import NEWER_FAMILIES, oldest_comfyui, release
from sas_harness.host import comfyui_version

FAMILIES = sorted(families.REGISTRY.values(), key=lambda f: f.name)
HOST = release(comfyui_version())


def test_every_newer_family_the_harness_names_is_a_family_named_once():
    named = [name for names in NEWER_FAMILIES.values() for name in names]
    assert sorted(set(named) - set(families.REGISTRY)) == []
    assert len(named) == len(set(named))


@pytest.mark.parametrize("family", FAMILIES, ids=lambda f: f.name)
def test_the_release_a_family_declares_matches_this_comfyui(family):
    present = [name for name in family.config_classes if hasattr(comfy.supported_models, name)]
    oldest = oldest_comfyui(family.name)
    if HOST >= release(oldest):
        assert present == list(family.config_classes), (
            f"{family.name} is declared for ComfyUI {oldest} or newer, but ComfyUI {comfyui_version()} lacks "
            f"{sorted(set(family.config_classes) - set(present))}")
        for path in family.diffusion_models:  # a typo here would leave the family's models unrecognised
            module, _, name = path.rpartition(".")
            try:
                found = getattr(importlib.import_module(module), name, None)
            except ImportError:
                found = None
            assert found is not None or _older_alternative(family, path), f"{family.name}: no {path} here"
    else:
        assert not present, (f"{family.name} is declared for ComfyUI {oldest} or newer, but ComfyUI "
                             f"{comfyui_version()} has {present}: the declared release is too new")


def _older_alternative(family, path: str) -> bool:
    """A diffusion model class a newer ComfyUI added beside the family's older ones (Wan's SCAIL, HunyuanVideo
    1.5's ...): named so that newer releases are recognised, absent from older ones."""
    return len(family.diffusion_models) > 1 and path != family.diffusion_models[0]
