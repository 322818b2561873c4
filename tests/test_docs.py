"""The docs say what the code declares and what was measured: the generated parts match their sources, every
speed figure the README and the docs quote is the measured page's newest for its model, GPU, ComfyUI and
kernels (or "not measured" only where the page has none), every link resolves, the README fits one screen and
the guide five minutes, and the measured results name their machine and command."""
import importlib.util
import re
import sys

from sas_harness import ROOT
from sage_attention_scope.patches import Reason

README = ROOT / "README.md"
DOCS = ROOT / "docs"
GUIDE = DOCS / "user-guide.md"
MEASURED = DOCS / "measured.md"
REFERENCE = ("inputs.md", "kernels.md", "models.md", "status.md", "troubleshooting.md", "measured.md")
# What users read, where a figure must come from the measured page: all but that page and the design notes.
QUOTING = [README, *sorted(p for p in DOCS.glob("*.md") if p.name not in ("measured.md", "design.md"))]
RUNS = ROOT / "bench" / "runs"  # the run logs: in neither the wheel nor the registry archive
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")  # [text](target) and ![alt](target)
# A commit hash as the docs would cite one: 7 to 40 lower-case hex characters holding a digit and a letter.
COMMIT_HASH = re.compile(r"\b(?=[0-9a-f]*[0-9])(?=[0-9a-f]*[a-f])[0-9a-f]{7,40}\b")
FIRST_SCREEN = 40      # the README's lines a reader sees before scrolling
README_WORDS = 250     # words outside its table and its commands: one screen, read in a minute
GUIDE_WORDS = 1250     # about five minutes of reading
# The kinds of GPU a reader must find on that screen, by the words its row of the install table starts with.
GPU_ROWS = {
    "an RTX 40/50": re.compile(r"RTX 40\b.*RTX 50\b"),
    "an H100/H200": re.compile(r"H100\b.*H200\b"),
    "a GPU without SageAttention 2": re.compile(r"without SageAttention 2\b"),
}
FIGURE = re.compile(r"(\d+\.\d+)×")
NOT_MEASURED = "not measured"


def _write_docs():
    spec = importlib.util.spec_from_file_location("sas_write_docs", ROOT / "scripts" / "write_docs.py")
    module = sys.modules[spec.name] = importlib.util.module_from_spec(spec)  # dataclasses look it up there
    spec.loader.exec_module(module)
    return module


WRITE_DOCS = _write_docs()
# Where each generated part lives.
PARTS = {README: {"speed"}, DOCS / "inputs.md": {"inputs"}, DOCS / "kernels.md": {"libraries", "kernels"},
         DOCS / "models.md": {"families", "speed-list"}, DOCS / "status.md": {"reasons"}}


def _without_code(text: str, spans: bool = True) -> str:
    """Markdown without its fenced blocks (and, with ``spans``, its code spans): what is left holds the links."""
    text = re.sub(r"^```.*?^```", "", text, flags=re.S | re.M)
    return re.sub(r"`[^`\n]*`", "", text) if spans else text


def test_each_generated_part_is_what_its_source_gives():
    """Run scripts/write_docs.py after a change to the inputs, the kernels, the reasons, the families or the
    measured page."""
    assert set(PARTS) == set(WRITE_DOCS.WRITTEN)
    assert set().union(*PARTS.values()) == set(WRITE_DOCS.TABLES)
    for path, names in PARTS.items():
        text = path.read_text()
        assert set(WRITE_DOCS.blocks(text)) == names, path.name
        assert WRITE_DOCS.rewrite(text) == text, (
            f"{path.relative_to(ROOT)} differs from what its sources give; run: .venv/bin/python scripts/write_docs.py")
        for name, block in WRITE_DOCS.blocks(text).items():
            assert block.count("\n|") > 2, (path.name, name)


def test_every_reason_is_explained():
    text = (DOCS / "status.md").read_text()
    missing = [r.value for r in Reason if f"| `{r.value}` |" not in text]
    assert not missing


def _anchors(doc) -> set[str]:
    """The anchors GitHub gives ``doc``'s headings: lower case, punctuation dropped, spaces as hyphens."""
    headings = re.findall(r"^#+ +(.+?) *$", _without_code(doc.read_text(), spans=False), re.M)
    return {re.sub(r"[^\w\- ]", "", h.replace("`", "").lower()).replace(" ", "-") for h in headings}


def test_every_relative_link_resolves():
    """Every relative link and image in README.md, docs/ and the run logs names a file or folder of this repository
    (and a heading of it, where it names one)."""
    broken = []
    for doc in [README, *sorted(DOCS.rglob("*.md")), *sorted(RUNS.rglob("*.md"))]:
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


def test_the_reference_pages_are_linked_from_the_readme_and_the_guide():
    for doc, prefix in ((README, "docs/"), (GUIDE, "")):
        linked = {target.partition("#")[0] for target in LINK.findall(_without_code(doc.read_text()))}
        missing = [page for page in ("user-guide.md", *REFERENCE) if f"{prefix}{page}" not in linked
                   and (ROOT / "docs" / page) != doc]
        assert not missing, f"{doc.name} links none of {missing}"


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


def test_each_model_table_of_the_measured_page_says_what_it_measured():
    """A table of models against no node sits under a **Run:** line (GPU, ComfyUI, date, kernels, what × compares),
    which is how the other pages' figures are read from it; the reading finds the page's headline figure."""
    text = _without_code(MEASURED.read_text(), spans=False)
    for section in re.split(r"^(?=#{2,3} )", text, flags=re.M):
        if any(table[0][0] == "model" for table in WRITE_DOCS.tables(section)):
            assert WRITE_DOCS.RUN.search(section), f"docs/measured.md: no **Run:** line in {section.splitlines()[0]!r}"
    figures = WRITE_DOCS.measured_figures()
    headline = WRITE_DOCS.Figure("FLUX.1 2048²", "H100", "0.33", "2026-12-07", "SageAttention 2.2", "per step", 1.404)
    assert headline in figures
    assert len({f.key for f in figures}) > 20


def _newest():
    return WRITE_DOCS.newest(WRITE_DOCS.measured_figures())


def _shows(text: str, figure) -> bool:
    """Whether ``text`` ("1.40×") is ``figure``'s value at the places it shows."""
    places = len(text.rstrip("×").partition(".")[2])
    return places >= 2 and text == f"{figure.value:.{places}f}×"


def _readme_table() -> tuple[list[str], list[list[str]], list[int]]:
    """The README's install and speed table: its header, its rows and their line numbers."""
    lines = README.read_text().splitlines()
    at = [i for i, line in enumerate(lines) if line.startswith("| your GPU |")]
    assert len(at) == 1, "the README has one table of what to install and what it gave"
    rows, numbers = [], []
    for i in range(at[0], len(lines)):
        if not lines[i].startswith("|"):
            break
        rows.append([cell.strip() for cell in lines[i].strip().strip("|").split("|")])
        numbers.append(i)
    return rows[0], rows[2:], numbers


RUN_LABEL = re.compile(r"(?P<gpu>[^,]+), ComfyUI (?P<comfyui>[^,]+), (?P<kernels>[^,]+), (?P<date>\d{4}-\d\d-\d\d)$")
CELL = re.compile(r"(?P<figure>\d+\.\d+×)(?: \((?P<date>\d{4}-\d\d-\d\d)\))?$")


def test_readme_first_screen_says_what_to_install_and_what_to_expect_per_gpu():
    """On the README's first screen, a row each for an RTX 40/50, an H100/H200 and a GPU without SageAttention 2
    names what to install and what it gave: figures under a run naming its GPU, ComfyUI and date, or "not
    measured"."""
    header, rows, numbers = _readme_table()
    assert numbers[-1] < FIRST_SCREEN, f"the README's table ends past its first {FIRST_SCREEN} lines"
    assert header[:3] == ["your GPU", "install", "measured on"]
    for gpu, starts in GPU_ROWS.items():
        found = [i for i, row in enumerate(rows) if starts.search(row[0])]
        assert found, f"README's table has no row for {gpu}"
        install = rows[found[0]][1]
        assert re.search(r"SageAttention \d|requirements\.txt|the pack alone", install), (gpu, install)
        end = next((i for i in range(found[0] + 1, len(rows)) if rows[i][0]), len(rows))
        for row in rows[found[0]:end]:  # its runs: the row and those under it with no GPU of their own
            assert RUN_LABEL.match(row[2]) or NOT_MEASURED in row[2], (gpu, row[2])


def test_every_figure_of_the_readme_table_is_the_measured_pages_newest():
    """Each cell is the newest figure of the measured page for its model (the column) and the row's GPU, ComfyUI
    and kernels, dated where it is older than the row's run; "not measured" only where the page has none."""
    header, rows, _ = _readme_table()
    newest, models = _newest(), header[3:]
    for row in rows:
        run = RUN_LABEL.match(row[2])
        if run is None:  # no run for this GPU: nothing claimed
            assert NOT_MEASURED in row[2] and not any(cell.strip() for cell in row[3:]), row
            continue
        comfyui = WRITE_DOCS.short_version(run["comfyui"])
        dates = []
        for model, cell in zip(models, row[3:]):
            figure = newest.get((model, run["gpu"], comfyui, run["kernels"], "per step"))
            where = f"README: {model}, {row[2]}"
            if cell == NOT_MEASURED:
                assert figure is None, f"{where} says not measured; docs/measured.md has {figure}"
                continue
            shown = CELL.match(cell)
            assert shown and figure is not None, f"{where}: {cell!r}, the measured page has {figure}"
            assert _shows(shown["figure"], figure), f"{where}: {cell}, the measured page {figure.value}"
            assert (shown["date"] or run["date"]) == figure.date, f"{where}: {cell}, measured on {figure.date}"
            dates.append(figure.date)
        assert run["date"] == max(dates), f"{row[2]}: the row's run is its newest figure's ({max(dates)})"


# A figure quoted in prose: "FLUX.1 2048²: 1.40× (H100, ComfyUI 0.33, 2026-12-07, SageAttention 2.2)", with ", whole
# 20-step generation" before the bracket closes where it is one.
CITATION = (r"(?P<model>{models}): (?P<figure>\d+\.\d+×) \((?P<gpu>[^,()]+), ComfyUI (?P<comfyui>[\d.]+), "
            r"(?P<date>\d{{4}}-\d\d-\d\d), (?P<kernels>[^,()]+)(?P<whole>, whole 20-step generation)?\)")
FIGURE_TABLE = ("model", "GPU", "ComfyUI", "kernels", "×", "of", "date")


def _quoted(text: str, newest: dict) -> tuple[list[str], list[str]]:
    """What ``text`` quotes that the measured page does not say (problems), and every figure of it that no table
    row or citation accounts for (unsourced)."""
    models = "|".join(re.escape(m) for m in sorted({key[0] for key in newest}, key=len, reverse=True))
    citation = re.compile(CITATION.format(models=models))
    problems, unsourced = [], []
    lines = _without_code(text, spans=False).splitlines()
    for number, line in enumerate(lines):
        spans = []
        for cite in citation.finditer(line):
            measure = "whole 20-step generation" if cite["whole"] else "per step"
            figure = newest.get((cite["model"], cite["gpu"], WRITE_DOCS.short_version(cite["comfyui"]),
                                 cite["kernels"], measure))
            if figure is None or figure.date != cite["date"] or not _shows(cite["figure"], figure):
                problems.append(f"{cite.group(0)!r}: the measured page's newest is {figure}")
            spans.append(cite.span("figure"))
        for figure in FIGURE.finditer(line):
            if not any(start <= figure.start() < end for start, end in spans):
                unsourced.append(f"line {number + 1}: {line.strip()}")
    return problems, unsourced


def _figure_tables(text: str):
    """The tables listing measured figures with what each is of (docs/models.md's speed list)."""
    for table in WRITE_DOCS.tables(_without_code(text, spans=False)):
        if all(name in table[0] for name in FIGURE_TABLE):
            yield table


def test_every_speed_figure_the_docs_quote_is_the_measured_pages_newest():
    """Beyond the README's table, a figure is quoted in a table of measured figures (model, GPU, ComfyUI,
    kernels, what × compares, date) or in prose naming its model, GPU, ComfyUI, date and kernels; each is the
    measured page's newest for those. A figure quoted any other way is refused: it has no source a test can
    hold."""
    newest = _newest()
    _, _, readme_lines = _readme_table()
    problems, unsourced = [], []
    for doc in QUOTING:
        text = doc.read_text()
        lines = text.splitlines()
        if doc == README:  # the README's table is held above
            text = "\n".join("" if i in readme_lines else line for i, line in enumerate(lines))
        for table in _figure_tables(text):
            for row in table[1:]:
                cells = dict(zip(table[0], row))
                figure = newest.get((cells["model"], cells["GPU"], WRITE_DOCS.short_version(cells["ComfyUI"]),
                                     cells["kernels"], cells["of"]))
                if figure is None or figure.date != cells["date"] or not _shows(cells["×"], figure):
                    problems.append(f"{doc.name}: {row}: the measured page's newest is {figure}")
            rows = {"| " + " | ".join(row) + " |" for row in table}
            text = "\n".join("" if line in rows else line for line in text.splitlines())
        wrong, loose = _quoted(text, newest)
        problems += [f"{doc.name}: {p}" for p in wrong]
        unsourced += [f"{doc.name} {u}" for u in loose]
    assert not problems
    assert not unsourced, "quote a figure as 'MODEL: 1.23× (GPU, ComfyUI V, DATE, KERNELS)' or from a table"


def test_the_models_page_says_not_measured_only_where_the_measured_page_has_nothing():
    from sage_attention_scope.patches import families
    measured = {WRITE_DOCS.family_of(figure.model, families.REGISTRY) for figure in WRITE_DOCS.measured_figures()}
    [models] = [t for t in WRITE_DOCS.tables((DOCS / "models.md").read_text()) if t[0][0] == "family"
                and "measured" in t[0]]
    column = models[0].index("measured")
    for row in models[1:]:
        if row[column] == NOT_MEASURED:
            assert row[0] not in measured, f"docs/models.md: {row[0]} says not measured; docs/measured.md has it"
        elif row[column] != "–":
            assert row[0] in measured, row


def _words(text: str) -> int:
    """Words a reader reads: generated parts, code blocks, HTML comments and link targets left out."""
    text = re.sub(r"<!-- generated:([\w-]+) -->.*?<!-- /generated:\1 -->", "", text, flags=re.S)
    text = re.sub(r"<!--.*?-->", "", _without_code(text, spans=False), flags=re.S)
    text = re.sub(r"\]\([^)]*\)", "]", text)
    return len(re.findall(r"[^\s|#*`·→\-]+", text))


def test_the_readme_is_one_screen_and_the_guide_five_minutes():
    assert _words(README.read_text()) <= README_WORDS
    assert len(README.read_text().splitlines()) <= 2 * FIRST_SCREEN
    assert _words(GUIDE.read_text()) <= GUIDE_WORDS


def test_the_readme_names_its_two_commands_and_what_the_first_start_costs():
    """One command starts ComfyUI with the pack, one runs the tests (.ci/run calls it); the README says what the
    first start costs and the server's options."""
    text = README.read_text()
    commands = re.findall(r"^```\n(.*?)^```", text, flags=re.S | re.M)
    assert any("bash scripts/comfyui.sh" in block and "bash scripts/test.sh" in block for block in commands)
    assert "scripts/test.sh" in (ROOT / ".ci" / "run").read_text()
    for said in ("a few minutes", "6 GB", "PORT=", "SAS_GPU=1", "COMFYUI_PATH="):
        assert said in text, said


def test_no_commit_hash_in_what_users_read():
    """README.md and the docs users read cite no commit: hashes, provenance and history belong to the run logs."""
    found = {doc.name: sorted(set(COMMIT_HASH.findall(doc.read_text()))) for doc in QUOTING}
    assert not any(found.values()), f"commit hashes (move them to a log under bench/runs/): {found}"
