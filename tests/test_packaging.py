"""What the Comfy Registry and ComfyUI-Manager read: pyproject.toml, requirements.txt, LICENSE, and
the wheel ``pip wheel --no-deps .`` builds."""
import re
import shutil
import subprocess
import sys
import zipfile

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
    """docs.comfy.org/registry/specifications, and what comfy-cli's config parser accepts."""
    project = PYPROJECT["project"]
    assert re.fullmatch(r"[a-z][a-z0-9]*([-_.][a-z0-9]+)*", project["name"]) and len(project["name"]) < 100
    assert "comfyui" not in project["name"].lower()  # the registry's advice for a node id
    assert re.fullmatch(r"\d+\.\d+\.\d+", project["version"])
    assert project["license"] == "GPL-3.0-or-later" and project["license-files"] == ["LICENSE"]
    assert ("GNU GENERAL PUBLIC LICENSE" in (ROOT / "LICENSE").read_text()
            and "Version 3" in (ROOT / "LICENSE").read_text())
    assert project["description"] and project["urls"]["Repository"].startswith("https://github.com/")
    os_values = [c for c in project["classifiers"] if c.startswith("Operating System :: ")]
    gpus = [c for c in project["classifiers"] if c.startswith("Environment :: ")]
    assert os_values == ["Operating System :: OS Independent"] and gpus == ["Environment :: GPU :: NVIDIA CUDA"]
    # the oldest ComfyUI with the V3 node API the nodes use, in the registry's version syntax
    assert PYPROJECT["tool"]["comfy"]["requires-comfyui"] == ">=0.3.75"


def test_the_wheel_builds_and_holds_the_pack_as_comfyui_loads_it(session, tmp_path):
    # Built from a copy of the checkout: setuptools leaves build/ behind, which a later build would reuse.
    tree = tmp_path / "tree"
    shutil.copytree(ROOT, tree, ignore=shutil.ignore_patterns(".git", ".venv", ".comfyui", ".artifacts", ".whl",
                                                              ".device", "build", "*.egg-info", "__pycache__"))
    built = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(tmp_path), str(tree)],
                           capture_output=True, text=True, timeout=600)
    assert built.returncode == 0, built.stdout + built.stderr
    wheel, = tmp_path.glob("*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    shipped = {f"sage_attention_scope/{p.relative_to(ROOT).as_posix()}" for folder in ("nodes", "patches", "web")
               for p in (ROOT / folder).rglob("*") if p.is_file() and "__pycache__" not in p.parts}
    shipped |= {f"sage_attention_scope/{p.relative_to(ROOT).as_posix()}"
                for p in (ROOT / "example_workflows").iterdir()}
    assert "sage_attention_scope/__init__.py" in names and shipped <= names, sorted(shipped - names)
    assert not {n for n in names if n.split("/")[1] in ("tests", "bench", "scripts", "docs", ".ci")}


def test_tool_comfy_section_and_icon(session):
    comfy = PYPROJECT["tool"]["comfy"]
    assert comfy["PublisherId"] and comfy["DisplayName"] == "Sage Attention Scope"
    icon = comfy["Icon"].split("/main/", 1)[1]
    assert (ROOT / icon).is_file(), f"Icon points at {icon}, which is not in the repository"
    assert "web" not in comfy  # the scripts are registered once, through WEB_DIRECTORY (tests/test_server.py)


def test_requirements_never_touch_comfyuis_own_packages(session):
    requirements = _requirement_names((ROOT / "requirements.txt").read_text().splitlines())
    assert requirements == _requirement_names(PYPROJECT["project"]["dependencies"]) == {"sageattention"}
    assert not requirements & COMFYUI_OWNS
