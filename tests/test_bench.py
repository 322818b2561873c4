"""The benchmarks' small modes run in CI so they cannot rot, and their arms do what they are named
for: on a CPU the named reference double stands in for the kernel."""
import argparse
import collections
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tarfile

import pytest
import torch

from sage_attention_scope.nodes.status import payload
from sas_harness import ROOT
from sas_harness.host import comfyui_path
from sas_harness.arm_orders import balanced_orders
from sas_harness.doubles import RecordingKernel, make_kernel, registered

CPU = torch.device("cpu")
NEEDS_GIT = pytest.mark.skipif(shutil.which("git") is None or not (ROOT / ".git").exists(),
                               reason="needs this tree's git")


def load(name: str):
    """A bench/ script as a module (bench/ is no package)."""
    spec = importlib.util.spec_from_file_location(f"sas_bench_{name}", ROOT / "bench" / f"{name}.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    return bench


def pack():
    import sage_attention_scope
    return sage_attention_scope


def test_every_per_call_arm_does_what_it_is_named_for(session):
    bench = load("attention_calls")
    kernel = RecordingKernel()
    with registered(session, make_kernel("double", kernel, devices=("cpu",))):
        (row,) = bench.measure(pack(), bench.SMALL_SHAPES[:1], CPU, torch.float32, kernel="double", rounds=2)
    arms = row["arms"]
    assert set(arms) == {"sdpa", "pass-through override", "double", "routed", "measured", "always"}
    assert all(arm["rel_l2"] < 1e-5 and len(arm["ms_rounds"]) == 2 for arm in arms.values())
    # 256 tokens: below routed's default floor (SDPA); measured and always (from 1 token) run the kernel,
    # as does the kernel's own arm: every timed call of those three reached it.
    repeats = row["repeats"]
    direct_and_scoped = 3 * 2 * (repeats + 2)  # three arms, two rounds, warm-ups included
    assert len(kernel.calls) >= direct_and_scoped
    assert payload(session)["devices"]["cpu"]["session"]["declined"].get("too_short", 0) >= 2 * repeats
    assert bench.routed_vs_best(row) == pytest.approx(
        arms["routed"]["ms"] / min(arms["sdpa"]["ms"], arms["double"]["ms"]))


def test_pinned_sdpa_gives_what_comfyuis_attention_gives_in_its_layout():
    """The GPU's sdpa_cudnn/flash/efficient arms: torch SDPA on one backend, (B, N, H*D) out (the CPU has flash)."""
    from sas_harness.call_arms import comfy_call, inputs
    bench = load("attention_calls")
    q, k, v = inputs(1, 2, 256, 77, 64, CPU, torch.float32)
    torch.testing.assert_close(bench.pinned_sdpa("FLASH_ATTENTION", q, k, v), comfy_call(q, k, v, 2))
    assert set(bench.PINNED_SDPA.values()) == {"CUDNN_ATTENTION", "FLASH_ATTENTION", "EFFICIENT_ATTENTION"}


def test_the_target_is_judged_where_sdpa_is_gpu_bound():
    bench = load("attention_calls")
    arm = {"rel_l2": 0.0, "cosine": 1.0, "peak_mib": None, "tflops": 1.0}
    rows = [{"shape": shape, "dims": [1] * 5, "rounds": 1, "routed_kernel": "k", "arms": {
        "sdpa": {**arm, "ms": sdpa, "spread": [sdpa, sdpa]}, "k": {**arm, "ms": 1.0, "spread": [1.0, 1.0]},
        "routed": {**arm, "ms": routed, "spread": [routed, routed]}}}
        for shape, sdpa, routed in (("long", 2.0, 1.04), ("short", 0.05, 0.2))]
    info = {"device": "d", "comfyui": "c", "torch": "t", "triton": "tr", "libraries": {"sageattention": "s"}}
    table = bench.to_markdown(info, rows)
    assert "worst routed ÷ best 1.040 (long); within the 1.05 target" in table
    assert "| 4.000 (host-bound) |" in table  # reported, not judged
    rows[0]["arms"]["routed"]["ms"] = 1.1
    assert "worst routed ÷ best 1.100 (long); over" in bench.to_markdown(info, rows)


def _this_tree(tmp_path):
    """This checkout's files (tracked, and new ones git does not ignore), as ``git archive`` exports a commit."""
    files = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                           cwd=ROOT, capture_output=True, check=True).stdout.split(b"\0")
    for name in filter(None, (f.decode() for f in files)):
        if (ROOT / name).is_file():
            (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, tmp_path / name)
    return tmp_path


@NEEDS_GIT
def test_compare_runs_another_tree_beside_this_one_in_its_own_process(tmp_path):
    bench = load("attention_calls")
    out = tmp_path / "out"
    rows = bench.main(["--small", "--rounds", "2", "--compare", str(_this_tree(tmp_path / "tree")), "--out", str(out)])
    for row in rows:
        for name in bench.ScopedArms:
            assert len(row["arms"][f"{name} (previous)"]["ms_rounds"]) == 2
            assert row["arms"][f"{name} (previous)"]["rel_l2"] < 1e-5
    assert "This tree ÷ previous" in (out / "attention_calls.md").read_text()


def test_per_step_arms_run_whole_generations_through_the_scope(session):
    bench = load("model_steps")
    kernel = RecordingKernel()
    args = argparse.Namespace(kernel="double", scope=["min_seq_len=1"], arm=[], depth="reduced", small=True,
                              steps=2, warm_steps=1, rounds=2)
    with registered(session, make_kernel("double", kernel, devices=("cpu",))):
        arms = bench.chosen_arms(pack(), args)
        results = bench.run_model(pack(), "FLUX.1", None, arms, args, CPU, torch.float32, blind_kernel="double")
    assert arms[0] == ("scope", {"kernel": "double", "min_seq_len": 1})  # typed as the node takes it
    assert set(results) == {"no node", "scope", "always"}  # no blind arm without a CUDA kernel
    calls_per_step = 2  # tiny FLUX.1: one double- and one single-stream block
    for name in ("scope", "always"):
        (counts,) = results[name]["counts"].values()
        assert counts["kernel"] == args.steps * calls_per_step and results[name]["rel_l2"] < 1e-3
        # which kernel took which calls is recorded beside the counts (one route here: the double)
        (routes,) = results[name]["routes"].values()
        assert {route for shape in routes["calls"].values() for route in shape} == {"double"}
        assert sum(n for shape in routes["calls"].values() for n in shape.values()) == counts["kernel"]
        assert routes["step_trials"] == []  # the step trial runs on a GPU only
    assert results["no node"]["rel_l2"] == 0.0 and results["no node"]["counts"] == {}
    # a warm-up generation, then two rounds, for the two scoped arms
    assert len(kernel.calls) == 2 * (1 + args.rounds) * args.steps * calls_per_step
    assert "| FLUX.1 | scope |" in bench.to_markdown({"FLUX.1": results}, "header")


@NEEDS_GIT
def test_named_arms_take_turns_beside_the_other_trees_arms_that_it_knows(session, tmp_path):
    """Several --arm arms in one run, and the other tree's copies of them: an arm whose kernel that tree
    does not know (the double lives in this process only) is left out there, saying so; the rest run there."""
    from sas_harness.arms import Remote
    bench = load("model_steps")
    kernel = RecordingKernel()
    args = argparse.Namespace(depth="reduced", small=True, steps=2, warm_steps=1, rounds=2)
    remote = Remote(_this_tree(tmp_path / "tree"), "previous")
    try:
        with registered(session, make_kernel("double", kernel, devices=("cpu",))):
            arms = [bench.parse_arm(pack(), text)
                    for text in ("default:", "forced:kernel=double,min_seq_len=1,routing=always")]
            results = bench.run_model(pack(), "FLUX.1", None, arms, args, CPU, torch.float32, remote, arms)
    finally:
        remote.close()
    assert set(results) == {"no node", "default", "forced", "default (previous)"}
    # on a CPU, auto finds no kernel and the node passes the model through: no counters of its own
    assert results["forced"]["counts"]["cpu"]["kernel"] > 0 and results["default"]["counts"] == {}
    assert results["forced"]["first_timing_ms"] == 0.0  # Status's figure: routing always times nothing
    assert all(len(r["step_ms"]) == 2 and r["rel_l2"] < 1e-3 for r in results.values())
    table = bench.to_markdown({"FLUX.1": results}, "header")
    assert "| FLUX.1 | default (previous) |" in table and "| FLUX.1 | forced |" in table


def test_an_arm_takes_the_optional_sparse_inputs_typed_as_the_node_takes_them():
    """The sparse inputs are optional inputs of the node (older workflows validate): an arm sets them
    as it sets the required ones."""
    bench = load("model_steps")
    arm = bench.parse_arm(pack(), "sparse:sparse=sol-attn,sparse_gate=1.0,sparse_min_tokens=4096")
    assert arm == ("sparse", {"sparse": "sol-attn", "sparse_gate": 1.0, "sparse_min_tokens": 4096})
    assert bench.arm_problems(pack(), arm) == []


@pytest.mark.parametrize("arm, says", [
    ("x:kernel=sdpa_nowhere", "arm x: kernel 'sdpa_nowhere' is unknown"),
    ("x:speed=3", "'speed=3' is not INPUT=VALUE for one of the Scope's inputs"),
    ("x:routing=sometimes", "arm x: routing 'sometimes' is not one of measured, always"),
    ("x:sparse=dense", "arm x: sparse 'dense' is not one of off, sol-attn"),
    ("x:min_seq_len=many", "min_seq_len takes a int, got 'many'"),
    ("nameless", "write NAME:INPUT=VALUE"),
])
def test_an_arm_the_pack_would_not_take_stops_the_run_before_any_model_is_built(capsys, arm, says):
    bench = load("model_steps")
    with pytest.raises(SystemExit) as stopped:
        bench.main(["--small", "--arm", "fine:", "--arm", arm])
    assert stopped.value.code == 2 and says in capsys.readouterr().err


def test_fault_matrix_writes_its_figures(tmp_path):
    bench = load("fault_matrix")
    outcomes = bench.main(["--out", str(tmp_path)])
    assert outcomes and all(o.completed and o.within_tolerance and o.counted_as_expected for o in outcomes)
    assert "0 wrong outputs" in (tmp_path / "fault_matrix.md").read_text()


def test_small_family_accuracy_compares_every_kernel_call(tmp_path):
    bench = load("family_accuracy")
    results = bench.main(["--small", "--out", str(tmp_path)])
    assert results and all(r["calls_on_kernel"] and r["worst_cosine"] > 0.9999 for r in results)
    assert "| Z-Image |" in (tmp_path / "family_accuracy.md").read_text()


@pytest.mark.parametrize("count", [2, 3, 4, 7, 10])
def test_balanced_orders_put_every_arm_everywhere_and_after_every_other_equally(count):
    """Rounds of a benchmark: an arm's place, or the arm before it, must not favour it."""
    arms = [chr(ord("a") + i) for i in range(count)]
    orders = balanced_orders(arms)
    assert len(orders) == (count if count % 2 == 0 else 2 * count)
    assert all(sorted(order) == arms for order in orders) and orders[0][0] == "a"
    places = collections.Counter((order.index(arm), arm) for order in orders for arm in arms)
    after = collections.Counter(pair for order in orders for pair in zip(order, order[1:]))
    assert set(places.values()) == {len(orders) // count}
    assert len(after) == count * (count - 1) and len(set(after.values())) == 1
    assert balanced_orders(["a"]) == [["a"]] and balanced_orders([]) == [[]]


def test_the_blind_ceiling_arm_sends_every_long_unmasked_call_to_the_kernel(session):
    """The GPU-only 'blind' arm of model_steps.py: no checks, no routing; a call of 1024 tokens or
    more without a mask goes to the kernel, anything else to ComfyUI's attention."""
    from sas_harness.models import tiny_flux
    from sas_harness.run import attention, hnd, plain_attention
    bench = load("model_steps")
    kernel = RecordingKernel()
    with registered(session, make_kernel("double", kernel, devices=("cpu",))):
        blind = bench.blind(session.knowledge.kernel("double", CPU).bound, tiny_flux())
        long_call, short_call = hnd(n=1024), hnd(n=256)
        for q, k, v in (long_call, short_call):
            torch.testing.assert_close(attention(blind, q, k, v, q.shape[1], skip_reshape=True),
                                       plain_attention(q, k, v, q.shape[1], skip_reshape=True), rtol=1e-4, atol=1e-4)
        masked = attention(blind, *long_call, long_call[0].shape[1], skip_reshape=True, mask=torch.zeros(1024, 1024))
    assert [call["q"].shape[-2] for call in kernel.calls] == [1024] and masked.shape == (1, 1024, 128)


@pytest.mark.parametrize("model", ["Wan", "Wan 2.2 5B", "HunyuanVideo", "SD3", "Chroma"])
def test_the_video_and_dit_run_of_the_gpu_issue_runs_small(session, model):
    """Each model of the GPU run's command (bench/runs/README.md) through every per-step arm at --small:
    the scoped arms reach the kernel double, and their latents match no node's."""
    bench = load("model_steps")
    args = argparse.Namespace(kernel="double", scope=["min_seq_len=1"], arm=[], depth="reduced", small=True,
                              steps=2, warm_steps=1, rounds=1)
    with registered(session, make_kernel("double", RecordingKernel(), devices=("cpu",))):
        results = bench.run_model(pack(), model, None, bench.chosen_arms(pack(), args), args, CPU, torch.float32)
    for name in ("scope", "always"):
        (counts,) = results[name]["counts"].values()
        assert counts["kernel"] > 0 and results[name]["rel_l2"] < 1e-3, (name, counts)


def test_router_cost_runs_each_tree_in_its_own_process_and_prints_one_row_each(tmp_path):
    """bench/router_cost.py: the router's per-call cost beside an earlier tree (here a copy of this one)."""
    out = subprocess.run([sys.executable, str(ROOT / "bench" / "router_cost.py"), "--runs", "1",
                          "--compare", str(_this_tree(tmp_path))], capture_output=True, text=True, check=True).stdout
    rows = [line.split("|")[1:-1] for line in out.splitlines() if line.startswith("| this tree") or
            line.startswith("| previous")]
    assert [r[0].strip() for r in rows] == ["this tree", "previous"]
    # A bare SDPA call takes time. The router's parts are differences from it in the same round: a call
    # remembered as declined costs the router about a microsecond, which a busy CI machine's noise (two
    # suites side by side on two cores) can outweigh, as it can the per-step differences; so those are
    # only numbers (a missing measurement prints nan).
    router_parts, bare_sdpa, per_step = [row[1:4] for row in rows], [row[4] for row in rows], [row[5:] for row in rows]
    assert all(float(cell) > 0 for cell in bare_sdpa)
    assert all(abs(float(cell)) < float("inf") for row in router_parts + per_step for cell in row)
    assert len(rows[0]) == 7


def test_whole_generations_time_each_arm_after_its_first_and_report_the_measuring_cost(session, tmp_path):
    """--whole: one first generation per arm, then a timed one each; the Scope's measuring cost as its
    Status payload gives it, after the first generation and after the next (where it is 0)."""
    bench = load("model_steps")
    kernel = RecordingKernel()
    args = argparse.Namespace(depth="reduced", small=True, whole=2, rounds=1)
    with registered(session, make_kernel("double", kernel, devices=("cpu",))):
        arms = [bench.parse_arm(pack(), "scope:kernel=double,min_seq_len=1")]
        results = bench.run_whole(pack(), "FLUX.1", None, arms, args, CPU, torch.float32)
    calls_per_step = 2  # tiny FLUX.1: one double- and one single-stream block
    assert len(kernel.calls) == 2 * args.whole * calls_per_step  # the Scope's first generation and its timed one
    scoped = results["scope"]
    assert scoped["counts"]["cpu"]["kernel"] == args.whole * calls_per_step and scoped["rel_l2"] < 1e-3
    assert set(scoped["status_first"]) == {"sampling", "timing"} and scoped["status_next"]["timing"] == 0.0
    assert all(len(results[name]["ms"]) == 1 and results[name]["first_ms"] > 0 for name in ("no node", "scope"))
    table = bench.whole_markdown({"FLUX.1": results}, "header", args.whole)
    assert "| FLUX.1 | " in table and "2-step generation" in table
    # the command line, as the GPU run gives it (auto: no kernel on a CPU, so the Scope passes calls to SDPA)
    bench.main(["--small", "--whole", "2", "--arm", "default:", "--arm", "always:min_seq_len=1,routing=always",
                "--out", str(tmp_path)])
    table = (tmp_path / "whole_generations.md").read_text()
    assert "whole 2-step euler generations" in table
    assert all(f"| FLUX.1 (tiny) | {arm} |" in table for arm in ("no node", "default", "always"))


def gpu_run(*args, tmp):
    """scripts/gpu_run.py in a process of its own, its temporary folders (and unpacked parts) under ``tmp``."""
    env = dict(os.environ, COMFYUI_PATH=str(comfyui_path()), TMPDIR=str(tmp))
    return subprocess.run([sys.executable, str(ROOT / "scripts" / "gpu_run.py"), *map(str, args)], cwd=ROOT, env=env,
                          capture_output=True, text=True)


@pytest.fixture(scope="module")
def gpu_payload(tmp_path_factory):
    """A payload without packages (the CPU has them) or a ComfyUI tree ($COMFYUI_PATH's), with this tree's
    last commit as the tree to compare."""
    folder = tmp_path_factory.mktemp("payload")
    made = gpu_run("prepare", "--out", folder, "--no-host-packages", "--compare", "HEAD", tmp=folder)
    assert made.returncode == 0, made.stderr
    assert "compare: " in made.stdout and (folder / "compare" / "part.json").is_file()
    return folder


@NEEDS_GIT
def test_the_gpu_runner_runs_each_part_and_goes_on_past_a_failed_one(gpu_payload, tmp_path):
    """run on a CPU: the GPU tests (all skipped here), per step at --small beside the compared tree, and a
    model that does not exist; every part reported, the tables in the summary, the logs in one archive."""
    out = tmp_path / "out"
    done = gpu_run("run", "--from", gpu_payload, "--kernels", "none", "--suite", "--steps", "FLUX.1,NoSuchModel",
                   "--small", "--compare", "--out", out, tmp=tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr  # one part failed
    summary = (out / "gpu-run-summary.md").read_text()
    assert done.stdout.rstrip().endswith("2 of 3 parts passed.") and summary in done.stdout
    assert "| none suite | none | COMFYUI_PATH | passed |" in summary
    assert "| none steps FLUX.1 | none | COMFYUI_PATH | passed |" in summary and "× no node: FLUX.1 (tiny)" in summary
    assert "| FLUX.1 (tiny) | scope (previous) |" in summary  # the compared tree's arms, from its own process
    assert "| none steps NoSuchModel | none | COMFYUI_PATH | exit 2 |" in summary and "no such model" in summary
    with tarfile.open(out / "gpu-run-logs.tar.xz") as logs:
        names = set(logs.getnames())
    assert {"logs/machine.txt", "logs/none_suite.log", "logs/none_steps_FLUX.1/model_steps.json"} <= names
    assert sorted(path.name for path in out.iterdir()) == ["gpu-run-logs.tar.xz", "gpu-run-summary.md"]


@NEEDS_GIT
def test_the_gpu_runner_reuses_a_checked_unpack_and_stops_on_what_it_cannot_run(gpu_payload, tmp_path):
    out = tmp_path / "out"
    first = gpu_run("run", "--from", gpu_payload, "--kernels", "none", "--steps", "FLUX.1", "--small", "--compare",
                    "--deadline", "1", "--out", out, tmp=tmp_path)
    assert first.returncode == 1 and "compare: unpacked" in first.stdout
    assert "| none steps FLUX.1 | none | COMFYUI_PATH | not run |" in (out / "gpu-run-summary.md").read_text()
    again = gpu_run("run", "--from", gpu_payload, "--kernels", "none", "--compare", "--out", out, tmp=tmp_path)
    assert again.returncode == 0 and "compare: reused" in again.stdout and "0 of 0 parts passed." in again.stdout
    missing = gpu_run("run", "--from", gpu_payload, "--kernels", "sa2", "--suite", "--out", out, tmp=tmp_path)
    assert missing.returncode == 2 and "not in" in missing.stderr and "sa2" in missing.stderr
    wrong = gpu_run("run", "--from", gpu_payload, "--kernels", "sa3", "--suite", "--out", out, tmp=tmp_path)
    assert wrong.returncode == 2 and "--kernels 'sa3'" in wrong.stderr
    broken = tmp_path / "broken"
    shutil.copytree(gpu_payload, broken)
    with open(broken / "compare" / "compare.tar.xz", "ab") as archive:
        archive.write(b"!")
    tampered = gpu_run("run", "--from", broken, "--kernels", "none", "--compare", "--out", out, tmp=tmp_path)
    assert tampered.returncode == 2 and "is not the archive prepare wrote" in tampered.stderr


@NEEDS_GIT
def test_a_part_carried_as_its_part_json_alone_uses_an_earlier_unpack_on_that_machine(gpu_payload, tmp_path):
    """A payload over one trip's size travels in parts: an archive left behind is found unpacked by an
    earlier run, and where no run unpacked it the runner says to carry it."""
    light = tmp_path / "light"
    shutil.copytree(gpu_payload, light)
    (light / "compare" / "compare.tar.xz").unlink()
    out, fresh_machine, warm = tmp_path / "out", tmp_path / "fresh", tmp_path / "warm"
    fresh_machine.mkdir()
    warm.mkdir()  # (a TMPDIR that is not there is ignored: the system's would serve)
    fresh = gpu_run("run", "--from", light, "--kernels", "none", "--compare", "--out", out, tmp=fresh_machine)
    assert fresh.returncode == 2 and "only its part.json was carried" in fresh.stderr
    assert gpu_run("run", "--from", gpu_payload, "--kernels", "none", "--compare", "--out", out,
                   tmp=warm).returncode == 0
    again = gpu_run("run", "--from", light, "--kernels", "none", "--compare", "--out", out, tmp=warm)
    assert again.returncode == 0 and "compare: reused" in again.stdout


def test_a_comfyui_that_requires_comfy_kitchen_gets_the_kitchen_part_on_its_path(tmp_path):
    """ComfyUI 0.33 imports comfy_kitchen unguarded (its requirements.txt pins it): every kernel set run
    on it carries the kitchen part, as a user's install has it."""
    script = gpu_run_script()
    (tmp_path / "requirements.txt").write_text("torch\ncomfy-kitchen==0.2.31\nsimpleeval>=1.0\n")
    assert script.sites_required_by(tmp_path) == ["kitchen"]
    (tmp_path / "requirements.txt").write_text("torch\ncomfy-kitchen-extra\n")
    assert script.sites_required_by(tmp_path) == []


def test_the_gpu_runners_pyav_stand_in_lets_comfyui_load_its_video_nodes_and_refuses_to_decode(tmp_path):
    """The base part carries a stand-in for PyAV (24 MiB) unless prepare is asked for --video: ComfyUI's
    comfy_api and its video nodes import av and names from its submodules at load; using one raises."""
    (tmp_path / "av.py").write_text(gpu_run_script().PYAV_STAND_IN)
    script = ("import av\n"
              "from av.container import InputContainer\n"
              "from av.video.reformatter import ColorPrimaries, ColorRange, ColorTrc\n"
              "assert av.__version__ == '0+stand-in' and ColorPrimaries.BT709 is ColorPrimaries\n"
              "hint = av.VideoFrame | None\n"
              "try:\n"
              "    av.open('clip.mp4')\n"
              "except RuntimeError as refused:\n"
              "    print(refused)\n")
    env = dict(os.environ, PYTHONPATH=str(tmp_path))  # before site-packages, where a real PyAV may be
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert "decodes no video" in done.stdout


def gpu_run_script():
    """scripts/gpu_run.py as a module."""
    spec = importlib.util.spec_from_file_location("gpu_run_script", ROOT / "scripts" / "gpu_run.py")
    script = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = script  # its dataclasses look their module up
    try:
        spec.loader.exec_module(script)
    finally:
        del sys.modules[spec.name]
    return script


def table_rows(text: str, first_cell: str) -> list[list[str]]:
    return [[cell.strip() for cell in line.split("|")[1:-1]] for line in text.splitlines()
            if line.startswith(f"| {first_cell}")]


def test_the_kernel_probe_runs_small_and_every_arm_it_cannot_run_says_why(tmp_path):
    """bench/kernel_probe.py --small on the CPU: the SDPA arms timed and compared with fp32, every other arm
    a row that says why it did not run; the table printed last and written with the figures."""
    done = subprocess.run([sys.executable, str(ROOT / "bench" / "kernel_probe.py"), "--small", "--rep-ms", "20",
                           "--out", str(tmp_path)], capture_output=True, text=True, check=True)
    table = (tmp_path / "kernel_probe.md").read_text()
    assert done.stdout.rstrip().endswith(table.rstrip())
    probe = load("kernel_probe")
    rows = table_rows(table, "tiny")
    assert len(rows) == len(probe.SMALL_SHAPES) * len(probe.ARMS)
    timed = [row for row in rows if row[2] != "–"]
    assert sorted({row[1] for row in timed}) == ["ComfyUI 0.33", "torch default"] and len(timed) == 4
    for row in timed:
        assert float(row[2]) > 0 and row[3].endswith("×")
        for cell in (row[6], row[7]):  # rel L2 / cosine against fp32: bf16 rounding only
            rel_l2, cosine = map(float, cell.split(" / "))
            assert rel_l2 < 0.01 and cosine > 0.9999
    assert all(row[9] == "unavailable: needs a CUDA GPU (this run is on the CPU)" for row in rows if row not in timed)
    saved = json.loads((tmp_path / "kernel_probe.json").read_text())
    assert saved["info"]["device"] == "CPU" and len(saved["rows"]) == len(rows)


def test_the_kernel_probe_keeps_the_text_exact_as_the_pack_does():
    """The probe's sol_attn arms get the pack's sink blocks for the text (patches/backends/kitchen.py)."""
    from sage_attention_scope.patches.backends import kitchen
    probe = load("kernel_probe")
    for shape in probe.SHAPES + probe.SMALL_SHAPES:
        assert probe.text_blocks(shape) == kitchen.text_blocks(shape.text_at or "none", shape.text, shape.tokens)
    assert probe.text_blocks(probe.SHAPES[2]) is None  # Wan's self-attention holds no text


def test_the_kernel_probes_positional_inputs_make_attention_local():
    """Each head's attention (text aside) lies mostly within twice its correlation length of the query."""
    import math
    probe = load("kernel_probe")
    shape = probe.Shape("grid", 4, (3, 12, 16), 64, "last")
    q, k = probe.positional_qk(shape, CPU, torch.Generator().manual_seed(0))
    weights = (q[0] @ k[0].transpose(-1, -2) / math.sqrt(shape.head_dim)).softmax(-1)
    places = probe.grid_positions(shape.grid, CPU)
    video = math.prod(shape.grid)
    distance = torch.cdist(places, places)
    for head, length in enumerate(probe.LENGTHS):
        near = (weights[head, :video, :video] * (distance <= 2 * length)).sum(-1)
        assert near.mean() > 0.85, (head, float(near.mean()))
    assert probe.gate_verdict(0.05) == "pass" and probe.gate_verdict(0.051) == "dense"
    assert probe.gate_verdict(float("inf")) == "dense"


@NEEDS_GIT
def test_the_gpu_runner_probes_the_libraries_without_a_comfyui(gpu_payload, tmp_path):
    """run --probe: the probe once, before the rest, with no ComfyUI (none is asked for here)."""
    out = tmp_path / "out"
    env_without_host = {key: value for key, value in os.environ.items() if key != "COMFYUI_PATH"}
    done = subprocess.run([sys.executable, str(ROOT / "scripts" / "gpu_run.py"), "run", "--from", str(gpu_payload),
                           "--kernels", "none", "--probe", "--small", "--out", str(out)], cwd=ROOT,
                          env={**env_without_host, "TMPDIR": str(tmp_path)}, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    summary = (out / "gpu-run-summary.md").read_text()
    assert "| probe | none | - | passed |" in summary and "## probe [none, -]: kernel_probe.md" in summary
    assert len(table_rows(summary, "tiny")) > 2


def test_a_file_over_one_trip_travels_in_a_volume_that_an_earlier_unpack_keeps(tmp_path, monkeypatch):
    """prepare puts each large file in an archive of its own; unpack takes what was carried, and a later run
    finds the part whole from the archives it carries and the ones unpacked before (one machine, two trips)."""
    script = gpu_run_script()
    monkeypatch.setattr(script, "LARGE_FILE", 1000)
    site = tmp_path / "site"
    (site / "lib" / "deep").mkdir(parents=True)
    (site / "lib" / "__init__.py").write_text("small\n")
    (site / "lib" / "deep" / "big.so").write_bytes(b"\x7fELF" + os.urandom(5000))  # packed as machine code
    (site / "extra.pth").write_text(f"{site / 'lib'}\n")
    archive = script.write_part(tmp_path / "payload", "pipk", script.folder_entries(site), kind="site",
                                imports=[], versions={})
    part = script.carried_parts(tmp_path / "payload")["pipk"]
    assert [name for name, _ in script.archives_of(part)] == ["pipk.tar.xz", "pipk.2.tar.xz"]
    assert part.facts["volumes"][0]["holds"] == "lib/deep/big.so" and archive.name == "pipk.tar.xz"
    work, elsewhere = tmp_path / "work", tmp_path / "elsewhere"
    work.mkdir()
    elsewhere.mkdir()
    volume, main = part.folder / "pipk.2.tar.xz", archive.read_bytes()
    carried_volume = volume.read_bytes()
    volume.unlink()
    with pytest.raises(script.PartError, match="pipk.2.tar.xz was not carried"):
        script.unpacked(part, elsewhere)
    volume.write_bytes(carried_volume)
    archive.unlink()  # the first trip: the volume alone
    assert script.unpack_carried({"pipk": part}, work) == [
        f"pipk: pipk.tar.xz not carried, pipk.2.tar.xz unpacked at {script.unpack_folder(part, work)}"]
    volume.unlink()
    with pytest.raises(script.PartError, match="only its part.json was carried"):
        script.unpacked(part, work)
    archive.write_bytes(main)  # the second trip: the rest, and the part.json of what came before
    where, reused = script.unpacked(part, work)
    assert not reused and (where / "lib" / "deep" / "big.so").read_bytes() == (site / "lib" / "deep" / "big.so"
                                                                                ).read_bytes()
    assert (where / "lib" / "__init__.py").read_text() == "small\n"
    assert script.check_site(part, where) == [site / "lib"]  # what its .pth file adds
    assert script.unpacked(part, work) == (where, True)
