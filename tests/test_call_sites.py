"""The supported-models page's table of each family's attention calls (scripts/write_docs.py, from
sas_harness.call_sites)
held against a run of each family's tiny model through the Scope on this ComfyUI: the page's lines for a model
are those its run gives here, every call of the run is a declared kind and every declared kind a call of the run;
and the automatic floor the table applies to a family's usual token counts is the router's, at those counts."""
from __future__ import annotations

import dataclasses
import re

import pytest

from sage_attention_scope.patches import Reason, Settings, scope_for_family
from sas_harness import ROOT, call_sites
from sas_harness.doubles import RecordingKernel, make_kernel, registered
from sas_harness.families import (CASES, SAGE, UNET_LEVEL0_BLOCKS, UNET_LEVEL1_BLOCKS, lacking, model_of, release,
                                   routing_table, sample_case)
from sas_harness.host import comfyui_version
from sas_harness.run import last_generation

MODELS_PAGE = ROOT / "docs" / "models.md"
HEX = re.compile(r"\b(?=[0-9a-f]*[0-9])(?=[0-9a-f]*[a-f])[0-9a-f]{7,40}\b")  # what a commit's name looks like


def _guide_lines() -> dict:
    return call_sites.in_guide(MODELS_PAGE.read_text())


def test_every_case_has_its_calls_declared_and_every_declaration_a_case():
    assert set(call_sites.SITES) == {(case.family, case.config_class) for case in CASES}


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c.family}-{c.config_class}")
def test_the_guides_lines_for_a_model_are_those_of_its_run_here(case):
    if lacking(case):
        pytest.skip(lacking(case))
    here = comfyui_version()
    fresh = set(call_sites.rows_of(case, call_sites.run_case(case)))
    committed = {row for row, hosts in _guide_lines().items() if row.model == case.config_class and here in hosts}
    assert fresh == committed, ("docs/models.md's call lines differ from this run; run scripts/write_docs.py "
                                "on each test host")


def test_a_call_no_kind_names_is_refused():
    """The declarations follow the models: a call of the run no kind names (here: the SDXL case's kinds
    without its level-0 self-attention) is an error, not a line left out."""
    case = next(c for c in CASES if c.family == "SDXL")
    seen = call_sites.run_case(case)
    sites = call_sites.sites_of(case)
    fewer = dataclasses.replace(sites, kinds=sites.kinds[1:])
    with pytest.raises(ValueError, match="no kind"):
        call_sites.kinds_seen(case, seen, fewer)


def test_sdxl_calls_at_its_usual_token_counts_route_as_the_table_says(session):
    """SDXL at 1024² self-attends over 4096 tokens (the 64² level) and 1024 (the 32² level) and attends to
    77 text keys at both: the tiny UNet at a 64 x 64 latent makes exactly those calls, and the router at
    default settings (the automatic floor) runs the self-attention on the kernel and keeps the text calls on
    SDPA, as the table's lines say."""
    case = dataclasses.replace(next(c for c in CASES if c.family == "SDXL"), latent_hw=(64, 64))
    kernel = RecordingKernel()
    with registered(session, make_kernel("double", kernel)):
        scoped, _ = scope_for_family(model_of(case), Settings(kernel="double", routing="always"), session)
        sample_case(scoped, case)
    assert sorted({call_sites.tokens_of_kernel_call(call)[:2] for call in kernel.calls}) == [(1024, 1024),
                                                                                          (4096, 4096)]
    blocks = UNET_LEVEL0_BLOCKS + UNET_LEVEL1_BLOCKS  # each one self-attention and one call to the text
    assert routing_table(last_generation(session)) == {SAGE: blocks, Reason.TOO_SHORT: blocks}
    lines = {row.call: row for row in _guide_lines() if row.family == "SDXL"}
    for level, tokens in (("64²", 4096), ("32²", 1024)):
        assert lines[f"self-attention at the {level} level"].route == "kernel"
        assert lines[f"self-attention at the {level} level"].tokens.startswith(f"{tokens} / {tokens} at 1024²")
        assert lines[f"cross-attention to the 77-token text at the {level} level"].route == "SDPA (`too_short`)"


def test_the_table_reads_back_as_it_was_written():
    lines = _guide_lines()
    assert lines, "docs/models.md has no call table in its generated families block"
    block = MODELS_PAGE.read_text().split(call_sites.HEADER, 1)[1].split("<!-- /generated:families -->", 1)[0]
    assert call_sites.render(lines, release) == call_sites.HEADER + block.rstrip("\n")


def test_the_generated_tables_name_no_commit():
    """Figures name their GPU, ComfyUI and date; the run logs name the commits."""
    blocks = re.findall(r"<!-- generated:(\w+) -->\n(.*?)<!-- /generated:\1 -->", MODELS_PAGE.read_text(), re.S)
    assert blocks
    assert [(name, HEX.findall(text)) for name, text in blocks if HEX.findall(text)] == []
