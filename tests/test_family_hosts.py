"""The ComfyUI release each family declares for its classes (patches/families: ``comfyui``, and ``added_in``
for a class it dates apart), held against the ComfyUI this suite runs on: every class declared for this
release or an older one is here, and none declared for a release after the next one. A tree reports the last
release it carries and may carry some of what the next adds (a checkout between releases: the 0.33.0 test host
carries Trellis 2). Every class a test case builds and this ComfyUI lacks is declared, so that its skip names the
release that added it."""
from __future__ import annotations

import importlib
import re

import pytest

import comfy.supported_models

from sage_attention_scope.patches import families
from sas_harness import ROOT
from sas_harness.families import CASES, lacking, release, release_adding
from sas_harness.host import comfyui_version

FAMILIES = sorted(families.REGISTRY.values(), key=lambda f: f.name)
HOST = release(comfyui_version())
NEXT = (HOST[0], HOST[1] + 1)  # the next minor release: what this tree may carry beyond HOST


def _declared(family) -> list[str]:
    """Every class ``family`` names: its config classes, diffusion models and the classes it dates apart."""
    apart = [name for names in family.added_in.values() for name in names]
    return list(dict.fromkeys([*family.config_classes, *family.diffusion_models, *apart]))


def _here(name: str) -> bool:
    """Whether this ComfyUI has ``name``: a comfy.supported_models class, or a diffusion model's "module.Class"."""
    if "." not in name:
        return hasattr(comfy.supported_models, name)
    module, _, cls = name.rpartition(".")
    try:
        return isinstance(getattr(importlib.import_module(module), cls, None), type)
    except ImportError:
        return False


@pytest.mark.parametrize("family", FAMILIES, ids=lambda f: f.name)
def test_the_releases_a_family_declares_match_this_comfyui(family):
    by_release = {name: family.release_with(name) for name in _declared(family)}
    missing = [f"{name} (declared for {added})" for name, added in by_release.items()
               if release(added) <= HOST and not _here(name)]
    assert missing == [], f"{family.name}: ComfyUI {comfyui_version()} lacks {missing}"
    # a diffusion model may be older than a family that uses it (LongCat-Image's is FLUX.1's): the oldest declared
    too_new = [f"{name} (declared for {release_adding(name)})" for name in by_release
               if release(release_adding(name))[:2] > NEXT and _here(name)]
    assert too_new == [], f"{family.name}: ComfyUI {comfyui_version()} has {too_new}: the declared release is too new"


@pytest.mark.parametrize("family", FAMILIES, ids=lambda f: f.name)
def test_a_class_a_family_dates_apart_is_the_familys_and_not_older_than_the_family(family):
    for added, names in family.added_in.items():
        assert release(added) >= release(family.comfyui), f"{family.name}: {names} declared for {added}"
        for name in names:  # a diffusion model named here is one the family recognises; a config class is a subclass
            assert name in family.diffusion_models if "." in name else name not in family.config_classes, name


def test_a_case_this_comfyui_cannot_build_skips_naming_the_release_that_added_its_class():
    for case in CASES:
        why = lacking(case)
        if why is None:
            continue
        added = release_adding(case.config_class)
        assert added is not None and release(added) > HOST, why
        assert why == f"needs ComfyUI {added} or newer: comfy.supported_models.{case.config_class} was added there"


def test_the_oldest_release_a_family_declares_is_the_packs_own():
    """Families default to the oldest ComfyUI the pack runs on, which pyproject.toml declares to the registry."""
    declared = re.search(r'^requires-comfyui = ">=([\d.]+)"', (ROOT / "pyproject.toml").read_text(), re.M)
    assert declared and declared.group(1) == families.OLDEST_COMFYUI
    assert all(release(family.comfyui) >= release(families.OLDEST_COMFYUI) for family in FAMILIES)
