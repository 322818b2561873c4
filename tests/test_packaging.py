"""What the Comfy Registry and ComfyUI-Manager read: pyproject.toml, requirements.txt, LICENSE."""
import re

import pytest

from sas_harness.host import ROOT

tomllib = pytest.importorskip("tomllib")  # Python >= 3.11
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
# What ComfyUI brings and a pack must never reinstall or pin in the user's environment.
COMFYUI_OWNS = {"torch", "torchvision", "torchaudio", "xformers", "numpy"}


def _requirement_names(lines) -> set[str]:
    names = set()
    for line in lines:
        line = line.split("#", 1)[0].strip()
        if line:
            names.add(re.split(r"[<>=!~\[; ]", line, maxsplit=1)[0].lower())
    return names


def test_project_fields_the_registry_requires(session):
    project = PYPROJECT["project"]
    assert re.fullmatch(r"[a-z0-9][a-z0-9_-]{2,99}", project["name"])
    assert re.fullmatch(r"\d+\.\d+\.\d+", project["version"])
    assert project["license"] and (ROOT / "LICENSE").is_file()
    assert project["description"] and project["urls"]["Repository"].startswith("https://github.com/")


def test_tool_comfy_section_and_icon(session):
    comfy = PYPROJECT["tool"]["comfy"]
    assert comfy["PublisherId"] and comfy["DisplayName"] == "Sage Attention Scope"
    icon = comfy["Icon"].split("/main/", 1)[1]
    assert (ROOT / icon).is_file(), f"Icon points at {icon}, which is not in the repository"
    assert (ROOT / comfy["web"]).is_dir()


def test_requirements_never_touch_comfyuis_own_packages(session):
    requirements = _requirement_names((ROOT / "requirements.txt").read_text().splitlines())
    assert requirements == _requirement_names(PYPROJECT["project"]["dependencies"]) == {"sageattention"}
    assert not requirements & COMFYUI_OWNS
