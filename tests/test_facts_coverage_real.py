"""bench/facts_coverage.py --real: which trace findings belong to a step's REGION, and the
package facts file merged from its steps' (what score.py --facts-dir reads)."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("facts_coverage", REPO / "bench" / "facts_coverage.py")
coverage = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(coverage)

REGION = "pkg/solver.py::Solver.step"


def finding(root: Path, stack: list[tuple[str, str]], where: tuple[str, str]) -> dict:
    return {"filename": str(root / where[0]), "function": where[1],
            "stack": [{"filename": str(root / f), "row": 1, "function": q} for f, q in stack]}


def test_a_finding_under_the_region_function_is_in_the_region(tmp_path):
    hit = finding(tmp_path, [("driver.py", "run"), ("pkg/solver.py", "Solver.step"), ("pkg/ops.py", "rk")],
                  ("pkg/ops.py", "rk"))
    assert coverage.in_region(hit, REGION, tmp_path / "pkg") is True


def test_a_finding_whose_whole_stack_misses_the_region_is_outside_it(tmp_path):
    hit = finding(tmp_path, [(str(tmp_path.parent / "driver.py"), "run"), ("pkg/ops.py", "setup")],
                  ("pkg/ops.py", "setup"))
    assert coverage.in_region(hit, REGION, tmp_path / "pkg") is False


def test_a_finding_with_a_cut_stack_is_not_known_to_be_outside(tmp_path):
    hit = finding(tmp_path, [("pkg/a.py", "f"), ("pkg/ops.py", "rk")], ("pkg/ops.py", "rk"))  # outermost in the tree
    assert coverage.in_region(hit, REGION, tmp_path / "pkg") is None


def test_a_packages_facts_merge_its_steps_with_the_later_step_winning(tmp_path):
    root = tmp_path / "src"
    steps = tmp_path / "facts" / "steps"
    steps.mkdir(parents=True)
    rel = "../../src"  # from facts/steps/ to src/
    for name, value in (("a_step", 1), ("b_step", 2)):
        (steps / f"{name}.json").write_text(json.dumps({"version": 1, "root": rel, "files": {"pkg/x.py": {"functions": {
            "f": {"source_hash": "h", "values": {"n": {"kind": "number", "values": [str(value)]}}},
            f"only_{name}": {"source_hash": "h", "values": {}}}}}}))
    rows = [{"program": "a_step", "package": "pkg"}, {"program": "b_step", "package": "pkg"},
            {"program": "broken", "package": "pkg", "error": "not installed"}]
    assert coverage.merge_package_facts(tmp_path / "facts", rows) == ["pkg"]
    merged = json.loads((tmp_path / "facts" / "pkg.json").read_text())
    functions = merged["files"]["pkg/x.py"]["functions"]
    assert sorted(functions) == ["f", "only_a_step", "only_b_step"]
    assert functions["f"]["values"]["n"]["values"] == ["2"]
    assert (tmp_path / "facts" / merged["root"]).resolve() == root.resolve()
