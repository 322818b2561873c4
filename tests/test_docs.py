"""The docs say what the code declares, every link in them resolves, and the measured results name their
machine and command."""
import importlib.util
import re

from sas_harness import ROOT
from sage_attention_scope.patches import Reason

DOC = ROOT / "docs" / "user-guide.md"
MEASURED = ROOT / "docs" / "measured.md"
RUNS = ROOT / "bench" / "runs"  # the run logs: in neither the wheel nor the registry archive
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")  # [text](target) and ![alt](target)


def _write_docs():
    spec = importlib.util.spec_from_file_location("sas_write_docs", ROOT / "scripts" / "write_docs.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_generated_tables_match_the_code():
    write_docs = _write_docs()
    text = DOC.read_text()
    for name, make in write_docs.TABLES.items():
        table = make()
        assert table.count("\n|") > 2 and f"<!-- generated:{name} -->\n{table}\n<!-- /generated:{name} -->" in text, (
            f"docs/user-guide.md's {name} table differs from the code; run: .venv/bin/python scripts/write_docs.py")
    assert write_docs.stale() == []


def test_every_reason_is_explained():
    text = DOC.read_text()
    missing = [r.value for r in Reason if f"| `{r.value}` |" not in text]
    assert not missing


def _without_code(text: str, spans: bool = True) -> str:
    """Markdown without its fenced blocks (and, with ``spans``, its code spans): what is left holds the links."""
    text = re.sub(r"^```.*?^```", "", text, flags=re.S | re.M)
    return re.sub(r"`[^`\n]*`", "", text) if spans else text


def _anchors(doc) -> set[str]:
    """The anchors GitHub gives ``doc``'s headings: lower case, punctuation dropped, spaces as hyphens."""
    headings = re.findall(r"^#+ +(.+?) *$", _without_code(doc.read_text(), spans=False), re.M)
    return {re.sub(r"[^\w\- ]", "", h.replace("`", "").lower()).replace(" ", "-") for h in headings}


def test_every_relative_link_resolves():
    """Every relative link and image in README.md, docs/ and the run logs names a file or folder of this repository
    (and a heading of it, where it names one)."""
    broken = []
    for doc in [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md")), *sorted(RUNS.rglob("*.md"))]:
        for target in LINK.findall(_without_code(doc.read_text())):
            if re.match(r"[a-z][a-z0-9+.-]*:", target):  # https:, mailto:
                continue
            path, _, anchor = target.partition("#")
            resolved = (doc.parent / path).resolve() if path else doc
            where = f"{doc.relative_to(ROOT)}: {target}"
            if not resolved.is_relative_to(ROOT) or not resolved.exists():
                broken.append(where)
            elif anchor and (resolved.suffix != ".md" or anchor not in _anchors(resolved)):
                broken.append(where + " (no such heading)")
    assert not broken


def test_every_run_log_is_dated_and_indexed():
    """bench/runs/ holds dated logs only, each linked from its index."""
    undated = [p.name for p in RUNS.iterdir() if p.name != "README.md" and not re.match(r"\d{4}-\d\d-\d\d-", p.name)]
    assert not undated, "name each run log or folder YYYY-MM-DD-<gpu>-<subject>"
    index = RUNS / "README.md"
    linked = {(RUNS / target.partition("#")[0]).resolve() for target in LINK.findall(_without_code(index.read_text()))}
    unlisted = [str(p.relative_to(RUNS)) for p in sorted(RUNS.rglob("*")) if p.is_file() and p != index
                and p.resolve() not in linked]
    assert not unlisted, "bench/runs/README.md lists no link to these"


def test_measured_results_name_their_machine_and_command():
    """Each table of docs/measured.md sits in a section naming the command that reproduces it, under a GPU section
    naming the driver, torch and Triton (or a CPU section); the list of what has not run names no machine."""
    text = _without_code(MEASURED.read_text(), spans=False)
    for gpu in re.split(r"^(?=## )", text, flags=re.M)[1:]:
        sections = re.split(r"^(?=### )", gpu, flags=re.M)
        heading = gpu.splitlines()[0]
        if any("\n|---" in section for section in sections) and not heading.startswith("## Not yet measured"):
            assert "CPU" in heading or all(word in gpu for word in ("NVIDIA", "driver", "torch", "Triton")), heading
        for section in sections:
            if "\n|---" in section:
                command = re.search(r"`[^`\n]*(bench/|scripts/|tests/|pytest)[^`\n]*`", section)
                assert command, f"docs/measured.md: no command in {section.splitlines()[0]!r}"
