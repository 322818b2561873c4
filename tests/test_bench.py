"""The benchmark's small mode runs in CI (SDPA arms only on a CPU) so it cannot rot."""
import collections
import importlib.util

import pytest

from sas_host import ROOT


def load(name: str):
    """A bench/ script as a module (bench/ is no package)."""
    spec = importlib.util.spec_from_file_location(f"sas_bench_{name}", ROOT / "bench" / f"{name}.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    return bench


def test_small_benchmark_runs_and_writes_its_table(tmp_path):
    bench = load("attention_calls")
    rows = bench.main(["--small", "--out", str(tmp_path)])
    assert [r["shape"] for r in rows] == [s[0] for s in bench.SMALL_SHAPES]
    assert all(r["sdpa"]["rel_l2"] < 1e-2 for r in rows)  # fp32 on a CPU, bf16 on a GPU
    assert "| small self-attn" in (tmp_path / "attention_calls.md").read_text()


def test_the_table_states_routed_against_the_faster_side():
    """The per-call target (routed <= min(SDPA, kernel) x 1.05) is read off the table itself."""
    bench = load("attention_calls")
    arm = {"rel_l2": 0.0, "cosine": 1.0, "peak_mib": 0.0, "tflops": 1.0}
    rows = [{"shape": "long", "dims": [1, 1, 1, 1, 1], "sdpa": {**arm, "ms": 2.0}, "k": {**arm, "ms": 1.0},
             "routed (k)": {**arm, "ms": 1.04}},
            {"shape": "short", "dims": [1, 1, 1, 1, 1], "sdpa": {**arm, "ms": 1.0}, "k": {**arm, "ms": 3.0},
             "routed (k)": {**arm, "ms": 1.1}}]
    assert bench.routed_vs_best(rows[0]) == ("routed (k)", pytest.approx(1.04))
    info = {"device": "d", "comfyui": "c", "torch": "t", "triton": "tr", "sageattention": "s"}
    assert "within the 1.05 target" in bench.to_markdown(info, rows[:1])
    assert "Worst routed ÷ min(SDPA, kernel): 1.100 (short); over" in bench.to_markdown(info, rows)


def test_a_host_bound_shape_is_judged_call_by_call(monkeypatch):
    """Where SDPA is host-bound, the arms take turns call by call and that figure is the verdict."""
    import torch
    bench = load("attention_calls")
    monkeypatch.setattr(bench, "WARMUP_TURNS", 1)
    seen = []
    fast = {name: (lambda name=name: seen.append(name)) for name in "abc"}
    turns = bench.call_by_call(fast, torch.device("cpu"), turns=6, alone={"k": lambda: seen.append("k")})
    assert set(turns) == {"a", "b", "c", "k"}
    # The fast arms' balanced orders in turn (for three arms, all six), so each follows each other
    # equally; the slow arm alone afterwards (warm-up turn included).
    rounds = ["".join(seen[i:i + 3]) for i in range(0, 21, 3)]
    assert rounds == ["abc", "bca", "cab", "cba", "acb", "bac", "abc"] and seen[21:] == ["k"] * 7
    arm = {"rel_l2": 0.0, "cosine": 1.0, "peak_mib": 0.0, "tflops": 1.0}
    row = {"shape": "short", "dims": [1, 1, 1, 1, 1], "sdpa": {**arm, "ms": 0.04}, "k": {**arm, "ms": 0.2},
           "routed (k)": {**arm, "ms": 0.05},  # a slow spell of the host fell on routed's round
           "call_by_call": {"sdpa": 0.050, "k": 0.2, "routed (k)": 0.052}}
    assert bench.routed_vs_best(row) == ("routed (k)", pytest.approx(1.04))
    info = {"device": "d", "comfyui": "c", "torch": "t", "triton": "tr", "sageattention": "s"}
    table = bench.to_markdown(info, [row])
    assert "| 1.040 (call by call) |" in table and "| short | 50.0 | 200.0 | 52.0 |" in table


def test_every_arm_runs_with_a_kernel_and_a_host_bound_shape_is_timed_call_by_call(monkeypatch):
    """The GPU's arms on a CPU: the named test double stands in for SageAttention's kernel."""
    import torch
    from sas_doubles import RecordingKernel, make_kernel
    bench = load("attention_calls")
    double = make_kernel("double", RecordingKernel())
    monkeypatch.setattr(bench, "kernel_arms", lambda device: ([double], double))
    monkeypatch.setattr(bench, "HOST_BOUND_MS", float("inf"))
    monkeypatch.setattr(bench, "TURNS", 3)
    (row,) = bench.measure(bench.SMALL_SHAPES[1:], torch.device("cpu"), torch.float32)
    assert {"sdpa", "pass-through override", "double", "routed (double)", "always (double)"} <= set(row)
    assert set(row["call_by_call"]) == {"sdpa", "pass-through override", "double", "routed (double)"}
    assert bench.routed_vs_best(row)[0] == "routed (double)"
    assert row["double"]["rel_l2"] < 1e-5


def test_small_model_steps_benchmark_runs(tmp_path):
    bench = load("model_steps")
    results = bench.main(["--small", "--steps", "2", "--rounds", "2", "--out", str(tmp_path)])
    (flux,) = results.values()
    assert flux["sdpa"]["rel_l2_vs_sdpa"] == 0.0 and flux["always"]["sage_calls"] == 0  # no kernel on a CPU
    assert "| routed |" in (tmp_path / "model_steps.md").read_text()


def test_fault_matrix_writes_its_figures(tmp_path):
    bench = load("fault_matrix")
    outcomes = bench.main(["--out", str(tmp_path)])
    assert outcomes and all(o.completed and o.within_tolerance and o.counted_as_expected for o in outcomes)
    assert "0 wrong outputs" in (tmp_path / "fault_matrix.md").read_text()


def test_small_family_accuracy_runs(tmp_path):
    bench = load("family_accuracy")
    results = bench.main(["--small", "--out", str(tmp_path)])
    import comfy.supported_models
    expected = ["FLUX.1", "FLUX.2", "Qwen-Image", "Z-Image", "LTX-Video"]
    expected += ["LTX-2"] if hasattr(comfy.supported_models, "LTXAV") else []
    assert [r["family"] for r in results] == expected + ["SDXL"]
    assert all(r["calls_on_sage"] and r["worst_cosine"] > 0.9999 for r in results)
    assert "| Z-Image |" in (tmp_path / "family_accuracy.md").read_text()


@pytest.mark.parametrize("count", [2, 3, 4, 7, 10])
def test_balanced_orders_put_every_arm_everywhere_and_after_every_other_equally(count):
    """Rounds of a benchmark: an arm's place, or the arm before it, must not favour it."""
    balanced_orders = load("arm_orders").balanced_orders
    arms = [chr(ord("a") + i) for i in range(count)]
    orders = balanced_orders(arms)
    assert len(orders) == (count if count % 2 == 0 else 2 * count)
    assert all(sorted(order) == arms for order in orders) and orders[0][0] == "a"
    places = collections.Counter((order.index(arm), arm) for order in orders for arm in arms)
    after = collections.Counter(pair for order in orders for pair in zip(order, order[1:]))
    assert set(places.values()) == {len(orders) // count}
    assert len(after) == count * (count - 1) and len(set(after.values())) == 1
    assert balanced_orders(["a"]) == [["a"]] and balanced_orders([]) == [[]]
