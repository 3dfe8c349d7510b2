"""Pieces of the real end-to-end benchmark (bench/real_e2e) that need no package download."""

import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench.real_e2e import report, run, static, worker  # noqa: E402
from bench.real_e2e.step_api import StepModuleError, read_step_info  # noqa: E402


def test_step_info_is_read_without_importing_the_step(tmp_path):
    (tmp_path / "s.py").write_text('import not_installed_anywhere\nPACKAGE = "torchdiffeq"\nKIND = "solver"\n'
                                   'REGION = "a.py::f"\nEXTRA = [("x", "1", "ab")]\n')
    info = read_step_info("s", tmp_path)
    assert (info.package, info.kind, info.region, info.extra) == ("torchdiffeq", "solver", "a.py::f", (("x", "1", "ab"),))


def test_step_info_names_the_missing_declaration(tmp_path):
    (tmp_path / "s.py").write_text('PACKAGE = "torchdiffeq"\nKIND = "solver"\n')
    with pytest.raises(StepModuleError, match="REGION"):
        read_step_info("s", tmp_path)


def test_step_info_refuses_an_unknown_kind(tmp_path):
    (tmp_path / "s.py").write_text('PACKAGE = "p"\nKIND = "inference"\nREGION = "a.py::f"\n')
    with pytest.raises(StepModuleError, match="KIND"):
        read_step_info("s", tmp_path)


def test_trace_comparison_names_the_first_step_and_value_that_differ():
    a = [{"output": torch.tensor([1.0, 2.0])}, {"output": torch.tensor([3.0, 4.0])}]
    b = [{"output": torch.tensor([1.0, 2.0])}, {"output": torch.tensor([3.0, 4.5])}]
    result = worker.compare_traces(a, b)
    assert not result["exact"] and result["max_abs"] == 0.5
    assert result["differing"] == ["step 1: output (max abs 0.5)"]


def test_trace_comparison_counts_a_python_number_equal_to_a_tensor_of_its_value():
    number = worker.flat(0.25, "output")
    tensor = worker.flat(torch.tensor(0.25), "output")
    assert worker.compare_traces([number], [tensor])["exact"]


def test_trace_comparison_reports_a_value_only_one_side_has():
    result = worker.compare_traces([{"state.y": torch.zeros(1)}], [{}])
    assert not result["exact"] and "only in the reference" in result["differing"][0]


def test_changed_files_lists_only_rewritten_sources(tmp_path):
    for side in ("a", "b"):
        (tmp_path / side / "pkg").mkdir(parents=True)
        (tmp_path / side / "pkg" / "same.py").write_text("x = 1\n")
    (tmp_path / "a" / "pkg" / "fixed.py").write_text("if t: pass\n")
    (tmp_path / "b" / "pkg" / "fixed.py").write_text("pass\n")
    assert static.changed_files(tmp_path / "a", tmp_path / "b") == ["pkg/fixed.py"]


def test_a_step_that_cannot_be_imported_is_a_row_with_its_error(tmp_path):
    request = {"mode": "eager", "step": "no_such_step", "paths": [str(tmp_path)], "device": "cpu", "seed": 0,
               "steps": 2}
    result = run.run_worker(request, timeout=60)
    assert "ModuleNotFoundError" in result["error"]


def test_a_graph_counts_as_correct_only_when_replays_with_changing_inputs_match():
    row = {"gpu_fixed": {"trial": {"captured": True, "status": "ok"}, "changing_inputs": {"match": False},
                         "vs_orig": {"exact": True}}}
    assert report.graph_status(row) == (False, "replay ≠ eager with changing inputs")
    row["gpu_fixed"]["changing_inputs"]["match"] = True
    assert report.graph_status(row) == (True, "correct")


def test_a_failed_capture_shows_the_rule_and_the_user_line():
    failure = {"code": "GS101", "file": "ignite/engine/__init__.py", "line": 66}
    row = {"gpu_fixed": {"trial": {"captured": False, "status": "failed", "failure": failure}}}
    assert report.graph_status(row) == (False, "failed: GS101 at ignite/engine/__init__.py:66")


def test_summary_gives_the_geomean_speedup_of_correct_graphs_beside_torch_compile():
    def row(eager, replay, compiled, correct=True):
        return {"gpu_orig": {"eager_ms": eager, "compile": {"status": "ok", "match": True, "compiled_ms": compiled}},
                "gpu_fixed": {"trial": {"captured": True, "status": "ok", "timings": {"replay_ms": replay}},
                              "changing_inputs": {"match": correct}, "vs_orig": {"exact": True}}}
    line = report.gpu_summary([row(4.0, 1.0, 2.0), row(9.0, 1.0, 3.0), row(1.0, 1.0, 1.0, correct=False)])
    assert "a correct graph for 2/3 steps, geomean speedup over eager 6.00x" in line
    assert "equal to eager on 3/3 steps" in line


def test_cpu_summary_does_not_count_a_step_whose_original_did_not_run():
    same = {"vs_orig": {"identical_source": True, "exact": True, "max_abs": 0.0}}
    rows = [{"cpu": {"orig": {"determinism": {"exact": True}}, "fixed": same}},
            {"cpu": {"orig": {"error": "ModuleNotFoundError: No module named 'opt_einsum'"}, "fixed": same}}]
    assert report.cpu_summary(rows).endswith("on 1/2 steps")


def test_merge_makes_one_table_from_several_runs_the_last_row_of_a_step_winning(tmp_path, capsys):
    first, second, out = tmp_path / "a", tmp_path / "b", tmp_path / "out"
    base = {"kind": "solver", "package": "p", "version": "1"}
    for directory, rows in ((first, [{"step": "x", "seconds": 1, **base}, {"step": "y", "seconds": 2, **base}]),
                            (second, [{"step": "y", "seconds": 3, **base}])):
        directory.mkdir()
        (directory / "results.json").write_text(json.dumps({"command": f"run {directory.name}", "device": "cuda",
                                                             "rows": rows}))
    assert run.main(["--merge", str(first), str(second), "--out", str(out)]) == 0
    merged = json.loads((out / "results.json").read_text())
    assert [(r["step"], r["seconds"]) for r in merged["rows"]] == [("x", 1), ("y", 3)]
    assert merged["command"] == "run a ; run b" and (out / "results.md").is_file()
    (second / "results.json").write_text(json.dumps({"command": "c", "device": "cpu", "rows": []}))
    with pytest.raises(SystemExit, match="different devices"):
        run.main(["--merge", str(first), str(second), "--out", str(out)])


def test_a_failure_names_the_package_line_not_the_scratch_copy():
    assert report.package_path("/root/out/scratch/rk4/fixed/torchdiffeq/_impl/misc.py") == "torchdiffeq/_impl/misc.py"
    assert report.package_path("/work/repo/bench/real_e2e/steps/s.py") == "/work/repo/bench/real_e2e/steps/s.py"


def test_the_facts_mode_traces_the_step_and_writes_facts_graph_can_read(tmp_path, monkeypatch):
    from graphsafe.analyzer import run_facts

    package = tmp_path / "toypkg"
    package.mkdir()
    (package / "__init__.py").write_text(
        "import torch\n\n\ndef step(x, scale):\n    if x.sum() > 0:\n        x = x * scale\n    return x + 1\n",
        encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    import toypkg

    class Step:  # what a bench/real_e2e/steps module declares
        REGION = "toypkg/__init__.py::step"

        @staticmethod
        def build(device, seed):
            from bench.real_e2e.step_api import Built
            return Built(step=toypkg.step, inputs=lambda i: (torch.full((3,), float(i) - 1.0), 2.0 + i),
                         state=lambda: {})

    monkeypatch.setattr(worker, "load_step", lambda request: Step)
    out = tmp_path / "facts.json"
    result = worker.run_facts({"step": "toy", "paths": [str(tmp_path)], "device": "cpu", "seed": 0, "steps": 3,
                               "facts_out": str(out)})
    assert result["saved"] and result["findings"] >= 1  # the branch on `x.sum() > 0`, simulated on the CPU
    facts = run_facts.load(out)
    assert facts.root == tmp_path
