"""The benchmark's small mode runs in CI (SDPA arms only on a CPU) so it cannot rot."""
import importlib.util

from sas_host import ROOT


def test_small_benchmark_runs_and_writes_its_table(tmp_path):
    spec = importlib.util.spec_from_file_location("sas_bench_attention_calls", ROOT / "bench" / "attention_calls.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    rows = bench.main(["--small", "--out", str(tmp_path)])
    assert [r["shape"] for r in rows] == [s[0] for s in bench.SMALL_SHAPES]
    assert all(r["sdpa"]["rel_l2"] < 1e-2 for r in rows)  # fp32 on a CPU, bf16 on a GPU
    assert "| small self-attn" in (tmp_path / "attention_calls.md").read_text()


def test_small_model_steps_benchmark_runs(tmp_path):
    spec = importlib.util.spec_from_file_location("sas_bench_model_steps", ROOT / "bench" / "model_steps.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    results = bench.main(["--small", "--steps", "2", "--rounds", "2", "--out", str(tmp_path)])
    (flux,) = results.values()
    assert flux["sdpa"]["rel_l2_vs_sdpa"] == 0.0 and flux["always"]["sage_calls"] == 0  # no kernel on a CPU
    assert "| routed |" in (tmp_path / "model_steps.md").read_text()


def test_fault_matrix_writes_its_figures(tmp_path):
    spec = importlib.util.spec_from_file_location("sas_bench_fault_matrix", ROOT / "bench" / "fault_matrix.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    outcomes = bench.main(["--out", str(tmp_path)])
    assert outcomes and all(o.completed and o.within_tolerance and o.counted_as_expected for o in outcomes)
    assert "0 wrong outputs" in (tmp_path / "fault_matrix.md").read_text()


def test_small_family_accuracy_runs(tmp_path):
    spec = importlib.util.spec_from_file_location("sas_bench_family_accuracy", ROOT / "bench" / "family_accuracy.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    results = bench.main(["--small", "--out", str(tmp_path)])
    import comfy.supported_models
    expected = ["FLUX.1", "FLUX.2", "Qwen-Image", "Z-Image", "LTX-Video"]
    expected += ["LTX-2"] if hasattr(comfy.supported_models, "LTXAV") else []
    assert [r["family"] for r in results] == expected + ["SDXL"]
    assert all(r["calls_on_sage"] and r["worst_cosine"] > 0.9999 for r in results)
    assert "| Z-Image |" in (tmp_path / "family_accuracy.md").read_text()
