"""What the Comfy Registry and ComfyUI-Manager read: pyproject.toml, requirements.txt, LICENSE, the wheel
``pip wheel --no-deps .`` builds, and the registry archive (git-tracked files minus .comfyignore, as
``comfy node pack`` makes it)."""
import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from sas_harness.host import ROOT

tomllib = pytest.importorskip("tomllib")  # Python >= 3.11
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
# What ComfyUI brings and a pack must never reinstall or pin in the user's environment.
COMFYUI_OWNS = {"torch", "torchvision", "torchaudio", "xformers", "numpy"}
RUNS = ROOT / "bench" / "runs"  # the dated run logs, which ship in neither the wheel nor the registry archive
DATED = re.compile(r"\d{4}-\d\d-\d\d-")  # how a run log or its folder is named
# What ComfyUI loads from the pack, which the registry archive must hold.
LOADED = {"__init__.py", "pyproject.toml", "requirements.txt", "LICENSE", "nodes/__init__.py", "patches/__init__.py",
          "docs/user-guide.md", "docs/measured.md"}


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
    assert not _run_logs_among(names)


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


def test_the_urls_the_registry_reads(session):
    """comfy-cli hands the registry Homepage, Documentation, Repository and Issues from [project.urls], no other
    key: each set, on the project's GitHub."""
    urls = PYPROJECT["project"]["urls"]
    for key in ("Homepage", "Documentation", "Repository", "Issues"):
        assert urls.get(key, "").startswith("https://github.com/sage-attention-scope/sage-attention-scope"), key
    assert urls["Issues"].endswith("/issues")
    assert set(urls) == {"Homepage", "Documentation", "Repository", "Issues"}, "a key the registry never reads"


def _run_log_paths() -> list[str]:
    """Each run log's path inside bench/runs/ (the index included)."""
    logs = [p.relative_to(RUNS).as_posix() for p in sorted(RUNS.rglob("*")) if p.is_file()]
    assert len(logs) > 1, "bench/runs/ holds no run log: the checks below would pass for nothing"
    return logs


def _run_logs_among(names) -> list[str]:
    """The names (archive members) that are run logs: anything under bench/, a dated file or folder, or a file
    ending as one of bench/runs/'s dated logs does."""
    dated_logs = [log for log in _run_log_paths() if DATED.match(log)]
    found = []
    for name in names:
        parts = name.split("/")
        if "bench" in parts or any(DATED.match(part) for part in parts):
            found.append(name)
        elif any(name.endswith("/" + log) or name == log for log in dated_logs):
            found.append(name)
    return found


def _git(*args: str, cwd: Path = ROOT) -> list[str]:
    listed = subprocess.run(["git", "-C", str(cwd), *args, "-z"], capture_output=True, text=True, timeout=60)
    assert listed.returncode == 0, listed.stderr
    return [name for name in listed.stdout.split("\0") if name]


def _registry_archive() -> tuple[list[str], set[str]]:
    """The files a commit of this checkout would track (tracked, and untracked ones git does not ignore), and of
    them those the registry archive holds: the ones no .comfyignore pattern matches (git reads the patterns with
    the same wildmatch rules as comfy-cli's pathspec)."""
    if not (ROOT / ".git").exists():
        pytest.skip("not a git checkout: the registry archive is made from git-tracked files")
    tracked = [name for name in _git("ls-files", "--cached", "--others", "--exclude-standard")
               if (ROOT / name).is_file()]
    ignored = set(_git("ls-files", "--cached", "--others", "--ignored", "--exclude-from=.comfyignore"))
    return tracked, {name for name in tracked if name not in ignored}


def test_the_registry_archive_holds_the_pack_and_no_run_log(session):
    tracked, archive = _registry_archive()
    assert any(name.startswith("bench/runs/") for name in tracked), "the run logs are tracked, under bench/runs/"
    assert LOADED <= archive, sorted(LOADED - archive)
    assert not _run_logs_among(archive)
    assert not {name for name in archive if name.split("/")[0] in ("tests", "bench", "scripts", ".ci")}


def _comfy_cli() -> Path:
    """comfy-cli's command beside this Python, or on PATH; a skip naming why where neither has it."""
    beside = Path(sys.executable).with_name("comfy")
    found = beside if beside.is_file() else shutil.which("comfy")
    if not found:
        pytest.skip("comfy-cli is not installed in this environment (pip install comfy-cli): the registry's own "
                    "`comfy node pack` and `comfy node validate` are not run; the archive is checked through git")
    return Path(found)


def _comfy(comfy: Path, tree: Path, home: Path, *args: str) -> subprocess.CompletedProcess:
    """One comfy-cli command in ``tree``, asking nothing, sending nothing, its settings under ``home``."""
    env = {**os.environ, "HOME": str(home), "DO_NOT_TRACK": "1", "COMFY_NO_TELEMETRY": "1",
           "PATH": f"{comfy.parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    return subprocess.run([str(comfy), "--skip-prompt", "--no-enable-telemetry", *args], cwd=tree, env=env,
                          capture_output=True, text=True, timeout=300)


def test_comfy_node_pack_and_validate(session, tmp_path):
    """comfy-cli packs what git and .comfyignore say, no run log among it, and validates the pack."""
    comfy = _comfy_cli()
    tracked, archive = _registry_archive()
    # A repository of this checkout's files as a commit would hold them, so that comfy-cli packs the working tree
    # and writes its node.zip outside the checkout.
    tree, home = tmp_path / "tree", tmp_path / "home"
    home.mkdir()
    for name in tracked:
        (tree / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, tree / name)
    for args in (("init", "-q"), ("add", "-A")):
        made = subprocess.run(["git", "-C", str(tree), *args], capture_output=True, text=True, timeout=60)
        assert made.returncode == 0, made.stderr
    packed = _comfy(comfy, tree, home, "node", "pack")
    assert packed.returncode == 0, packed.stdout + packed.stderr
    names = set(zipfile.ZipFile(tree / "node.zip").namelist())
    assert names == archive, (sorted(names - archive), sorted(archive - names))
    assert not _run_logs_among(names)
    validated = _comfy(comfy, tree, home, "node", "validate")
    assert validated.returncode == 0, validated.stdout + validated.stderr
    said = validated.stdout + validated.stderr  # comfy-cli prints its verdict to stderr
    assert "All validation checks passed" in said and "Security warnings" not in said, said
