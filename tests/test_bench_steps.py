"""bench/model_steps.py measures what users get: per step, only steps after every step trial has ended (a
trial's evaluations left out where one still runs), and whole generations in rounds with their spread. On a
CPU, ``--doubles`` gives the step trial a clock and a kernel double, so it runs there as on a GPU."""
import argparse
import importlib.util
import json
import os
import re
import subprocess
import sys

import pytest
import torch

from sas_harness import ROOT
from sas_harness.doubles import FakeStepClock, RecordingKernel, make_kernel, registered
from sas_harness.host import comfyui_path

CPU = torch.device("cpu")
SCOPE_ARM = "scope:kernel=double,min_seq_len=1"
SPREAD = r"\d+\.\d+ \(\d+\.\d+–\d+\.\d+\)"  # a median with its rounds' min–max
TRIAL_EVALUATIONS = 7  # the evaluation that measured routing, then 3 pairs (the clock's 1.0 / 1.1 ms: no pair decides)


def pack():
    import sage_attention_scope
    return sage_attention_scope


def load_bench():
    """bench/model_steps.py as a module (bench/ is no package)."""
    spec = importlib.util.spec_from_file_location("sas_bench_model_steps", ROOT / "bench" / "model_steps.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    return bench


@pytest.fixture(scope="module")
def started(tmp_path_factory):
    """bench/model_steps.py --small --doubles per step and --whole, each in a process of its own, both started
    at once by the first test that asks (most of each is starting ComfyUI), so that a test in this process
    runs meanwhile. Name -> (its output folder, its process)."""
    env = dict(os.environ, COMFYUI_PATH=str(comfyui_path()))
    commands = {"steps": ["--steps", "3", "--warm-steps", "1", "--rounds", "2"], "whole": ["--whole", "7"]}
    started = {}
    for name, more in commands.items():
        out = tmp_path_factory.mktemp(name)
        command = [sys.executable, str(ROOT / "bench" / "model_steps.py"), "--small", "--doubles", "--arm", SCOPE_ARM,
                   *more, "--out", str(out)]
        started[name] = out, subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.PIPE,
                                              stderr=subprocess.PIPE, text=True)
    yield started
    for _, process in started.values():
        if process.poll() is None:  # a test before the runs' own failed: stop them
            process.kill()
            process.communicate()


@pytest.fixture(scope="module")
def runs(started):
    """The two runs, finished: name -> (its output folder, its stdout)."""
    finished = {}
    for name, (out, process) in started.items():
        stdout, stderr = process.communicate(timeout=600)
        assert process.returncode == 0, stderr[-4000:]
        finished[name] = out, stdout
    return finished


class StaleArm:
    """A Scope arm of one tree whose generations leave the knowledge at the versions given, in turn."""

    def __init__(self, versions: list[int], tree: str = "this"):
        self.versions, self.tree, self.steps = list(versions), tree, []

    def __call__(self, steps, reference):
        self.steps.append(steps)
        return {"step_ms": [1.0] * steps, "knowledge_version": self.versions.pop(0), "trial_evaluations": [{}]}


def test_an_arm_whose_verdicts_a_later_arm_made_stale_runs_again_before_any_is_timed():
    """Settling: the knowledge moved on after arm a's first generation (arm b's checks), so a runs another
    first-length generation; the trees' knowledge apart, and no arm more than twice."""
    bench = load_bench()
    a, b = StaleArm([5]), StaleArm([])
    versions = {"a": 3, "b": 5, "no node": None}
    settled = bench.settle({"a": a, "b": b, "no node": StaleArm([])}, versions, 20)
    assert a.steps == [20] and b.steps == [] and versions == {"a": 5, "b": 5, "no node": None}
    assert settled == {"a": [{"ms": 20.0, "timing_ms": None, "trial_evaluations": 1, "step_trial_calls": 0}],
                       "b": [], "no node": []}
    restless, remote = StaleArm([1, 2, 3]), StaleArm([], tree="previous")
    bench.settle({"restless": restless, "b": b, "remote": remote}, {"restless": 0, "b": 9, "remote": 2}, 20)
    assert restless.steps == [20, 20] and remote.steps == []  # at most SETTLING_PASSES; another tree's version apart


def test_a_step_that_a_trial_timed_is_left_out_of_the_figure(session, started):
    """A first generation too short for the trial: its evaluations fall in the first timed generation, whose
    figure is the mean of the steps after them alone; the verdict holds for the next round, which times every
    step. (``started``: the runs of the tests below go on meanwhile.)"""
    bench = load_bench()
    session.knowledge.step_clock = FakeStepClock(scope_ms=1.0, comfy_ms=1.1)
    args = argparse.Namespace(depth="reduced", small=True, steps=7, warm_steps=1, rounds=2)
    with registered(session, make_kernel("double", RecordingKernel(), devices=("cpu",))):
        arms = [bench.parse_arm(pack(), SCOPE_ARM)]
        results = bench.run_model(pack(), "FLUX.1", None, arms, args, CPU, torch.float32, first_steps=1)
    scope = results["scope"]
    assert scope["first_steps"] == 1 and scope["first_trial_evaluations"] == 1  # the evaluation that measured routing
    first, second = scope["rounds"]
    assert first["trial_steps"] == list(range(TRIAL_EVALUATIONS - 1)) and first["step_trial_calls"] == 6
    assert first["timed_steps"] == [6] and first["left_out_steps"] == [1, 2, 3, 4, 5]
    assert first["ms"] == first["step_ms"][6]
    assert second["trial_steps"] == [] and second["timed_steps"] == list(range(1, 7))
    table = bench.to_markdown({"FLUX.1": results}, "header")
    assert "| 7 (5) |" in table  # steps timed, and those after the warm-up left out for a trial, both rounds


def test_per_step_times_only_steps_after_every_trial_of_the_generation_has_ended(runs):
    """The Scope arm's first generation is long enough for its step trial (20 steps), so no evaluation of a
    trial falls in a timed generation: every step after the warm-up is timed, and the trials' cost is said
    apart (the first generation's trial evaluations, its calls counted step_trial, its measuring ms)."""
    out, stdout = runs["steps"]
    (results,) = json.loads((out / "model_steps.json").read_text()).values()
    assert set(results) == {"no node", "scope"}
    scope, no_node = results["scope"], results["no node"]
    assert scope["first_steps"] == 20 and no_node["first_steps"] == 3  # only a Scope arm's waits for its trials
    assert scope["first_trial_evaluations"] == TRIAL_EVALUATIONS
    assert scope["first_step_trial_calls"] == 3 * 2  # 3 evaluations without the Scope, 2 attention calls each
    assert scope["first_timing_ms"] > 0 and scope["settling"] == []
    (trial,) = scope["routes"]["cpu"]["step_trials"]  # the verdict the json keeps beside the routes
    assert trial["keep_scope"] and trial["comfy_ms"] == pytest.approx(1.1)
    for result in results.values():
        assert len(result["rounds"]) == 2
        for one in result["rounds"]:
            assert one["timed_steps"] == [1, 2] and one["trial_steps"] == one["left_out_steps"] == []
            assert one["step_trial_calls"] == 0
            assert one["ms"] == pytest.approx(sum(one["step_ms"][1:]) / 2)
        low, high = result["spread"]
        assert low <= result["ms_per_step"] <= high
    table = (out / "model_steps.md").read_text()
    (row,) = [line for line in table.splitlines() if line.startswith("| FLUX.1 (tiny) | scope |")]
    cells = [cell.strip() for cell in row.split("|")[1:-1]]
    assert re.fullmatch(SPREAD, cells[2]) and re.fullmatch(SPREAD, cells[3])  # ms/step and × no node
    assert cells[4] == "2" and cells[5] == "4 (0)"  # rounds; steps timed (left out for a trial)
    assert cells[9] == f"{TRIAL_EVALUATIONS} evaluations, 6 calls"
    assert [line.split(":")[0] for line in stdout.splitlines() if line.startswith("round ")] == ["round 1", "round 2"]
    assert re.search(r"scope \d+\.\d{3} \(\d+\.\d{3}–\d+\.\d{3}, 2 rounds\)", stdout)


def test_whole_generations_take_three_rounds_and_show_their_spread(runs):
    """--whole by default: three rounds of every arm in balanced orders, the median and min–max of each arm and
    of its ratio to no node; the first generation's trials said apart, none left for the timed ones."""
    out, stdout = runs["whole"]
    (results,) = json.loads((out / "whole_generations.json").read_text()).values()
    for result in results.values():
        assert len(result["ms"]) == 3 and len(result["x_no_node_rounds"]) == 3
        assert result["spread"] == [min(result["ms"]), max(result["ms"])]
    scope = results["scope"]
    assert scope["first_trial_evaluations"] == TRIAL_EVALUATIONS and scope["first_step_trial_calls"] == 6
    assert all(one["trial_evaluations"] == 0 and one["step_trial_calls"] == 0 for one in scope["rounds"])
    assert scope["routes"]["cpu"]["step_trials"] and scope["routes"]["cpu"]["calls"]
    low, high = scope["x_no_node_spread"]
    assert low <= scope["x_no_node"] <= high
    table = (out / "whole_generations.md").read_text()
    assert "median and spread (min–max) of 3 rounds" in table
    (row,) = [line for line in table.splitlines() if line.startswith("| FLUX.1 (tiny) | scope |")]
    cells = [cell.strip() for cell in row.split("|")[1:-1]]
    assert re.fullmatch(SPREAD, cells[2]) and re.fullmatch(SPREAD, cells[3]) and cells[4] == "3"
    assert cells[8] == f"{TRIAL_EVALUATIONS} evaluations, 6 calls" and cells[9] == "0, 0"
    assert len([line for line in stdout.splitlines() if line.startswith("round ")]) == 3
