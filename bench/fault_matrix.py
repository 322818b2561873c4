"""The fault matrix: every family's tiny model x every fault injected at the kernel boundary.
Prints the figures (faults injected, generations completed, wrong outputs, counters) and writes them
to fault_matrix.md under --out. Runs on a CPU in seconds (the test suite runs the same matrix).

    python bench/fault_matrix.py [--out DIR]
"""
from __future__ import annotations

import argparse
from pathlib import Path

import sas_harness

sas_harness.boot()

import torch  # noqa: E402

from sas_harness.families import CASES, lacking, model_of, sample_case  # noqa: E402
from sas_harness.fault_matrix import FAULTS, STEPS, TOLERANCE, run  # noqa: E402
from sas_harness.host import comfyui_version  # noqa: E402


def _counts(outcome) -> str:
    parts = [f"{getattr(k, 'value', k)} {v}" for k, v in outcome.counters.items() if k != "faults"]
    faults = ", ".join(f"{k.value} {v}" for k, v in outcome.counters.get("faults", {}).items())
    return ", ".join(parts) + (f"; faults: {faults}" if faults else "")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, help="folder for fault_matrix.md")
    args = parser.parse_args(argv)
    outcomes, skipped = [], []
    for case in CASES:
        if lacking(case):
            skipped.append(f"{case.family}: {lacking(case)}")
            continue
        model = model_of(case)
        reference = sample_case(model, case, steps=STEPS)
        outcomes += [run(case, fault, model, reference) for fault in FAULTS]
    injected = sum(sum(o.counters.get("faults", {}).values()) for o in outcomes)
    completed = sum(o.completed for o in outcomes)
    wrong = sum(not o.within_tolerance for o in outcomes)
    miscounted = sum(not o.counted_as_expected for o in outcomes)
    lines = [
        "# Fault matrix",
        "",
        f"ComfyUI {comfyui_version()}, torch {torch.__version__}, CPU; each family's tiny random-weight "
        f"model (tests/sas_harness/families.py), {STEPS} euler steps, the kernel replaced by a test double that fails "
        f"one way. \"Within tolerance\": the final latent matches the fault-free SDPA run "
        f"(rtol {TOLERANCE['rtol']}, atol {TOLERANCE['atol']}) and is finite.",
        "",
        f"**{len(outcomes)} generations, {injected} faults injected, {completed} completed, {wrong} wrong outputs, "
        f"{miscounted} with counters other than expected.**",
        "",
        *([f"Not run: {'; '.join(skipped)}.", ""] if skipped else []),
        "| family | fault | completed | within tolerance | counters of the generation | warnings logged |",
        "|---|---|---|---|---|---|",
    ]
    for o in outcomes:
        lines.append(f"| {o.family} | {o.fault} | {'yes' if o.completed else 'NO'} | "
                     f"{'yes' if o.within_tolerance else 'NO'} | {_counts(o)} | {len(o.warnings)} |")
    table = "\n".join(lines) + "\n"
    print(table)
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "fault_matrix.md").write_text(table)
    return outcomes


if __name__ == "__main__":
    main()
