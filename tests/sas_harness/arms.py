"""Benchmark arms that use the pack as a user does, through its Scope node, so that the same code
serves this tree and an earlier one (``--compare DIR``): the earlier tree runs in a process of
its own (``Remote``), started on this file, and the two trees' arms take turns in one run.

Only what every version of the pack has is used: the Scope node's ``execute`` with its inputs by
name, the ModelPatcher wrapper that opens the scope, and a way to start without saved routing.
"""
from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable, NamedTuple

import torch

WRAPPER_KEY = "sage_attention_scope"
WARMUP, REPEATS = 2, 10


def timed(fn: Callable[[], object], device: torch.device, repeats: int = REPEATS, warmup: int = WARMUP) -> float:
    """Median ms of ``repeats`` back-to-back calls after ``warmup``: CUDA events and one
    synchronise on a GPU (as a model runs them), the wall clock elsewhere."""
    for _ in range(warmup):
        fn()
    if device.type != "cuda":
        times = []
        for _ in range(repeats):
            t0 = time.perf_counter()
            fn()
            times.append((time.perf_counter() - t0) * 1e3)
        return sorted(times)[len(times) // 2]
    torch.cuda.synchronize(device)
    events = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(repeats)]
    for start, end in events:
        start.record()
        fn()
        end.record()
    torch.cuda.synchronize(device)
    return sorted(s.elapsed_time(e) for s, e in events)[repeats // 2]


def start_fresh(pack) -> None:
    """The pack as in a new ComfyUI process that never saved a routing decision."""
    patches = pack.patches
    if hasattr(patches, "Session"):  # one session object
        pack.nodes.SESSION = patches.Session(store=None)
    else:  # before the session object: module-level state
        patches.stats.reset_session()
        patches.kernels.reset_caches()
        patches.timing.use_store(None)


def scope_inputs_of(pack) -> dict[str, list]:
    """The Scope node's inputs other than the model, required and optional (the sparse ones): name ->
    [type, options], as ComfyUI describes them."""
    described = pack.nodes.scope.SageAttentionScope.GET_NODE_INFO_V1()["input"]
    inputs = {**described["required"], **described.get("optional", {})}
    return {name: spec for name, spec in inputs.items() if name != "model"}


def scope(pack, model, **inputs):
    """``model`` through the pack's Scope node with ``inputs`` (the others at their defaults)."""
    defaults = {name: spec[1].get("default") for name, spec in scope_inputs_of(pack).items()}
    return pack.nodes.scope.SageAttentionScope.execute(model=model, **{**defaults, **inputs}).result[0]


class Arm(NamedTuple):
    """A benchmark arm through the Scope: its name and the node's inputs it sets (the rest at their defaults)."""
    name: str
    inputs: dict


def parse_arm(pack, text: str) -> Arm:
    """``NAME:INPUT=VALUE,INPUT=VALUE`` (``NAME:`` alone: the node's defaults) -> an Arm, each value typed
    as the Scope node's input takes it. ValueError, saying what is wrong, for an input the node lacks or
    a value of the wrong type."""
    name, colon, pairs = text.partition(":")
    if not colon or not name:
        raise ValueError(f"arm {text!r}: write NAME:INPUT=VALUE,... (NAME: alone for the Scope's defaults)")
    known = scope_inputs_of(pack)
    inputs = {}
    for pair in filter(None, pairs.split(",")):
        key, equals, value = pair.partition("=")
        if not equals or key not in known:
            raise ValueError(f"arm {name}: {pair!r} is not INPUT=VALUE for one of the Scope's inputs "
                             f"({', '.join(known)})")
        inputs[key] = typed_value(key, known[key][0], value)
    return Arm(name, inputs)


def typed_value(key: str, input_type: str, value: str):
    """``value`` (text) as an input of ComfyUI type ``input_type`` takes it."""
    if input_type == "BOOLEAN":
        if value.lower() not in ("true", "false"):
            raise ValueError(f"{key} takes true or false, got {value!r}")
        return value.lower() == "true"
    try:
        if input_type == "INT":
            return int(value)
        if input_type == "FLOAT":
            return float(value)
    except ValueError:
        raise ValueError(f"{key} takes a {input_type.lower()}, got {value!r}") from None
    return value


def arm_problems(pack, arm: Arm) -> list[str]:
    """What this tree of the pack would not take in ``arm``: an input its Scope node lacks, an option its
    combo does not offer, a kernel it does not know (the node's own check); empty where it takes them all."""
    known = scope_inputs_of(pack)
    problems = [f"the Scope has no input {key!r}" for key in arm.inputs if key not in known]
    for key, value in arm.inputs.items():
        spec = known.get(key)
        if key == "kernel":  # the combo offers only what binds on this machine's GPUs: the node checks names
            verdict = pack.nodes.scope.SageAttentionScope.validate_inputs(kernel=value)
            if verdict is not True:
                problems.append(str(verdict))
        elif spec is not None and spec[0] == "COMBO" and value not in spec[1].get("options", ()):
            problems.append(f"{key} {value!r} is not one of {', '.join(spec[1].get('options', ()))}")
    return [f"arm {arm.name}: {problem}" for problem in problems]


def unbound_kernel(pack, arm: Arm, device) -> str | None:
    """Why ``arm``'s kernel cannot run on ``device`` (the node would fall back to auto), or None."""
    choice = arm.inputs.get("kernel", "auto")
    knowledge = getattr(getattr(pack.nodes, "SESSION", None), "knowledge", None)
    if choice == "auto" or knowledge is None:  # a tree before Knowledge: its node falls back and logs it
        return None
    resolution = knowledge.kernel(choice, device)
    if resolution.bound is not None:
        return None
    return f"arm {arm.name}: kernel {choice} cannot run here: {resolution.why}"


def wrapped(patched) -> bool:
    """Whether the Scope node wrapped ``patched`` (it passes a model it cannot scope through unchanged)."""
    import comfy.patcher_extension as ext
    return bool(patched.get_wrappers(ext.WrappersMP.OUTER_SAMPLE, WRAPPER_KEY))


def in_scope(patched, fn):
    """``fn()`` inside ``patched``'s scope, as its OUTER_SAMPLE wrapper runs a sampler; plain where
    the node passed the model through."""
    import comfy.patcher_extension as ext
    wrappers = patched.get_wrappers(ext.WrappersMP.OUTER_SAMPLE, WRAPPER_KEY)
    return wrappers[0](fn) if wrappers else fn()


def kernel_timing_ms(pack) -> float | None:
    """The ms the Scope spent timing kernels in the last generation, as its Status payload reports it
    (None for a tree whose payload does not say)."""
    session = getattr(pack.nodes, "SESSION", None)
    last = pack.nodes.status.payload(session).get("last_ms") if session is not None else None
    return None if last is None else last.get("timing")


def _status_devices(pack) -> dict:
    """The Status node's per-device payload of this session."""
    session = getattr(pack.nodes, "SESSION", None)
    snap = pack.nodes.status.payload(session) if session is not None else pack.patches.snapshot()
    return snap["devices"]


def counts(pack) -> dict:
    """The last generation's counters per device, as the Status node reports them."""
    return {device: info["last_generation"] for device, info in _status_devices(pack).items()}


def routes(pack) -> dict:
    """Per device: the last generation's calls per shape and route (a kernel's name, or ComfyUI) and
    the step trials' verdicts, as the Status node reports them (an older tree reports neither)."""
    return {device: {"calls": info.get("route_calls", {}).get("last", {}), "step_trials": info.get("steps", [])}
            for device, info in _status_devices(pack).items()}


# -- the other tree's process ----------------------------------------------------------------

class Remote:
    """A pack tree (an earlier commit, exported with ``git archive``) in a process of its own,
    running this harness; ``ask`` sends one request and waits for its answer."""

    def __init__(self, tree: Path, label: str):
        self.label = label
        env = dict(os.environ, SAS_PACK_ROOT=str(Path(tree).resolve()),
                   PYTHONPATH=os.pathsep.join([str(Path(__file__).resolve().parents[1]),
                                               os.environ.get("PYTHONPATH", "")]))
        self.process = subprocess.Popen([sys.executable, "-m", "sas_harness.arms"], stdin=subprocess.PIPE,
                                        stdout=subprocess.PIPE, text=True, env=env, bufsize=1)
        self.info = self.ask("hello")

    def ask(self, op: str, **kwargs):
        self.process.stdin.write(json.dumps({"op": op, **kwargs}) + "\n")
        line = self.process.stdout.readline()
        if not line:
            raise RuntimeError(f"the {self.label} tree's process ended (exit {self.process.wait()})")
        answer = json.loads(line)
        if "error" in answer:
            raise RuntimeError(f"{self.label} tree: {answer['error']}")
        return answer["result"]

    def close(self):
        with contextlib.suppress(Exception):
            self.ask("quit")
        self.process.wait(timeout=60)


def serve(handlers: dict[str, Callable]) -> None:
    """The other tree's side: answers requests on stdin, one JSON line each, until "quit". What
    the handlers print goes to stderr, so stdout carries only answers."""
    out, sys.stdout = sys.stdout, sys.stderr
    for line in sys.stdin:
        request = json.loads(line)
        op = request.pop("op")
        if op == "quit":
            out.write(json.dumps({"result": None}) + "\n")
            out.flush()
            return
        try:
            answer = {"result": handlers[op](**request)}
        except Exception as exc:  # noqa: BLE001 - the coordinator says which arm failed and goes on
            answer = {"error": f"{type(exc).__name__}: {exc}"}
        out.write(json.dumps(answer) + "\n")
        out.flush()


def _main():
    import importlib

    import sas_harness
    sas_harness.boot()
    from . import host
    pack = sys.modules[host.PACK_NAME]
    start_fresh(pack)
    handlers = {"hello": lambda: {"root": str(host.pack_root())}}
    for name in ("call_arms", "step_arms"):  # each serves its benchmark's arms for the other tree
        handlers.update(importlib.import_module(f"sas_harness.{name}").remote_handlers(pack))
    serve(handlers)


if __name__ == "__main__":
    _main()
