"""ComfyUI's own unit tests (tests-unit/ of the ComfyUI tree) end the same with the pack in its
custom_nodes/ as without it: each run in a copy of the tree made of links, whose custom_nodes/ is
empty or holds the pack."""
from __future__ import annotations

import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from sas_harness import ROOT, host


def _outcomes(tree: Path, with_pack: bool, out: Path) -> dict[str, str]:
    """Each unit test's outcome in a linked copy of ``tree`` (custom_nodes/ empty or with the pack)."""
    shadow = out / ("with" if with_pack else "without")
    shadow.mkdir()
    for entry in tree.iterdir():
        if entry.name != "custom_nodes":
            (shadow / entry.name).symlink_to(entry, target_is_directory=entry.is_dir())
    (shadow / "custom_nodes").mkdir()
    if with_pack:
        (shadow / "custom_nodes" / "sage_attention_scope").symlink_to(ROOT, target_is_directory=True)
    report = out / f"{shadow.name}.xml"
    subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests-unit",
                    f"--junitxml={report}"], cwd=shadow, capture_output=True, timeout=600)
    cases = ET.parse(report).getroot().iter("testcase")
    return {f"{c.get('classname')}.{c.get('name')}": (c[0].tag if len(c) else "passed") for c in cases}


def test_comfyuis_unit_tests_end_the_same_with_the_pack_installed(tmp_path):
    tree = host.comfyui_path()
    if not (tree / "tests-unit").is_dir() or not host.has_top_level_nodes(tree):
        pytest.skip(f"{tree} has no tests-unit/ in the standard layout")
    without, with_pack = _outcomes(tree, False, tmp_path), _outcomes(tree, True, tmp_path)
    assert len(without) > 100 and list(without.values()).count("passed") > 100
    assert with_pack == without
