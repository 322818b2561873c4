"""The pack's GPU tests and benchmarks on a machine without network, from a payload made where there is one.

Here, with network (the Python that runs this needs pip; the payload is for the GPU machine's Python):

    python scripts/gpu_run.py prepare --out .device --comfyui .comfyui/comfyui-0.33 \\
        --sageattention-wheel PATH/sageattention-2.2.0-cp312-cp312-linux_x86_64.whl --kitchen 0.2.40 --pip-kernels \\
        --compare main

fills .device/ (git-ignored) with one folder per part and prints each part's size. Parts: base (what ComfyUI
imports that a bare GPU image lacks: torchsde, trampoline, comfy-aimdo, blake3, simpleeval, and a stand-in for
PyAV, or with --video PyAV itself), sa1 (sageattention 1.0.6), sa2 (the SageAttention 2 wheel given), kitchen
(comfy-kitchen VERSION without its ROCm backend), pipk (--pip-kernels: FlashAttention 4 with the CuTe DSL, and
the cuDNN frontend), comfyui-VERSION (each --comfyui tree) and compare (``git archive REV`` of this
repository). Each folder holds an xz archive and its part.json, and one more archive (NAME.2.tar.xz, ...) for
each file over 32 MiB (pipk's DSL libraries): take to the GPU machine only the parts a run needs. A payload
over one trip's size travels in several: first some archives, which

    python3 scripts/gpu_run.py unpack --from .device

unpacks there (and says which archives were not carried), then the rest with the part.json files of the
parts already unpacked, for ``run``; the machine must still be the same one (warm).

There, from this repository's root, with the parts in .device/:

    python3 scripts/gpu_run.py run --from .device --kernels sa2,sa1 --suite --per-call --compare \\
        --steps "FLUX.1@1024,Wan" --whole "SDXL@1024" --deadline 560 --out OUT

unpacks the parts into a temporary folder (an earlier run's unpack of the same part is reused, checked
first), then, on each ComfyUI carried (or picked with --comfyui VERSION,...; none carried:
$COMFYUI_PATH) and for each kernel set of --kernels (sa2, sa1, kitchen, pipk, none; libraries that share
a process joined with +, e.g. sa2+kitchen), runs the parts asked for: the GPU tests (--suite; a library
alone has its own kernels under test, pipk each of fa4, cudnn_fe_bf16 and cudnn_fe_fp8 in a run of its
own), the per-call comparison (--per-call [SHAPE,...]), per-family accuracy (--accuracy [FAMILY,...]), per-step
runs (--steps MODEL,...: one process per model) and whole generations (--whole MODEL,...,
--whole-steps N). --arm NAME:INPUT=VALUE,... (repeatable) and --compare-arms go to the per-step and
whole-generation runs; --compare runs the compare part's tree beside this one, per call and per step.
--probe [SHAPE,...] runs bench/kernel_probe.py once, before the rest, with every kernel library carried on
its path (SageAttention 2 rather than 1), needing no ComfyUI: the libraries called directly.
--small runs the benchmarks' tiny CPU configs (CI runs this verb so). Every part's output is kept; a
part that fails is reported and the run goes on; --step-limit caps each part and --deadline (seconds
from the start) ends every part in time to pack the results. --out gets gpu-run-logs.tar.xz (every log
and table) and gpu-run-summary.md (the benchmarks' tables, then one row per part), printed last.
"""
from __future__ import annotations

import argparse
import dataclasses
import hashlib
import importlib.metadata
import json
import lzma
import os
import re
import shutil
import signal
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PART_FILE = "part.json"
# What ComfyUI 0.3.75 and 0.33 import that a bare GPU image lacks (distribution pin -> module to import).
HOST_PACKAGES = {"torchsde==0.2.6": "torchsde", "trampoline==0.1.2": "trampoline", "comfy-aimdo==0.4.13": "comfy_aimdo",
                 "blake3==1.0.11": "blake3", "simpleeval==1.0.8": "simpleeval"}
# PyAV, which ComfyUI's comfy_api imports at load, is 24 MiB of the base part's 24.5: the tests and benchmarks
# decode no video, so the base part carries a stand-in (PYAV_STAND_IN) unless prepare is asked for --video.
PYAV = "av==19.0.2"
PYAV_STAND_IN = '''"""A stand-in for PyAV, made by scripts/gpu_run.py prepare for runs that decode no video: ComfyUI
imports av and some of its names when it loads; any of them here is a class that refuses to be used."""
import importlib.abc
import importlib.machinery
import sys
import types


class _Absent(type):
    def __getattr__(cls, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return cls

    def __call__(cls, *args, **kwargs):
        raise RuntimeError("PyAV is a stand-in in this run (gpu_run.py prepare without --video): it decodes no video")


def _module_getattr(name):
    if name.startswith("__"):
        raise AttributeError(name)
    return _Absent(name, (), {})


class _Submodules(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """av.container, av.video.reformatter, ...: each a stand-in module like this one."""
    def find_spec(self, name, path=None, target=None):
        if name.startswith(__name__ + "."):
            return importlib.machinery.ModuleSpec(name, self, is_package=True)
        return None

    def create_module(self, spec):
        module = types.ModuleType(spec.name)
        module.__getattr__ = _module_getattr
        module.__path__ = []
        return module

    def exec_module(self, module):
        pass


__getattr__ = _module_getattr
__version__ = "0+stand-in"
__path__ = []  # a package, so that its submodules are looked for (by _Submodules)
sys.meta_path.append(_Submodules())
'''
SAGEATTENTION_1 = "sageattention==1.0.6"
KITCHEN_ROCM = Path("comfy_kitchen") / "backends" / "hip"  # comfy-kitchen's ROCm backend: half its wheel
PLATFORMS = ("manylinux_2_28_x86_64", "manylinux_2_27_x86_64", "manylinux_2_17_x86_64", "manylinux2014_x86_64",
             "linux_x86_64")
# FlashAttention 4 and the cuDNN frontend (the newest of each, 2026-12-07), with what they need that the GPU
# image lacks (it has einops, cuda-bindings, protobuf, typing-extensions and nvidia-cudnn-cu13). The CuTe
# DSL's CUDA 12 build: its loader takes the newest build the driver supports (a CUDA 13 driver runs CUDA 12
# code) and both builds are as large (92 MB wheels); both link nothing from the CUDA toolkit. The cuDNN
# frontend's graph API (what the pack calls) loads the machine's libcudnn and needs no DSL.
PIP_KERNELS = ("flash-attn-4==4.0.0b40", "nvidia-cutlass-dsl==4.8.1", "nvidia-cutlass-dsl-libs-base==4.8.1",
               "nvidia-cutlass-dsl-libs-core==4.8.1", "nvidia-cutlass-dsl-libs-cu12==4.8.1",
               "quack-kernels==0.6.5", "apache-tvm-ffi==0.1.15.post2", "torch-c-dlpack-ext==0.1.5",
               "nvidia-cudnn-frontend==1.32.0")
# Checked on unpacking: modules that load with no GPU work (a library that fails on that machine is the
# probe's and the suite's to report, not a reason to stop the run).
PIP_KERNEL_IMPORTS = ["tvm_ffi", "nvidia_cutlass_dsl"]
# The GPU machine's own: no part may carry another copy in front of them.
MACHINE_DISTRIBUTIONS = frozenset({"torch", "triton", "nvidia-cudnn-cu12", "nvidia-cudnn-cu13"})
LARGE_FILE = 32 * 2 ** 20  # a file larger than this travels in an archive of its own
MACHINE_CODE_WINDOW = 256 * 2 ** 20  # xz's window for one large library (unpacking takes that much memory)
ELF = b"\x7fELF"
KERNELS = ("sa2", "sa1", "kitchen", "pipk")  # each the part of that name, put on the path
SITE_PARTS_OF_DISTRIBUTIONS = {"comfy-kitchen": "kitchen"}  # a ComfyUI requirement a site part provides
# the GPU tests' kernels for a library alone, one suite run each (several libraries: auto picks)
SUITE_KERNELS = {("sa1",): ("sage1_triton",), ("kitchen",): ("kitchen_int8",),
                 ("pipk",): ("fa4", "cudnn_fe_bf16", "cudnn_fe_fp8")}
STEPS_PER_GENERATION = 4  # per step: 2 warm-up steps and 2 timed in each generation (model_steps' --warm-steps 2)
PACKING_S, SHORTEST_PART_S = 20, 30  # kept for packing the results before --deadline; a part given less is not run
UNPACKED = ".sas-unpacked"  # in an unpacked part, per archive (UNPACKED.NAME): its digest, written last


# -- prepare ------------------------------------------------------------------------------------

def compress(archive: Path, entries: list[tuple[Path, str]], leave_out: frozenset = frozenset(),
             machine_code: bool = False) -> None:
    """``entries`` (path, name in the archive) into ``archive``, xz at its strongest, caches and the
    members named in ``leave_out`` left out; ``machine_code`` (one large x86 library): xz's x86 filter and a
    window as large as the library, which pack such a file smaller."""
    def keep(info: tarfile.TarInfo):
        parts = Path(info.name).parts
        if "__pycache__" in parts or ".git" in parts or info.name.endswith(".pyc") or info.name in leave_out:
            return None
        info.uid = info.gid = 0
        info.uname = info.gname = ""
        return info
    lzma2 = {"id": lzma.FILTER_LZMA2, "preset": 9 | lzma.PRESET_EXTREME}
    filters = [lzma2]
    if machine_code:
        size = sum(path.stat().st_size for path, _ in entries)
        filters = [{"id": lzma.FILTER_X86}, {**lzma2, "dict_size": min(max(size, 1 << 20), MACHINE_CODE_WINDOW)}]
    with lzma.open(archive, "wb", format=lzma.FORMAT_XZ, filters=filters) as packed:
        with tarfile.open(fileobj=packed, mode="w") as tar:
            for path, name in entries:
                tar.add(path, arcname=name, filter=keep)


def folder_entries(folder: Path) -> list[tuple[Path, str]]:
    """Everything in ``folder``, to unpack into the folder a part is unpacked to."""
    return [(child, child.name) for child in sorted(folder.iterdir())]


def large_files(entries: list[tuple[Path, str]]) -> list[tuple[Path, str]]:
    """The files over LARGE_FILE among ``entries`` and in their folders, with their names in the archive."""
    found = []
    for path, name in entries:
        if path.is_file() and not path.is_symlink():
            files = [(path, name)]
        elif path.is_dir() and not path.is_symlink():
            files = [(file, f"{name}/{file.relative_to(path).as_posix()}") for file in sorted(path.rglob("*"))
                     if file.is_file() and not file.is_symlink()]
        else:
            files = []
        found += [(file, member) for file, member in files if file.stat().st_size > LARGE_FILE]
    return found


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def write_part(out: Path, name: str, entries: list[tuple[Path, str]], **facts) -> Path:
    """Part ``name`` in ``out``/``name``: its archive, one more archive (a volume) for each file over
    LARGE_FILE, so that trips can be packed, and part.json (each archive's digest and ``facts``)."""
    folder = out / name
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    large = large_files(entries)
    archive = folder / f"{name}.tar.xz"
    compress(archive, entries, leave_out=frozenset(member for _, member in large))
    volumes = []
    for number, (path, member) in enumerate(large, start=2):
        volume = folder / f"{name}.{number}.tar.xz"
        with open(path, "rb") as f:
            machine_code = f.read(len(ELF)) == ELF
        compress(volume, [(path, member)], machine_code=machine_code)
        volumes.append({"archive": volume.name, "sha256": sha256(volume), "holds": member})
    return describe(archive, name, **facts, **({"volumes": volumes} if volumes else {}))


def describe(archive: Path, name: str, **facts) -> Path:
    """The part.json beside ``archive``: its name, the archive's digest and ``facts``."""
    facts = {"name": name, "archive": archive.name, "sha256": sha256(archive), **facts}
    (archive.parent / PART_FILE).write_text(json.dumps(facts, indent=1) + "\n")
    return archive


def pip_install(target: Path, specs: list[str], args) -> dict[str, str]:
    """Binary distributions of ``specs`` (pins or wheel files) installed into ``target`` for the GPU
    machine's Python and platforms (not this one's), without their dependencies; their versions."""
    chosen = PLATFORMS if args.platform is None else args.platform
    tags = ["--only-binary=:all:", "--implementation", "cp", "--python-version", args.python,
            *[flag for platform in chosen for flag in ("--platform", platform)]]
    pip, quiet = [sys.executable, "-m", "pip"], ["-q", "--disable-pip-version-check"]
    with tempfile.TemporaryDirectory() as wheels:
        subprocess.run([*pip, "download", *quiet, "--no-deps", *tags, "-d", wheels, *specs], check=True)
        # Requires-Python was checked against the GPU machine's Python as they were chosen; install
        # would check it against this one's.
        subprocess.run([*pip, "install", *quiet, "--no-index", "--no-deps", "--no-compile", "--ignore-requires-python",
                        *tags, "--target", str(target), *map(str, sorted(Path(wheels).glob("*.whl")))], check=True)
    return {dist.metadata["Name"]: dist.version for dist in importlib.metadata.distributions(path=[str(target)])}


def distribution_key(name: str) -> str:
    """A distribution's name as PyPI compares them (PEP 503)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def site_part(out: Path, name: str, specs: list[str], imports: list[str], args, drop: Path | None = None,
              modules: dict[str, str] | None = None) -> Path:
    """A part that goes on the path: ``specs`` installed into a folder (less ``drop``, with ``modules``:
    file name -> source) and packed; never with a copy of what the GPU machine has its own of (torch,
    Triton, cuDNN)."""
    with tempfile.TemporaryDirectory() as staging:
        versions = pip_install(Path(staging), specs, args)
        for file_name, source in (modules or {}).items():
            (Path(staging) / file_name).write_text(source)
        shadowing = sorted(d for d in versions if distribution_key(d) in MACHINE_DISTRIBUTIONS)
        if shadowing:
            raise ValueError(f"{name}: {', '.join(shadowing)} would shadow the GPU machine's own")
        if drop is not None:
            if not (Path(staging) / drop).is_dir():
                raise ValueError(f"{name}: {drop} is not in {', '.join(specs)}: is it still the ROCm backend?")
            shutil.rmtree(Path(staging) / drop)
        return write_part(out, name, folder_entries(Path(staging)), kind="site", imports=imports, versions=versions,
                          python=args.python)


def comfyui_version_of(tree: Path) -> str:
    text = (tree / "comfyui_version.py").read_text() if (tree / "comfyui_version.py").is_file() else ""
    found = re.search(r"__version__\s*=\s*['\"]([^'\"]+)['\"]", text)
    if not (tree / "comfy" / "model_patcher.py").is_file() or found is None:
        raise ValueError(f"{tree} is not a ComfyUI tree with a comfyui_version.py")
    return found.group(1)


def comfyui_part(out: Path, tree: Path) -> Path:
    version = comfyui_version_of(tree)
    return write_part(out, f"comfyui-{version}", [(tree, tree.name)], kind="comfyui", version=version,
                      folder=tree.name)


def compare_part(out: Path, rev: str) -> Path:
    """This repository's tree at ``rev`` (``git archive``), for --compare."""
    commit = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", rev], capture_output=True, text=True,
                            check=True).stdout.strip()
    tree = subprocess.run(["git", "-C", str(ROOT), "archive", "--format=tar", commit], capture_output=True,
                          check=True).stdout
    folder = out / "compare"
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    archive = folder / "compare.tar.xz"
    archive.write_bytes(lzma.compress(tree, preset=9 | lzma.PRESET_EXTREME))
    return describe(archive, "compare", kind="tree", rev=commit)


def prepare(args) -> None:
    args.out.mkdir(parents=True, exist_ok=True)
    made = []
    if args.host_packages:
        specs, stand_in = list(HOST_PACKAGES), {}
        if args.video:
            specs.append(PYAV)
        else:
            stand_in = {"av.py": PYAV_STAND_IN}
        made.append(site_part(args.out, "base", specs, [*HOST_PACKAGES.values(), "av"], args, modules=stand_in))
        made.append(site_part(args.out, "sa1", [SAGEATTENTION_1], ["sageattention"], args))
    if args.sageattention_wheel:
        made.append(site_part(args.out, "sa2", [str(args.sageattention_wheel.resolve())], ["sageattention"], args))
    if args.kitchen:
        made.append(site_part(args.out, "kitchen", [f"comfy-kitchen=={args.kitchen}"], ["comfy_kitchen"], args,
                              drop=KITCHEN_ROCM))
    if args.pip_kernels:
        made.append(site_part(args.out, "pipk", list(PIP_KERNELS), PIP_KERNEL_IMPORTS, args))
    made += [comfyui_part(args.out, tree.resolve()) for tree in args.comfyui]
    if args.compare:
        made.append(compare_part(args.out, args.compare))
    total = 0
    for archive in made:
        archives = sorted(archive.parent.glob("*.tar.xz"))
        size = sum(a.stat().st_size for a in archives)
        total += size
        each = "" if len(archives) == 1 else " (" + ", ".join(
            f"{a.name} {size_text(a.stat().st_size)}" for a in archives) + ")"
        print(f"{archive.parent.name}: {size_text(size)}{each} in {archive.parent}")
    print(f"in all: {size_text(total)} in {args.out}")


def size_text(size: int) -> str:
    return f"{size / 2 ** 20:.1f} MiB" if size >= 2 ** 20 else f"{size / 2 ** 10:.0f} KiB"


# -- run: the payload -----------------------------------------------------------------------------

class PartError(RuntimeError):
    pass


@dataclasses.dataclass(frozen=True)
class Part:
    folder: Path  # where it was carried
    facts: dict   # its part.json

    @property
    def name(self) -> str:
        return self.facts["name"]


def carried_parts(payload: Path) -> dict[str, Part]:
    """The parts in ``payload``, by name."""
    found = {}
    for facts_file in sorted(payload.glob(f"*/{PART_FILE}")):
        part = Part(facts_file.parent, json.loads(facts_file.read_text()))
        found[part.name] = part
    return found


def extract(tar: tarfile.TarFile, into: Path) -> None:
    if hasattr(tarfile, "data_filter"):  # Python 3.12, and 3.10/3.11 since their 2023 fixes
        tar.extractall(into, filter="data")
    else:
        tar.extractall(into)


def archives_of(part: Part) -> list[tuple[str, str]]:
    """(file name, digest) of each archive of ``part``: its own, then its volumes."""
    volumes = [(volume["archive"], volume["sha256"]) for volume in part.facts.get("volumes", [])]
    return [(part.facts["archive"], part.facts["sha256"]), *volumes]


def unpack_folder(part: Part, work: Path) -> Path:
    """Where ``part`` is unpacked in ``work``: named by its archives' digests."""
    digests = [digest for _, digest in archives_of(part)]
    digest = digests[0] if len(digests) == 1 else hashlib.sha256("".join(digests).encode()).hexdigest()
    return work / f"{part.name}-{digest[:16]}"


def clear_earlier(part: Part, target: Path, work: Path) -> None:
    """Earlier unpacks of other archives of ``part`` go (``target`` and its own unfinished unpacks stay)."""
    for earlier in work.glob(f"{part.name}-*"):
        if not earlier.name.startswith(target.name):
            shutil.rmtree(earlier, ignore_errors=True)


def unpacked_here(target: Path, name: str, digest: str) -> bool:
    marker = target / f"{UNPACKED}.{name}"
    return marker.is_file() and marker.read_text() == digest


def move_into(source: Path, target: Path) -> None:
    """Everything in ``source`` moved into ``target`` (folders joined, files replaced); ``source`` goes."""
    if not target.exists():
        source.rename(target)
        return
    for path in sorted(source.rglob("*")):
        if path.is_file() or path.is_symlink():
            destination = target / path.relative_to(source)
            destination.parent.mkdir(parents=True, exist_ok=True)
            os.replace(path, destination)
    shutil.rmtree(source)


def unpack_archive(part: Part, name: str, digest: str, target: Path) -> bool:
    """Archive ``name`` of ``part``, checked against ``digest`` where carried, unpacked into ``target``
    unless an earlier run on this machine did; whether that earlier unpack was reused."""
    archive = part.folder / name
    if not archive.is_file():
        # A payload too large for one trip travels in parts, each archive unpacked by an earlier run on
        # this machine.
        if unpacked_here(target, name, digest):
            return True
        if not any((part.folder / other).is_file() for other, _ in archives_of(part)):
            raise PartError(f"{part.name}: only its {PART_FILE} was carried and no earlier run here unpacked "
                            f"{name}: carry {part.folder.name}/ whole")
        raise PartError(f"{part.name}: {name} was not carried and no earlier run here unpacked it: carry "
                        f"{part.folder.name}/{name} too")
    if sha256(archive) != digest:
        raise PartError(f"{archive} is not the archive prepare wrote (its digest differs): carry it again")
    if unpacked_here(target, name, digest):
        return True
    partial = target.parent / f"{target.name}.partial-{name}"
    shutil.rmtree(partial, ignore_errors=True)
    with tarfile.open(archive) as tar:
        extract(tar, partial)
    move_into(partial, target)
    (target / f"{UNPACKED}.{name}").write_text(digest)
    return False


def unpacked(part: Part, work: Path) -> tuple[Path, bool]:
    """(where ``part`` is unpacked, whether an earlier unpack was reused), each archive checked against its
    digest; earlier unpacks of other archives of that part go."""
    target = unpack_folder(part, work)
    clear_earlier(part, target, work)
    reused = [unpack_archive(part, name, digest, target) for name, digest in archives_of(part)]
    return target, all(reused)


def unpack_carried(parts: dict[str, Part], work: Path) -> list[str]:
    """Every archive carried, unpacked (no part checked: some may not be whole yet); one line per part."""
    lines = []
    for part in parts.values():
        target = unpack_folder(part, work)
        clear_earlier(part, target, work)
        said = []
        for name, digest in archives_of(part):
            if not (part.folder / name).is_file() and not unpacked_here(target, name, digest):
                said.append(f"{name} not carried")
            else:
                said.append(f"{name} {'reused' if unpack_archive(part, name, digest, target) else 'unpacked'}")
        lines.append(f"{part.name}: {', '.join(said)} at {target}")
    return lines


def python_version() -> str:
    return f"{sys.version_info.major}.{sys.version_info.minor}"


def check_site(part: Part, where: Path) -> list[Path]:
    """Every module of a site part imports from ``where`` (where it was made for this Python), with the
    versions prepare installed; the folders its .pth files add to the path (PYTHONPATH runs no .pth file:
    the run puts them there itself)."""
    script = ("import importlib, importlib.metadata as m, json, site, sys\n"
              "facts, where, same_python = json.loads(sys.argv[1]), sys.argv[2], sys.argv[3] == 'yes'\n"
              "before = set(sys.path)\n"
              "site.addsitedir(where)\n"
              "added = [p for p in sys.path if p not in before and p != where]\n"
              "for module in facts['imports'] if same_python else []: importlib.import_module(module)\n"
              "for name, version in facts['versions'].items():\n"
              "    assert m.version(name) == version, f'{name} {m.version(name)}, not {version}'\n"
              "print(json.dumps(added))")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(where), os.environ.get("PYTHONPATH")])))
    same_python = part.facts.get("python", python_version()) == python_version()
    done = subprocess.run([sys.executable, "-c", script, json.dumps(part.facts), str(where),
                           "yes" if same_python else "no"], env=env, capture_output=True, text=True)
    if done.returncode != 0:
        raise PartError(f"{part.name} does not import from {where}: {last_line(done.stderr)}")
    return [Path(path) for path in json.loads(last_line(done.stdout))]


@dataclasses.dataclass(frozen=True)
class Ready:
    where: Path        # a site's folder, a ComfyUI tree, a pack tree
    path: list[Path]   # what goes on PYTHONPATH for it (a site part: its folder and what its .pth files add)
    note: str          # what was done


def ready(part: Part, work: Path) -> Ready:
    """``part`` unpacked and checked."""
    where, reused = unpacked(part, work)
    kind, path, unchecked = part.facts["kind"], [], ""
    if kind == "site":
        path = [where, *check_site(part, where)]
        if part.facts.get("python", python_version()) != python_version():
            unchecked = f" (made for Python {part.facts['python']}, this is {python_version()}: imports not tried)"
    elif kind == "comfyui":
        where = where / part.facts["folder"]
        if comfyui_version_of(where) != part.facts["version"]:
            raise PartError(f"{where} is not ComfyUI {part.facts['version']}")
    elif not (where / "__init__.py").is_file():
        raise PartError(f"{where} holds no tree of the pack")
    return Ready(where, path, f"{part.name}: {'reused' if reused else 'unpacked'} at {where}{unchecked}")


# -- run: the parts ---------------------------------------------------------------------------------

@dataclasses.dataclass
class Outcome:
    name: str
    kernels: str
    host: str
    status: str
    seconds: float
    said: str     # its last line of output that is not a table's
    tables: list  # the markdown files it wrote

    @property
    def failed(self) -> bool:
        return self.status != "passed"


class Runner:
    """Runs each part in a process of its own, its output in logs/NAME.log, within --step-limit and
    --deadline, and keeps what came of it."""

    def __init__(self, logs: Path, started: float, deadline: float | None, step_limit: float | None):
        self.logs, self.started, self.deadline, self.step_limit = logs, started, deadline, step_limit
        self.outcomes: list[Outcome] = []

    def seconds_left(self) -> float | None:
        """The most the next part may take: --step-limit, and what --deadline leaves after packing."""
        limits = [] if self.step_limit is None else [self.step_limit]
        if self.deadline is not None:
            limits.append(self.started + self.deadline - PACKING_S - time.monotonic())
        return min(limits) if limits else None

    def run(self, name: str, kernels: str, host: str, command: list[str], env: dict, writes_tables: bool = True):
        """``command`` as part ``name`` (given ``--out FOLDER`` where it writes tables), or why it was not run."""
        limit = self.seconds_left()
        if limit is not None and limit < SHORTEST_PART_S:
            self.outcomes.append(Outcome(name, kernels, host, "not run", 0.0, f"{max(limit, 0):.0f} s were left", []))
            return
        print(f"== {name} [{kernels}, {host}]" + ("" if limit is None else f" (at most {limit:.0f} s)"), flush=True)
        out = self.logs / slug(name)
        if writes_tables:
            command = [*command, "--out", str(out)]
        log = self.logs / f"{slug(name)}.log"
        began = time.monotonic()
        with open(log, "w") as sink:
            process = subprocess.Popen(command, cwd=ROOT, env=env, stdout=sink, stderr=subprocess.STDOUT,
                                       start_new_session=True)
            status = finished(process, limit)
        tables = sorted(out.glob("*.md")) if out.is_dir() else []
        self.outcomes.append(Outcome(name, kernels, host, status, time.monotonic() - began,
                                     closing(log.read_text(errors="replace")), tables))


def slug(name: str) -> str:
    """``name`` as a file name."""
    return re.sub(r"[^A-Za-z0-9._+-]+", "_", name)


def closing(output: str) -> str:
    """A part's last line of output that is not a table's (a benchmark's own summary line, pytest's counts,
    or the error it ended on)."""
    lines = [line for line in output.strip().splitlines() if line.strip() and not line.startswith("|")]
    return lines[-1] if lines else "(no output)"


def finished(process: subprocess.Popen, limit: float | None) -> str:
    """``process`` waited for, and stopped with its whole process group past ``limit`` s; how it ended."""
    try:
        code = process.wait(timeout=limit)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
        return f"cut off after {limit:.0f} s"
    return "passed" if code == 0 else f"exit {code}"


def comma_list(text: str | None) -> list[str]:
    if text is None:
        return []
    return [item.strip() for item in text.split(",") if item.strip()]


def joined(names, separator: str = ", ", empty: str = "none") -> str:
    """``names`` joined, or ``empty`` where there are none."""
    names = list(names)
    return separator.join(names) if names else empty


def last_line(text: str) -> str:
    lines = text.strip().splitlines()
    return lines[-1] if lines else "(no output)"


def kernel_sets(text: str) -> list[tuple[str, ...]]:
    """"sa2,sa1+kitchen,none" -> [("sa2",), ("sa1", "kitchen"), ()]."""
    sets = []
    for item in comma_list(text):
        names = tuple(name for name in item.split("+") if name != "none")
        unknown = [name for name in names if name not in KERNELS]
        if unknown or (not names and item != "none"):
            raise ValueError(f"--kernels {item!r}: each is one of {', '.join(KERNELS)}, none, or several joined by +")
        sets.append(names)
    return sets


def gpu_test_files() -> list[str]:
    """The test files with GPU tests (marked gpu): collecting the others needs what a GPU image may lack."""
    return [str(path.relative_to(ROOT)) for path in sorted((ROOT / "tests").glob("test_*.py"))
            if "mark.gpu" in path.read_text()]


def bench_commands(args, compare: Path | None) -> list[tuple[str, list[str]]]:
    """(name, command) of each benchmark part asked for, less the folder for its tables."""
    python, small = sys.executable, ["--small"] if args.small else []
    depth = [] if args.small else ["--depth", "full"]
    beside = [] if compare is None else ["--compare", str(compare)]
    arms = [flag for arm in args.arm for flag in ("--arm", arm)]
    if args.compare_arms:
        arms += ["--compare-arms", args.compare_arms]
    commands = []
    if args.per_call is not None:
        only = ["--only", *comma_list(args.per_call)] if comma_list(args.per_call) else []
        commands.append(("per-call", [python, "bench/attention_calls.py", *small, *only, *beside]))
    if args.accuracy is not None:
        families = ["--family", *comma_list(args.accuracy)] if comma_list(args.accuracy) else []
        commands.append(("accuracy", [python, "bench/family_accuracy.py", *small, *families]))
    for model in comma_list(args.steps):
        commands.append((f"steps {model}", [python, "bench/model_steps.py", *small, *depth, "--family", model,
                                            "--rounds", str(args.rounds), "--steps", str(STEPS_PER_GENERATION),
                                            *arms, *beside]))
    for model in comma_list(args.whole):
        commands.append((f"whole {model}", [python, "bench/model_steps.py", *small, *depth, "--family", model,
                                            "--whole", str(args.whole_steps), *arms]))
    return commands


def probe_command(args) -> list[str]:
    """bench/kernel_probe.py on the shapes of --probe (none named: all), less the folder for its tables."""
    shapes = comma_list(args.probe)
    return [sys.executable, "bench/kernel_probe.py", *(["--small"] if args.small else []),
            *(["--only", *shapes] if shapes else [])]


def probe_kernels(parts: dict[str, Part]) -> tuple[str, ...]:
    """The kernel libraries on the probe's path: every one carried, SageAttention 2 rather than 1 (both are
    the module sageattention)."""
    return tuple([name for name in ("sa2", "sa1") if name in parts][:1] +
                 [name for name in ("kitchen", "pipk") if name in parts])


def needs_host(args) -> bool:
    """Whether a part asked for runs on a ComfyUI (the probe calls the libraries alone)."""
    return bool(args.suite or args.per_call is not None or args.accuracy is not None or args.steps or args.whole)


def environment(paths: list[Path], comfyui: Path | None, extra: dict) -> dict:
    """A part's environment: ``paths`` first on the path, then the harness (tests/, as the suite has it)."""
    path = [*map(str, paths), str(ROOT / "tests"), os.environ.get("PYTHONPATH", "")]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, path)), PYTHONUNBUFFERED="1", **extra)
    if comfyui is not None:
        env["COMFYUI_PATH"] = str(comfyui)
    return env


def machine() -> str:
    """The GPUs, driver, Python, torch and Triton here, in one line."""
    found = []
    if shutil.which("nvidia-smi"):
        smi = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"],
                             capture_output=True, text=True)
        found.append(joined(smi.stdout.strip().splitlines(), "; ", empty="nvidia-smi: no GPU"))
    script = ("import sys, torch\ntry:\n    import triton; t = triton.__version__\nexcept ImportError:\n"
              "    t = 'not installed'\n"
              "print(f'Python {sys.version.split()[0]}, torch {torch.__version__} (CUDA {torch.version.cuda}, '\n"
              "      f'cuDNN {torch.backends.cudnn.version()}), Triton {t}')")
    versions = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    found.append(last_line(versions.stdout if versions.returncode == 0 else versions.stderr))
    return "; ".join(found)


def summary(command: str, about: str, notes: list[str], outcomes: list[Outcome]) -> str:
    lines = ["# GPU run", "", f"`{command}`", "", about, "", *[f"- {note}" for note in notes], ""]
    for outcome in outcomes:
        for table in outcome.tables:
            lines += [f"## {outcome.name} [{outcome.kernels}, {outcome.host}]: {table.name}", "",
                      table.read_text().strip(), ""]
    lines += ["## Parts", "", "| part | kernels | ComfyUI | result | s | last line |", "|---|---|---|---|---|---|"]
    for o in outcomes:
        said = o.said.replace("|", "\\|")[:200]
        lines.append(f"| {o.name} | {o.kernels} | {o.host} | {o.status} | {o.seconds:.0f} | {said} |")
    failed = sum(o.failed for o in outcomes)
    lines += ["", f"{len(outcomes) - failed} of {len(outcomes)} parts passed."]
    return "\n".join(lines) + "\n"


def hosts_of(args, parts: dict[str, Part]) -> list[Part | None]:
    """The ComfyUI parts to run on (None: $COMFYUI_PATH, where none is carried)."""
    carried = {part.facts["version"]: part for part in parts.values() if part.facts["kind"] == "comfyui"}
    if args.comfyui:
        missing = [v for v in comma_list(args.comfyui) if v not in carried]
        if missing:
            raise ValueError(f"no ComfyUI {', '.join(missing)} in {args.source}: carried {joined(carried)}")
        return [carried[v] for v in comma_list(args.comfyui)]
    if carried:
        return list(carried.values())
    if not os.environ.get("COMFYUI_PATH"):
        raise ValueError(f"no comfyui-* part in {args.source} and no COMFYUI_PATH: carry one (prepare --comfyui TREE)")
    return [None]


def sites_required_by(tree: Path) -> list[str]:
    """The site parts a ComfyUI tree cannot import without: those its requirements.txt names (ComfyUI
    0.33 imports comfy_kitchen unguarded, so a 0.33 host always has the kitchen part on its path)."""
    requirements = tree / "requirements.txt"
    text = requirements.read_text() if requirements.is_file() else ""
    named = {re.split(r"[<>=!~ ;\[]", line.strip(), maxsplit=1)[0].lower() for line in text.splitlines()}
    return [part for distribution, part in SITE_PARTS_OF_DISTRIBUTIONS.items() if distribution in named]


def ready_parts(parts: dict[str, Part], names: set[str], work: Path) -> tuple[dict[str, Ready], list[str]]:
    """(each part of ``names`` ready to use, what was done with each), in ``work``."""
    places, notes = {}, []
    for name in sorted(names):
        places[name] = ready(parts[name], work)
        notes.append(places[name].note)
        print(places[name].note, flush=True)
    return places, notes


def site_path(names, places: dict[str, Ready]) -> list[Path]:
    """The path entries of the site parts ``names``, then of base where carried."""
    chosen = [*names, *(["base"] if "base" in places and "base" not in names else [])]
    return [entry for name in chosen for entry in places[name].path]


def suite_command(kernel: str | None, record: Path) -> tuple[list[str], dict]:
    """The GPU tests with ``kernel`` under test (None: ``auto`` picks), their figures appended to ``record``."""
    extra = {"SAS_GPU_RECORD": str(record)}
    if kernel is not None:
        extra["SAS_GPU_KERNEL"] = kernel
    return [sys.executable, "-m", "pytest", "-m", "gpu", "-q", "-rs", *gpu_test_files()], extra


def run_probe(runner: Runner, args, names: tuple[str, ...], places: dict[str, Ready]) -> None:
    """The probe, once, with the kernel libraries ``names`` on its path and no ComfyUI."""
    runner.run("probe", joined(names, "+"), "-", probe_command(args),
               environment(site_path(names, places), None, {}))


def run_parts(runner: Runner, args, hosts: list, sets: list, places: dict[str, Ready]) -> None:
    """Each part asked for, on each ComfyUI of ``hosts`` with each kernel set of ``sets`` on the path
    (and the site parts a carried ComfyUI requires, as a user's install has them)."""
    commands = bench_commands(args, places["compare"].where if "compare" in places else None)
    for host in hosts:
        comfyui = Path(os.environ["COMFYUI_PATH"]) if host is None else places[host.name].where
        label = "COMFYUI_PATH" if host is None else host.facts["version"]
        required = []  # $COMFYUI_PATH's requirements are its environment's, installed there
        if host is not None:
            required = sites_required_by(comfyui)
        for names in sets:
            kernels = joined(names, "+")
            paths = site_path(list(names) + [name for name in required if name not in names], places)
            prefix = f"{label} {kernels} " if len(hosts) > 1 else f"{kernels} "
            if args.suite:
                under_test = SUITE_KERNELS.get(names, (None,))
                for kernel in under_test:
                    name = f"{prefix}suite" + (f" {kernel}" if len(under_test) > 1 else "")
                    command, extra = suite_command(kernel, runner.logs / slug(f"{name} gpu-record.jsonl"))
                    runner.run(name, kernels, label, command, environment(paths, comfyui, extra),
                               writes_tables=False)
            for name, command in commands:
                runner.run(prefix + name, kernels, label, command, environment(paths, comfyui, {}))


def work_folder() -> Path:
    """Where parts are unpacked on this machine (kept for the next run while the machine is)."""
    work = Path(tempfile.gettempdir()) / "sas-gpu-run"
    work.mkdir(exist_ok=True)
    return work


def unpack(args) -> int:
    """Every archive carried in --from unpacked, to be used by a later run on this machine."""
    lines = unpack_carried(carried_parts(args.source), work_folder())
    print("\n".join(lines) if lines else f"no part in {args.source}", flush=True)
    return 0


def run(args) -> int:
    started = time.monotonic()
    parts = carried_parts(args.source)
    sets = kernel_sets(default_kernels(parts) if args.kernels is None else args.kernels)
    hosts = hosts_of(args, parts) if needs_host(args) else []
    probed = probe_kernels(parts) if args.probe is not None else ()
    needed = {name for names in sets for name in names} | set(probed)
    if hosts and "base" in parts:
        needed.add("base")
    if args.compare:
        needed.add("compare")
    missing = sorted(needed - set(parts))
    if missing:
        raise ValueError(f"not in {args.source}: {', '.join(missing)} (carried: {joined(parts, empty='nothing')})")
    work = work_folder()
    places, notes = ready_parts(parts, {host.name for host in hosts if host is not None}, work)
    for host in hosts:
        if host is not None:
            for name in sites_required_by(places[host.name].where):
                if name not in parts:
                    raise ValueError(f"ComfyUI {host.facts['version']} requires the {name} part (its "
                                     f"requirements.txt names it): carry it from {args.source}")
                needed.add(name)
    more_places, more_notes = ready_parts(parts, needed, work)
    places.update(more_places)
    notes += more_notes
    if args.compare:
        notes.append(f"--compare: this tree beside {parts['compare'].facts['rev']}")
    logs = Path(tempfile.mkdtemp(prefix="sas-gpu-run-logs-")) / "logs"
    logs.mkdir()
    about = machine()
    (logs / "machine.txt").write_text(about + "\n")
    runner = Runner(logs, started, args.deadline, args.step_limit)
    if args.probe is not None:
        run_probe(runner, args, probed, places)
    run_parts(runner, args, hosts, sets, places)
    text = summary(" ".join(["gpu_run.py", *sys.argv[1:]]), about, notes, runner.outcomes)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "gpu-run-summary.md").write_text(text)
    compress(args.out / "gpu-run-logs.tar.xz", [(logs, "logs")])
    shutil.rmtree(logs.parent, ignore_errors=True)
    print(text, flush=True)
    return 1 if any(o.failed for o in runner.outcomes) else 0


def default_kernels(parts: dict[str, Part]) -> str:
    """SageAttention 2 where carried, else 1, with comfy-kitchen beside it where carried; else none."""
    chosen = [name for name in ("sa2", "sa1") if name in parts][:1] + [name for name in ("kitchen",) if name in parts]
    return joined(chosen, "+")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    verbs = parser.add_subparsers(dest="verb", required=True)
    made = verbs.add_parser("prepare", help="fill a folder with what a GPU machine without network needs")
    made.add_argument("--out", type=Path, required=True)
    made.add_argument("--comfyui", type=Path, action="append", default=[], help="a ComfyUI tree (repeatable)")
    made.add_argument("--sageattention-wheel", type=Path, help="a SageAttention 2 wheel built for that machine")
    made.add_argument("--kitchen", metavar="VERSION", help="comfy-kitchen of this version")
    made.add_argument("--pip-kernels", action="store_true",
                      help="the pipk part: FlashAttention 4 (CuTe DSL) and the cuDNN frontend, pinned")
    made.add_argument("--compare", metavar="REV", help="this repository at REV, to run beside the present tree")
    made.add_argument("--python", default="3.12", help="the GPU machine's Python (default 3.12)")
    made.add_argument("--platform", action="append", help=f"wheel platforms (default {', '.join(PLATFORMS)})")
    made.add_argument("--video", action="store_true",
                      help=f"the real PyAV ({PYAV}, 24 MiB) in the base part, not its stand-in (no run decodes video)")
    made.add_argument("--no-host-packages", dest="host_packages", action="store_false",
                      help="no base and sa1 parts (a machine that has them, or a test)")
    running = verbs.add_parser("run", help="run the GPU tests and benchmarks from a prepared folder")
    running.add_argument("--from", dest="source", type=Path, required=True, help="the folder prepare filled")
    running.add_argument("--kernels", help="kernel sets, e.g. sa2,sa1,sa2+kitchen,pipk,none (default: sa2 or "
                                           "sa1, +kitchen, as carried)")
    running.add_argument("--comfyui", metavar="VERSION,...", help="which carried ComfyUI trees (default: each)")
    running.add_argument("--suite", action="store_true", help="the GPU tests")
    running.add_argument("--probe", nargs="?", const="", metavar="SHAPE,...",
                         help="bench/kernel_probe.py, once, every kernel library carried on its path, no ComfyUI")
    running.add_argument("--per-call", nargs="?", const="", metavar="SHAPE,...", help="bench/attention_calls.py")
    running.add_argument("--accuracy", nargs="?", const="", metavar="FAMILY,...", help="bench/family_accuracy.py")
    running.add_argument("--steps", metavar="MODEL,...", help="per step, NAME or NAME@SIZE, one process each")
    running.add_argument("--rounds", type=int, default=2, help="per-step rounds (default 2)")
    running.add_argument("--whole", metavar="MODEL,...", help="whole generations, one process each")
    running.add_argument("--whole-steps", type=int, default=20)
    running.add_argument("--arm", action="append", default=[], metavar="NAME:INPUT=VALUE,...",
                         help="a Scope arm of the per-step and whole runs (repeatable)")
    running.add_argument("--compare-arms", metavar="NAME,...", help="the arms the compared tree runs")
    running.add_argument("--compare", action="store_true", help="the compare part's tree beside this one")
    running.add_argument("--small", action="store_true", help="the benchmarks' tiny configs (CPU, CI)")
    running.add_argument("--deadline", type=float, metavar="SECONDS", help="every part ends this long after the start")
    running.add_argument("--step-limit", type=float, metavar="SECONDS", help="the most one part may take")
    running.add_argument("--out", type=Path, default=ROOT / ".artifacts" / "gpu-run")
    unpacking = verbs.add_parser("unpack", help="unpack every archive carried, for a later run on this machine")
    unpacking.add_argument("--from", dest="source", type=Path, required=True, help="the folder prepare filled")
    args = parser.parse_args(argv)
    try:
        if args.verb == "prepare":
            prepare(args)
            return 0
        if args.verb == "unpack":
            return unpack(args)
        return run(args)
    except (ValueError, PartError) as exc:
        parser.exit(2, f"gpu_run.py {args.verb}: {exc}\n")


if __name__ == "__main__":
    sys.exit(main())
