"""Writes the docs' tables that come from the code: the node's inputs, defaults and help
(patches/settings.py, nodes/scope.py), the kernel ``auto`` picks per GPU (patches/backends/), the
supported models (patches/families/), and what each family's attention calls do, from a run of its tiny
model through the Scope on this ComfyUI (tests/sas_harness/call_sites.py).

    .venv/bin/python scripts/write_docs.py          # rewrite them in place
    .venv/bin/python scripts/write_docs.py --check  # exit 1 where the committed docs differ

Each table sits between ``<!-- generated:NAME -->`` and ``<!-- /generated:NAME -->`` in a docs
file; tests/test_docs.py fails when what is committed differs from what this writes. The call table's
lines name the ComfyUI whose run gave them: a run here rewrites this ComfyUI's lines and keeps the other
test hosts' as committed, so run this on each test host (scripts/test.sh's and
scripts/test-comfyui-0.33.sh's ComfyUI) after a change to the engine, the families or the harness.
"""
from __future__ import annotations

import argparse
import dataclasses
import re
import sys

import sas_harness

ROOT = sas_harness.ROOT
GUIDE = ROOT / "docs" / "user-guide.md"
DOCS = (GUIDE,)


def inputs_table() -> str:
    from sage_attention_scope.nodes.scope import TOOLTIPS
    from sage_attention_scope.patches.settings import Settings
    rows = ["| input | default | what it does |", "|---|---|---|"]
    for field in dataclasses.fields(Settings):
        default = field.default
        shown = ("on" if default else "off") if isinstance(default, bool) else f"`{default}`"
        rows.append(f"| `{field.name}` | {shown} | {TOOLTIPS[field.name]} |")
    return "\n".join(rows)


def kernels_table() -> str:
    from sage_attention_scope.patches import backends
    exact = ", ".join(f"`{n}`" for n in backends.EXACT)
    rows = ["| GPU (compute capability) | `auto`'s candidates, in order of preference (each installed one is timed; "
            "`routing=always` runs the first) |", "|---|---|"]
    for (major, minor), names in sorted(backends.AUTO.items()):
        rows.append(f"| sm{major}{minor} | " + ", ".join(f"`{n}`" for n in names) + f", then {exact} |")
    rows.append(f"| any other from sm80 | as sm80; `exact`: {exact} alone |")
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
        if b.exact:  # the pack's own call of torch's SDPA, under sdpa_kernel with the one backend
            function = "torch.nn.functional.scaled_dot_product_attention"
        rows.append(f"| `{b.name}`{chosen} | {b.label} | {function} | "
                    f"{heads} | {dtypes} | {layouts} | {'yes' if b.masks else 'no'} | {gpus} |")
    return "\n".join(rows)


# Whole generations at full depth through the Scope's defaults against no node, per step unless a whole 20-step
# generation is named; NVIDIA H100, bf16, torch 2.11; SageAttention 2.2 sm90 unless "what pip installs" is named
# (SageAttention 1.0.6 and comfy-kitchen 0.2.40, no SageAttention 2). 2026-12-07 is the candidates engine, 2026-12-06
# the previous one (docs/measured.md has the tables, the run logs under bench/runs/ the commands and the engine each
# ran). A family without a figure says so: never an estimate.
PER_STEP = {"FLUX.1": "H100, 2026-12-07, ComfyUI 0.33: 1.404× at 2048²; what pip installs: 1.308× at 2048², 1.107× at "
                      "1024². H100, 2026-12-06 (the previous engine): ComfyUI 0.33, a whole 20-step generation at "
                      "2048² 1.400×; ComfyUI 0.3.75: 1.070× at 2048²; ComfyUI 0.3.75 with comfy-kitchen 0.2.40 alone: "
                      "1.018× at 1024², 1.001× at 2048² (keeps SDPA)",
            "Qwen-Image": "H100, 2026-12-06. ComfyUI 0.3.75: 1.063× at 2048²; ComfyUI 0.33: a whole 20-step "
                          "generation at 2048² 1.385×",
            "Wan": "H100, 2026-12-06. ComfyUI 0.33: a whole 20-step generation of Wan 2.2 5B (1280×704×121) 1.517×; "
                   "ComfyUI 0.3.75: 1.157× (2.1 14B, 832×480×81)",
            "Krea 2": "H100, 2026-12-06, ComfyUI 0.33: 1.057× at 1024², 1.272× at 2048²",
            "Kandinsky 5": "H100, 2026-12-06, ComfyUI 0.33: 1.542× (Lite, 768×512×121)",
            "CogVideoX": "H100, 2026-12-06, ComfyUI 0.33: 1.242× (5B, 720×480×49)",
            "LTX-2": "H100, 2026-12-06, ComfyUI 0.33: 1.238× (19B, 1248×704×121)",
            "HunyuanVideo": "H100, 2026-12-06, ComfyUI 0.33: 1.424× (848×480×73, a short prompt's padding gathered); "
                            "a whole 20-step generation 1.416×",
            "SD3": "H100, 2026-12-06, ComfyUI 0.33, SD3.5 Large: 1.003× at 1024² (keeps SDPA), 1.260× at 2048²",
            "Chroma": "H100, 2026-12-06, ComfyUI 0.33: 1.083× at 1024²",
            "HiDream": "H100, 2026-12-06, ComfyUI 0.33: 1.074× at 1024² (I1 Full)",
            "Z-Image": "H100, 2026-12-06, ComfyUI 0.33: 1.363× at 2048²",
            "FLUX.2": "H100, 2026-12-06, ComfyUI 0.33: 1.281× at 2048² (dev, 32B)",
            "HunyuanVideo 1.5": "H100, 2026-12-06, ComfyUI 0.33: 1.780× (8.3B, 480p×121)",
            "Omnigen2": "H100, 2026-12-06, ComfyUI 0.33: 1.034× at 1024²",
            # host-bound models, whose rounds differ by up to 15%
            "Lumina 2": "H100, 2026-12-07, ComfyUI 0.33, what pip installs: 1.151× at 1024² (host-bound)",
            "Cosmos Predict2": "H100, 2026-12-07, ComfyUI 0.33, what pip installs: 0.939× at 1024² (2B; every call on "
                               "a kernel that timed faster per call and is slower in the step; host-bound)",
            "LTX-Video": "H100, 2026-12-07, ComfyUI 0.33, what pip installs: 1.123× (2B, 768×512×97; host-bound)",
            "SDXL": "H100, 2026-12-07, ComfyUI 0.33, what pip installs: 0.712× at 1024² (its self-attention on a "
                    "kernel that timed faster per call and is slower in the step). H100, 2026-12-06 (the previous "
                    "engine): a whole 20-step generation at 1024² 0.924× (kept SDPA; one round)"}
NOT_MEASURED = "not measured"


def tested_on(family) -> str:
    """The test hosts that have ``family``'s classes: those not older than the release declared for it."""
    from sas_harness.families import TEST_HOSTS, oldest_comfyui, release
    hosts = [host for host in TEST_HOSTS if release(host) >= release(oldest_comfyui(family.name))]
    return ", ".join(hosts) or "none yet"


def scope_of(family) -> str:
    if not family.opens:
        return f"never opens: {family.why_not}"
    if family.scope_controlnets:
        return "opens; its ControlNets in the sampling loop run in the Scope too"
    return "opens"


def measured(family) -> str:
    if not family.opens:
        return "–"
    return PER_STEP.get(family.name, NOT_MEASURED)


def models_table() -> str:
    from sage_attention_scope.patches import families
    from sas_harness.families import oldest_comfyui
    rows = ["| family | `comfy.supported_models` class (and subclasses) | diffusion model | scope | ComfyUI | "
            "tested on | speed-up, full depth |", "|---|---|---|---|---|---|---|"]
    for family in sorted(families.REGISTRY.values(), key=lambda f: f.name.lower()):
        rows.append(f"| {family.name} | " + ", ".join(f"`{c}`" for c in family.config_classes) + " | "
                    + ", ".join(f"`{d}`" for d in family.diffusion_models) + f" | {scope_of(family)} | "
                    + f"{oldest_comfyui(family.name)} or newer | {tested_on(family)} | {measured(family)} |")
    return "\n".join(rows)


def calls_table() -> str:
    """The attention calls of each family's tiny model run here (sas_harness.call_sites), beside the lines the
    committed guide has from the other test hosts' runs: each host's run writes its own."""
    from sas_harness import call_sites
    from sas_harness.families import release
    from sas_harness.host import comfyui_version
    here, declared = comfyui_version(), call_sites.kind_order()
    seen_on = {}
    for row, hosts in call_sites.in_guide(GUIDE.read_text()).items():
        others = hosts - {here}
        if others and (row.family, row.call) in declared:
            seen_on[row] = others
    for row in call_sites.host_rows():
        seen_on.setdefault(row, set()).add(here)
    return call_sites.render(seen_on, release)


def families_table() -> str:
    return models_table() + "\n\n" + calls_table()


TABLES = {"inputs": inputs_table, "kernels": kernels_table, "families": families_table}


def _ranges(values: list[int]) -> str:
    if len(values) > 4 and values == list(range(values[0], values[-1] + 1)):
        return f"{values[0]}-{values[-1]}"
    if len(values) > 4 and values == list(range(values[0], values[-1] + 1, values[0])):
        return f"multiples of {values[0]} up to {values[-1]}"
    return ", ".join(map(str, values))


def rewrite(text: str) -> str:
    for name, make in TABLES.items():
        pattern = re.compile(rf"(<!-- generated:{name} -->\n).*?(<!-- /generated:{name} -->)", re.S)
        text = pattern.sub(lambda m: m.group(1) + make() + "\n" + m.group(2), text)
    return text


def stale() -> list[str]:
    """The docs files whose generated tables differ from the code's declarations."""
    return [str(path.relative_to(ROOT)) for path in DOCS if rewrite(path.read_text()) != path.read_text()]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only say which files differ (exit 1)")
    args = parser.parse_args(argv)
    sas_harness.boot()
    if args.check:
        differ = stale()
        print("\n".join(differ) or "docs match the code")
        return 1 if differ else 0
    for path in DOCS:
        path.write_text(rewrite(path.read_text()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
