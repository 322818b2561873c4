"""Writes the parts of the docs that list what the code has or quote a measured figure, each from its source:

- docs/inputs.md, the node's inputs: their defaults from patches/settings.py, their help from nodes/scope.py
  (the tooltips the node shows);
- docs/kernels.md, the kernel libraries, the candidates per GPU and every kernel: patches/backends (REGISTRY,
  AUTO, EXACT, each kernel's GPUs), the libraries explained in LIBRARIES here;
- docs/status.md, why a call keeps ComfyUI's attention: patches/reasons.py (each Reason and the label Status
  prints), explained in REASONS here;
- docs/models.md, the supported models: patches/families (each family's classes, whether the Scope opens for
  it, the ComfyUI release that added it); from the test harness, the releases the suite runs on and the call
  table, a run of each family's tiny model through the Scope on this ComfyUI (tests/sas_harness/call_sites.py);
- the speed figures (README.md's table, docs/models.md's speed table): the tables of docs/measured.md, each
  under its **Run:** line (GPU, ComfyUI, date, kernels, what × compares), the newest run per model, GPU,
  ComfyUI and kernels.

    .venv/bin/python scripts/write_docs.py          # rewrite them in place
    .venv/bin/python scripts/write_docs.py --check  # exit 1 where the committed docs differ

Each part sits between ``<!-- generated:NAME -->`` and ``<!-- /generated:NAME -->``; tests/test_docs.py fails
when what is committed differs from what this writes. The call table's lines name the ComfyUI whose run gave
them: a run here rewrites this ComfyUI's lines and keeps the other test hosts' as committed, so run this on each
test host (scripts/test.sh's and scripts/test-comfyui-0.33.sh's ComfyUI) after a change to the engine, the
families or the harness.
"""
from __future__ import annotations

import argparse
import dataclasses
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
DOCS = ROOT / "docs"
MEASURED = DOCS / "measured.md"
INPUTS, KERNELS, MODELS, STATUS = (DOCS / name for name in ("inputs.md", "kernels.md", "models.md", "status.md"))
WRITTEN = (README, INPUTS, KERNELS, MODELS, STATUS)  # the files holding generated parts
NOT_MEASURED = "not measured"

# -- the measured page ---------------------------------------------------------------------------------------

RUN = re.compile(r"^\*\*Run:\*\* (?P<gpu>[^,]+), ComfyUI (?P<comfyui>[^,]+), (?P<date>\d{4}-\d\d-\d\d); "
                 r"kernels: (?P<kernels>[^;]+); (?P<measure>per step|whole 20-step generation)\.$", re.M)
PER_ROW = "per row"  # a Run line's ComfyUI or kernels given per row, in the table's column of that name
VALUE_COLUMNS = ("Scope defaults", "× no node")  # the column holding the Scope's figure against no node
FIGURE = re.compile(r"(\d+\.\d+)×")


@dataclasses.dataclass(frozen=True)
class Figure:
    """One figure of docs/measured.md: the Scope at its defaults against no node."""
    model: str     # the table's model cell without a closing remark in brackets: "FLUX.1 2048²"
    gpu: str       # "H100"
    comfyui: str   # as the docs quote it: "0.33", "0.3.75"
    date: str
    kernels: str   # "what pip installs", "SageAttention 2.2", ...
    measure: str   # "per step" or "whole 20-step generation"
    value: float

    @property
    def key(self) -> tuple[str, str, str, str, str]:
        """What a figure is of: the newest run's figure stands for it."""
        return self.model, self.gpu, self.comfyui, self.kernels, self.measure

    def shown(self, places: int = 2) -> str:
        return f"{self.value:.{places}f}×"


def short_version(version: str) -> str:
    """A ComfyUI release as the docs quote it: 0.33.0 as 0.33, 0.3.75 unchanged."""
    parts = version.strip().split(".")
    return ".".join(parts[:2]) if len(parts) == 3 and parts[2] == "0" else version.strip()


def model_label(cell: str) -> str:
    """A measured table's model cell without its closing remark: "SDXL 1024² (every call ...)" -> "SDXL 1024²"."""
    return re.sub(r"\s*\([^()]*\)$", "", cell.strip()).strip()


def _without_fences(text: str) -> str:
    return re.sub(r"^```.*?^```", "", text, flags=re.S | re.M)


def tables(text: str) -> list[list[list[str]]]:
    """Each Markdown table in ``text``: its rows' cells, the header first and the separator row left out."""
    found, current = [], []
    for line in text.splitlines() + [""]:
        if line.startswith("|"):
            current.append([cell.strip() for cell in line.strip().strip("|").split("|")])
        elif current:
            found.append([row for row in current if not re.fullmatch(r"[-: ]*", "".join(row))])
            current = []
    return found


def measured_figures(text: str | None = None) -> list[Figure]:
    """Every figure of the measured page's model tables: a table whose first column is "model", in a section
    whose **Run:** line says what was measured."""
    text = _without_fences(MEASURED.read_text() if text is None else text)
    figures = []
    for section in re.split(r"^(?=#{2,3} )", text, flags=re.M):
        run = RUN.search(section)
        if run is None:
            continue
        for table in tables(section):
            header = table[0]
            if header[0] != "model":
                continue
            [value] = [i for i, name in enumerate(header) if name in VALUE_COLUMNS]
            for row in table[1:]:
                cells = dict(zip(header, row))
                figure = FIGURE.search(row[value])
                if figure is None:
                    continue
                comfyui = cells["ComfyUI"] if run["comfyui"] == PER_ROW else run["comfyui"]
                kernels = cells["kernels"] if run["kernels"] == PER_ROW else run["kernels"]
                figures.append(Figure(model_label(row[0]), run["gpu"], short_version(comfyui), run["date"], kernels,
                                      run["measure"], float(figure.group(1))))
    return figures


def newest(figures: list[Figure]) -> dict[tuple, Figure]:
    """The newest run's figure for each model, GPU, ComfyUI, kernels and measure."""
    chosen: dict[tuple, Figure] = {}
    for figure in figures:
        held = chosen.get(figure.key)
        if held is not None and held.date == figure.date and held.value != figure.value:
            raise ValueError(f"docs/measured.md: two figures for {figure.key} on {figure.date}: "
                             f"{held.value} and {figure.value}")
        if held is None or figure.date > held.date:
            chosen[figure.key] = figure
    return chosen


def family_of(model: str, names) -> str | None:
    """The family a measured model label is of: the longest family name it starts with ("HunyuanVideo 1.5
    480p×121" is HunyuanVideo 1.5, "SD3.5 Large 1024²" SD3), case aside."""
    fits = [name for name in names if re.match(re.escape(name) + r"(?=[\s.]|$)", model, re.I)]
    return max(fits, key=len, default=None)


# -- README.md's table: what to install per GPU and what it gave -----------------------------------------------

SPEED_MODELS = ("FLUX.1 2048²", "FLUX.1 1024²", "LTX-Video 2B 768×512×97", "Lumina 2 1024²",
                "Cosmos Predict2 2B 1024²", "SDXL 1024²")
BUILD = "([how](docs/kernels.md#building-sageattention-2))"
# (your GPU, what to install, the runs shown: (GPU, ComfyUI, kernels) each)
SPEED_ROWS = (
    ("RTX 30, RTX 40, RTX 50, A100", f"the pack, then SageAttention 2 built for your GPU {BUILD}", ()),
    ("H100, H200", f"the pack, then SageAttention 2 built for sm90 {BUILD}",
     (("H100", "0.33", "SageAttention 2.2 with FA4 and cuDNN frontend"), ("H100", "0.33", "SageAttention 2.2"),
      ("H100", "0.3.75", "SageAttention 2.2"), ("H200", "0.3.75", "SageAttention 2.2"))),
    ("a GPU without SageAttention 2", "the pack alone (`requirements.txt`)",
     (("H100", "0.33", "FA4 and cuDNN frontend from pip"), ("H100", "0.33", "what pip installs"),
      ("H100", "0.3.75", "comfy-kitchen alone"), ("H200", "0.3.75", "SageAttention 1.0.6"))),
)
SPEED_HEADER = ("your GPU", "install", "measured on")


def run_label(gpu: str, comfyui: str, kernels: str, date: str) -> str:
    return f"{gpu}, ComfyUI {comfyui}, {kernels}, {date}"


def speed_table(figures: list[Figure] | None = None) -> str:
    """One row per GPU and run: the newest figure per model for that GPU, ComfyUI and kernels (a figure from an
    older run than the row's names its date), or "not measured" where no run has one."""
    chosen = newest(measured_figures() if figures is None else figures)
    columns = SPEED_HEADER + SPEED_MODELS
    rows = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    for gpus, install, runs in SPEED_ROWS:
        if not runs:
            rows.append(f"| {gpus} | {install} | {NOT_MEASURED} |" + " |" * len(SPEED_MODELS))
        for i, (gpu, comfyui, kernels) in enumerate(runs):
            cells = [chosen.get((model, gpu, comfyui, kernels, "per step")) for model in SPEED_MODELS]
            date = max((cell.date for cell in cells if cell), default=None)
            label = (run_label(gpu, comfyui, kernels, date) if date
                     else f"{gpu}, ComfyUI {comfyui}, {kernels}: {NOT_MEASURED}")
            shown = [NOT_MEASURED if cell is None else cell.shown() + ("" if cell.date == date else f" ({cell.date})")
                     for cell in cells]
            first = (gpus, install) if i == 0 else ("", "")
            rows.append("| " + " | ".join((*first, label, *shown)) + " |")
    return "\n".join(rows)


# -- docs/models.md ----------------------------------------------------------------------------------------------

SPEED_LIST_HEADER = ("family", "model", "GPU", "ComfyUI", "kernels", "×", "of", "date")


def speed_list(figures: list[Figure] | None = None) -> str:
    """Every model the measured page has, the newest run per GPU, ComfyUI, kernels and measure, by family."""
    from sage_attention_scope.patches import families
    chosen = newest(measured_figures() if figures is None else figures).values()
    rows = ["| " + " | ".join(SPEED_LIST_HEADER) + " |", "|" + "---|" * len(SPEED_LIST_HEADER)]
    listed = []
    for figure in chosen:
        family = family_of(figure.model, families.REGISTRY)
        if family is None:
            raise ValueError(f"docs/measured.md measured {figure.model!r}, of no family in patches/families")
        listed.append((family, figure))
    for family, f in sorted(listed, key=lambda x: (x[0].lower(), x[1].model, x[1].gpu, _release(x[1].comfyui),
                                                       x[1].kernels, x[1].measure)):
        rows.append(f"| {family} | {f.model} | {f.gpu} | {f.comfyui} | {f.kernels} | {f.shown(3)} | {f.measure} | "
                    f"{f.date} |")
    return "\n".join(rows)


def _release(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in version.split("."))


def tested_on(family) -> str:
    """The test hosts (the releases the suite runs on) that have ``family``'s classes: those not older than the
    release the family declares."""
    from sas_harness.families import TEST_HOSTS
    hosts = [host for host in TEST_HOSTS if _release(host) >= _release(family.comfyui)]
    return ", ".join(hosts) or "none yet"


def scope_of(family) -> str:
    if not family.opens:
        return f"never opens: {family.why_not}"
    if family.scope_controlnets:
        return "opens; its ControlNets in the sampling loop run in the Scope too"
    return "opens"


def measured_cell(family, measured_families: set[str]) -> str:
    if not family.opens:
        return "–"
    return "[yes](#measured-speed)" if family.name in measured_families else NOT_MEASURED


def models_table() -> str:
    from sage_attention_scope.patches import families
    measured_families = {family_of(f.model, families.REGISTRY) for f in measured_figures()}
    rows = ["| family | `comfy.supported_models` class (and subclasses) | diffusion model | scope | ComfyUI | "
            "tested on | measured |", "|---|---|---|---|---|---|---|"]
    for family in sorted(families.REGISTRY.values(), key=lambda f: f.name.lower()):
        rows.append(f"| {family.name} | " + ", ".join(f"`{c}`" for c in family.config_classes) + " | "
                    + ", ".join(f"`{d}`" for d in family.diffusion_models) + f" | {scope_of(family)} | "
                    + f"{family.comfyui} or newer | {tested_on(family)} | "
                    + f"{measured_cell(family, measured_families)} |")
    return "\n".join(rows)


def calls_table() -> str:
    """The attention calls of each family's tiny model run here (sas_harness.call_sites), beside the lines the
    committed page has from the other test hosts' runs: each host's run writes its own."""
    from sas_harness import call_sites
    from sas_harness.families import release
    from sas_harness.host import comfyui_version
    here, declared = comfyui_version(), call_sites.kind_order()
    seen_on = {}
    for row, hosts in call_sites.in_guide(MODELS.read_text()).items():
        others = hosts - {here}
        if others and (row.family, row.call) in declared:
            seen_on[row] = others
    for row in call_sites.host_rows():
        seen_on.setdefault(row, set()).add(here)
    return call_sites.render(seen_on, release)


def families_table() -> str:
    return models_table() + "\n\n" + calls_table()


# -- docs/inputs.md, docs/kernels.md ---------------------------------------------------------------------------

def inputs_table() -> str:
    from sage_attention_scope.nodes.scope import TOOLTIPS
    from sage_attention_scope.patches.settings import Settings
    rows = ["| input | default | what it does |", "|---|---|---|"]
    for field in dataclasses.fields(Settings):
        default = field.default
        shown = ("on" if default else "off") if isinstance(default, bool) else f"`{default}`"
        rows.append(f"| `{field.name}` | {shown} | {TOOLTIPS[field.name]} |")
    return "\n".join(rows)


def _names(names) -> str:
    return ", ".join(f"`{n}`" for n in names) or "none"


def kernels_table() -> str:
    """Per compute capability, the candidates ``auto`` and ``exact`` bind there (a kernel the GPU cannot run left
    out, as Finder.find leaves it), then every kernel with what it takes."""
    import torch

    from sage_attention_scope.patches import backends
    cuda = torch.device("cuda")

    def runs_on(capability):
        return lambda name: name in backends.REGISTRY and backends.REGISTRY[name].unusable_on(cuda, capability) is None

    rows = ["| GPU (compute capability) | `auto`: quantised kernels, in order of preference | `auto` and `exact`: "
            "exact kernels |", "|---|---|---|"]
    arches = [(f"sm{major}{minor}", (major, minor)) for major, minor in sorted(backends.AUTO)]
    older = (7, 0)
    for label, capability in [("sm70 and older", older),
                              *arches]:
        fits = runs_on(capability)
        quantised = [n for n in backends.Finder.quantised_names(capability) if fits(n)]
        rows.append(f"| {label} | {_names(quantised)} | {_names([n for n in backends.EXACT if fits(n)])} |")
    rows.append("| any other from sm80 | as sm80 | as sm80 |")
    rows += ["", "| kernel | what it is | library, function | head sizes | dtypes | layouts | masks | GPUs |",
             "|---|---|---|---|---|---|---|---|"]
    picked = {name for names in backends.AUTO.values() for name in names} | set(backends.EXACT)
    for b in backends.REGISTRY.values():
        gpus = ("/".join("sm%d%d" % c for c in sorted(b.capabilities)) if b.capabilities
                else f"sm{b.min_capability[0]}{b.min_capability[1]}+")
        heads = _ranges(sorted(b.head_dims))
        dtypes = ", ".join(sorted(str(d).removeprefix("torch.") for d in b.dtypes))
        layouts = ", ".join(sorted(b.layouts)) + (" (NHD as strided views)" if b.transposed_views else "")
        chosen = "" if b.name in picked else " (only when chosen)"
        function = f"{b.module}.{b.function}"
        if b.module.startswith(backends.__name__):  # the pack's own call of torch's SDPA, one backend pinned
            function = "torch.nn.functional.scaled_dot_product_attention"
        rows.append(f"| `{b.name}`{chosen} | {b.label} | {function} | "
                    f"{heads} | {dtypes} | {layouts} | {'yes' if b.masks else 'no'} | {gpus} |")
    return "\n".join(rows)


# Each kernel library in words: how to install it and where it pays (docs/measured.md has the figures). A
# library the registry has and this lacks is listed with its kernels and "not measured".
LIBRARIES = {
    "PyTorch": ("nothing: they come with torch",
                "on ComfyUI 0.33 and newer, wherever one beats ComfyUI's flash-first attention (cuDNN on an H100); "
                "exact"),
    "SageAttention 2": ("build it for your GPU ([below](#building-sageattention-2)), or a community wheel for your "
                        "torch, CUDA and Python", "long sequences: video models and 2048² images"),
    "SageAttention 1": ("this pack's `requirements.txt` (PyPI's 1.0.6; it needs Triton: on Windows "
                        "`pip install triton-windows`)",
                        "consumer GPUs, where measured routing decides; on an H200 slower than SDPA at every shape "
                        "measured, and wrong at short keys (the first-call check catches that)"),
    "comfy-kitchen": ("comes with recent ComfyUI, or `pip install comfy-kitchen`",
                      "GPUs whose INT8 runs at twice their FP16 (consumer Ampere and Ada) may gain; on an H100 it "
                      "was never the fastest candidate measured"),
    "SageAttention 3": ("build it from SageAttention's `sageattention3_blackwell` source",
                        "RTX 50 / Blackwell (sm120/121) only; FP4 changes images more, so it runs only when picked "
                        "by name"),
    "cuDNN frontend": ("`pip install nvidia-cudnn-frontend`",
                       "exact (bf16): on an H100 per call as fast as torch's own cuDNN backend; its FP8 SDPA is "
                       "offered on datacenter Blackwell only (not measured there)"),
    "FlashAttention 4": ("`pip install --pre flash-attn-4` (published as pre-releases; its first call compiles, for "
                         "seconds)",
                         "exact: on an H100 per call the fastest exact kernel at long sequences, a few percent "
                         "ahead of torch's cuDNN backend, which measured routing still kept per step at FLUX.1 "
                         "2048²"),
}


def libraries_table() -> str:
    from sage_attention_scope.patches import backends
    kernels: dict[str, list[str]] = {}
    for backend in backends.REGISTRY.values():
        kernels.setdefault(backend.library, []).append(backend.name)
    rows = ["| library | its kernels | install | where it pays |", "|---|---|---|---|"]
    known = list(LIBRARIES)
    for library, names in sorted(kernels.items(), key=lambda item: (known.index(item[0]) if item[0] in known
                                                                    else len(known), item[0].lower())):
        install, pays = LIBRARIES.get(library, ("its own project's instructions", NOT_MEASURED))
        rows.append(f"| {library} | {_names(names)} | {install} | {pays} |")
    return "\n".join(rows)


def _ranges(values: list[int]) -> str:
    if len(values) > 4 and values == list(range(values[0], values[-1] + 1)):
        return f"{values[0]}-{values[-1]}"
    if len(values) > 4 and values == list(range(values[0], values[-1] + 1, values[0])):
        return f"multiples of {values[0]} up to {values[-1]}"
    return ", ".join(map(str, values))


# -- docs/status.md: why a call keeps ComfyUI's attention ----------------------------------------------------------

# Each Reason in words beyond its label; a Reason without a line here stops this script.
REASONS = {
    "disabled": "the node's `enabled` is off",
    "outside_scope": "made with the model's options, but not while it samples",
    "not_tensors": "q, k and v are not tensors: no kernel can take the call, ComfyUI's own attention runs it",
    "too_short": "query or key shorter than the floor (`min_seq_len`; automatic: query 1024, key 512 tokens)",
    "not_cuda": "tensors not on a CUDA device",
    "no_kernel": "no candidate for this GPU, or none installed (Status says which and why)",
    "low_precision_opt_out": "the model passed `low_precision_attention=False`, ComfyUI's opt-out of quantised "
                             "attention",
    "dtype": "q/k/v not of a dtype the kernel takes (fp16/bf16; comfy-kitchen also fp32)",
    "layout": "q/k/v of shapes no kernel takes (mismatched heads, grouped-query k/v not flagged as such)",
    "head_dim": "a head size the kernel does not take",
    "scale": "a softmax scale the kernel cannot apply (SageAttention 3)",
    "grouped_query": "grouped-query attention on a GPU where the kernel is wrong with it (cuDNN on sm100, torch "
                     "issue 193893)",
    "outside_steps": "the step lies outside `start_percent`–`end_percent`",
    "outside_blocks": "one of the first or last blocks kept on ComfyUI's attention (`first_blocks`, `last_blocks`)",
    "device_retired": "three Triton errors in a row on this device this session",
    "oom_earlier": "the kernel ran out of memory earlier in this generation",
    "check_failed": "the first-call check for this device, dtype, head size, key-length class and kernel failed, "
                    "or the kernel later returned NaN/inf",
    "mask": "an attention mask the kernel cannot take (a mask that masks nothing is dropped, and keys a mask leaves "
            "out for every query are left out of the call: these qualify)",
    "measured_slower": "no checked candidate beat ComfyUI's attention by the tie margin for this shape",
    "kernel_fault": "the kernel raised or returned a bad result on this call",
    "step_trial": "measured routing on a GPU timed one whole step without the kernels, to compare with the step "
                  "before it, which ran with them (once per model and latent size in a session)",
    "step_slower": "that comparison found the whole step no faster with the kernels (a kernel can time faster "
                   "alone than inside a step, e.g. where the CPU sets the pace): the Scope steps aside from steps "
                   "of that size for the session",
    "sparse_unavailable": "sparse asked for, and no Sol-Attn on this device: comfy-kitchen older than 0.2.40 or not "
                          "installed, or a GPU older than sm80 (the log says which)",
    "sparse_undeclared": "sparse asked for, in a family that does not say where its text tokens sit "
                         "([sparse attention](sparse.md) names the families that run sparse)",
    "sparse_before_start": "sparse asked for; a step before `sparse_start_percent`",
    "sparse_first_block": "sparse asked for; the first block of its block type, kept dense",
    "sparse_short": "sparse asked for; fewer tokens than `sparse_min_tokens`",
    "sparse_cross": "sparse asked for; cross-attention (query and keys of different lengths)",
    "sparse_gate": "sparse asked for; the first sparse call of its kind landed further from dense than "
                   "`sparse_gate`",
}


def reasons_table() -> str:
    from sage_attention_scope.patches import Reason
    missing = [r.value for r in Reason if r.value not in REASONS]
    if missing:
        raise SystemExit(f"scripts/write_docs.py: say what these reasons mean in REASONS: {missing}")
    rows = ["| reason | Status says | what it means |", "|---|---|---|"]
    rows += [f"| `{r.value}` | {r.label} | {REASONS[r.value]} |" for r in Reason]
    return "\n".join(rows)


TABLES = {"speed": speed_table, "inputs": inputs_table, "libraries": libraries_table, "kernels": kernels_table,
          "reasons": reasons_table, "families": families_table, "speed-list": speed_list}


def blocks(text: str) -> dict[str, str]:
    """The generated parts in ``text``, by name."""
    return dict(re.findall(r"<!-- generated:([\w-]+) -->\n(.*?)<!-- /generated:\1 -->", text, re.S))


def rewrite(text: str) -> str:
    for name in blocks(text):
        if name not in TABLES:
            raise ValueError(f"no generated part is called {name!r}")
        pattern = re.compile(rf"(<!-- generated:{re.escape(name)} -->\n).*?(<!-- /generated:{re.escape(name)} -->)",
                             re.S)
        table = TABLES[name]()
        text = pattern.sub(lambda m: m.group(1) + table + "\n" + m.group(2), text)
    return text


def stale() -> list[str]:
    """The files whose generated parts differ from what their sources give."""
    return [str(path.relative_to(ROOT)) for path in WRITTEN if rewrite(path.read_text()) != path.read_text()]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only say which files differ (exit 1)")
    args = parser.parse_args(argv)
    import sas_harness  # boots ComfyUI and imports the pack as sage_attention_scope, as ComfyUI would
    sas_harness.boot()
    if args.check:
        differ = stale()
        print("\n".join(differ) or "docs match the code and the measured page")
        return 1 if differ else 0
    for path in WRITTEN:
        path.write_text(rewrite(path.read_text()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
