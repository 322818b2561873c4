"""Adding a kernel and a model family as docs/design.md says. A module of its own in patches/backends/ that
declares and registers a kernel is picked up with no other file touched; ``auto`` and ``exact`` offer it where
the AUTO/EXACT tables in patches/backends/__init__.py name it. A module of its own in patches/families/ that
declares a family is picked up the same way. Done on a copy of the pack, imported in a process of its own as
the suite imports the pack (``SAS_PACK_ROOT``), with a machine whose library of the new kernel is a double."""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

from sas_harness import ROOT

NOT_THE_PACK = (".venv", ".comfyui", ".git", "__pycache__", ".artifacts", ".device", ".pytest_cache", ".ruff_cache")

# The new kernel: a library the pack does not know ("toy_kernels"), its function on (B, H, N, D), exact.
NEW_BACKEND = '''\
"""Toy attention: ``toy_attention`` of the ``toy_kernels`` library, on (B, H, N, D) q/k/v."""
import torch

from . import HALF, Backend, register


def run(fn, q, k, v, call, layout, settings):
    return fn(q, k, v, scale=call.scale)


register(Backend(name="toy", label="Toy attention (exact)", library="Toy kernels", module="toy_kernels",
                 function="toy_attention", params=("scale",), run=run, head_dims=frozenset(range(1, 257)),
                 dtypes=HALF | {torch.float32}, layouts=frozenset({"HND"}), exact=True))
'''

# The new family: SSD-1B, a subclass of SDXL's config that SDXL's family serves today (through its config's
# class hierarchy), declared as a family of its own.
NEW_FAMILY = '''\
"""SSD-1B declared apart from SDXL: the same UNet."""
from . import Family, register

SSD1B = register(Family(name="Toy SSD-1B", config_classes=("SSD1B",),
                        diffusion_models=("comfy.ldm.modules.diffusionmodules.openaimodel.UNetModel",)))
'''
UNET = "comfy.ldm.modules.diffusionmodules.openaimodel.UNetModel"

# What two copies of the pack do with the new kernel, reported as JSON: the first (``SAS_PACK_ROOT``) imported as
# the suite imports the pack, the second beside it as another package, as ComfyUI imports a second folder of
# custom nodes. The machine is an sm90 GPU (the CPU too, where the tensors are) whose only kernel library is a
# double of toy_kernels.
REPORT = textwrap.dedent('''
    import importlib.util
    import json
    import sys
    import types

    import sas_harness
    sas_harness.boot()
    import torch
    import torch.nn.functional as F

    import sage_attention_scope as first
    from sas_harness.doubles import machine_finder
    from sas_harness.models import tiny_flux
    from sas_harness.run import attention, hnd, in_scope, last_generation, plain_attention

    calls = []

    def toy_attention(q, k, v, scale=None):
        calls.append(tuple(q.shape))
        return F.scaled_dot_product_attention(q.float(), k.float(), v.float(), scale=scale).to(q.dtype)

    finder = machine_finder({"toy_kernels": types.SimpleNamespace(toy_attention=toy_attention)}, capability=(9, 0))
    cpu = torch.device("cpu")

    def offered(pack, finder):
        knowledge = pack.patches.Session(store=None, finder=finder).knowledge
        return {"pack": pack.patches.backends.__file__, "registered": "toy" in pack.patches.backends.REGISTRY,
                "choices": knowledge.names(), "toy": knowledge.kernel("toy", cpu).why,
                **{choice: [bound.name for bound in knowledge.kernel(choice, cpu).candidates]
                   for choice in ("auto", "exact")}}

    session = first.patches.Session(store=None, finder=finder)
    q, k, v = hnd(n=64, d=64)
    scoped = first.patches.apply_scope(tiny_flux(), first.patches.Settings(kernel="toy", min_seq_len=1,
                                                                           routing="always"), session)
    out = in_scope(scoped, lambda: attention(scoped, q, k, v, q.shape[1], skip_reshape=True))
    plain = plain_attention(q, k, v, q.shape[1], skip_reshape=True)
    ran = {"calls": calls, "generation": last_generation(session, "cpu"),
           "matches_comfyui": bool(torch.allclose(out, plain, rtol=1e-4, atol=1e-4))}

    root = sys.argv[1]
    spec = importlib.util.spec_from_file_location("second_copy", root + "/__init__.py",
                                                  submodule_search_locations=[root])
    second = sys.modules["second_copy"] = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(second)
    second_finder = second.patches.backends.Finder(finder.modules, finder.versions, finder.capability)
    import comfy.supported_models

    def recognised(pack):
        return pack.patches.families.recognise_classes(comfy.supported_models.SSD1B, sys.argv[2]).name

    print(json.dumps({"first": {**offered(first, finder), **ran, "SSD1B": recognised(first)},
                      "second": {**offered(second, second_finder), "SSD1B": recognised(second)}}))
''')


def copy_of_pack(to: Path) -> Path:
    """The pack's files (no environments, caches or history) copied to ``to``."""
    shutil.copytree(ROOT, to, ignore=shutil.ignore_patterns(*NOT_THE_PACK))
    return to


def report(first: Path, second: Path) -> dict:
    """What ``REPORT`` finds in the pack trees ``first`` and ``second``, run in a process of its own on this
    ComfyUI."""
    env = dict(os.environ, SAS_PACK_ROOT=str(first), PYTHONPATH=os.pathsep.join(
        filter(None, [str(ROOT / "tests"), os.environ.get("PYTHONPATH")])))
    done = subprocess.run([sys.executable, "-c", REPORT, str(second), UNET], env=env, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-4000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_a_new_kernel_module_and_a_new_family_module_are_picked_up_with_no_other_file_touched(tmp_path):
    module_only, module_and_table = copy_of_pack(tmp_path / "module_only"), copy_of_pack(tmp_path / "module_and_table")
    for pack in (module_only, module_and_table):
        (pack / "patches" / "backends" / "toy.py").write_text(NEW_BACKEND)
    (module_and_table / "patches" / "families" / "toy_ssd1b.py").write_text(NEW_FAMILY)
    tables = module_and_table / "patches" / "backends" / "__init__.py"
    with_toy, count = re.subn(r"^EXACT = \((.*)\)$", r'EXACT = (\1, "toy")', tables.read_text(), flags=re.M)
    assert count == 1
    tables.write_text(with_toy)

    found = report(module_only, module_and_table)
    alone, offered = found["first"], found["second"]
    assert alone["pack"].startswith(str(module_only)) and offered["pack"].startswith(str(module_and_table))
    # the module the only file added: a kernel choice, bound by name, and a call through the Scope runs on it
    assert alone["registered"] and "toy" in alone["choices"] and alone["toy"] == "toy chosen"
    assert "toy" not in alone["auto"] and "toy" not in alone["exact"]  # no table names it
    assert alone["calls"] == [[1, 2, 64, 64]] and alone["matches_comfyui"]
    assert alone["generation"]["kernel"] == 1 and alone["generation"]["faults"] == {}
    # and its place in the EXACT table: exact offers it, and auto after the quantised kernels (none installed)
    assert offered["registered"] and offered["exact"] == ["toy"] and offered["auto"] == ["toy"]
    # the family module the only file added for it: the copy that has it names SSD-1B's models by it
    assert alone["SSD1B"] == "SDXL (SSD1B)" and offered["SSD1B"] == "Toy SSD-1B (SSD1B)"
