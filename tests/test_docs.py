"""The docs say what the code declares, every link in them resolves, and the measured results name their
machine and command."""
import importlib.util
import re

from sas_harness import ROOT
from sage_attention_scope.patches import Reason

README = ROOT / "README.md"
DOC = ROOT / "docs" / "user-guide.md"
MEASURED = ROOT / "docs" / "measured.md"
RUNS = ROOT / "bench" / "runs"  # the run logs: in neither the wheel nor the registry archive
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")  # [text](target) and ![alt](target)
# A commit hash as the docs would cite one: 7 to 40 lower-case hex characters holding a digit and a letter.
COMMIT_HASH = re.compile(r"\b(?=[0-9a-f]*[0-9])(?=[0-9a-f]*[a-f])[0-9a-f]{7,40}\b")
FIRST_SCREEN = 40  # the README's lines a reader sees before scrolling
# The kinds of GPU a reader must find on that screen, by the words its row of the install table starts with.
GPU_ROWS = {
    "an RTX 40/50": re.compile(r"RTX 40\b.*RTX 50\b"),
    "an H100/H200": re.compile(r"H100\b.*H200\b"),
    "a GPU without SageAttention 2": re.compile(r"without SageAttention 2\b"),
}


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


def _table_rows(lines: list[str]) -> list[list[str]]:
    """The cells of each Markdown table row among ``lines`` (header and separator rows included)."""
    return [[cell.strip() for cell in line.strip().strip("|").split("|")] for line in lines if line.startswith("|")]


def test_readme_first_screen_says_what_to_install_and_what_to_expect_per_gpu():
    """On the README's first screen, a row each for an RTX 40/50, an H100/H200 and a GPU without SageAttention 2
    names what to install and the speed to expect: a figure naming its GPU, ComfyUI version and date, or "not
    measured"."""
    rows = _table_rows(README.read_text().splitlines()[:FIRST_SCREEN])
    for gpu, starts in GPU_ROWS.items():
        found = [row for row in rows if starts.search(row[0])]
        assert found, f"README's first {FIRST_SCREEN} lines have no row for {gpu}"
        install, expect = found[0][1:3]
        assert re.search(r"SageAttention \d|requirements\.txt|pip install", install), (gpu, install)
        figures = re.findall(r"\d+(?:\.\d+)?×", expect)
        assert figures or "not measured" in expect, (gpu, expect)
        if figures:
            named = (re.search(r"\b(H100|H200|A100|B200|RTX \d+)\b", expect), re.search(r"ComfyUI \d", expect),
                     re.search(r"\d{4}-\d\d-\d\d", expect))
            assert all(named), (f"{gpu}: a figure names its GPU, ComfyUI version and date", expect)


def test_no_commit_hash_in_what_users_read():
    """README.md and the user guide cite no commit: hashes, provenance and history belong to the run logs."""
    found = {doc.name: sorted(set(COMMIT_HASH.findall(doc.read_text()))) for doc in (README, DOC)}
    assert not any(found.values()), f"commit hashes (move them to a log under bench/runs/): {found}"
