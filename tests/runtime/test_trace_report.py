"""Findings aggregation, text form and the merge with static diagnostics (pure Python)."""

from __future__ import annotations

import os

import pytest

from graphsafe.runtime.codes import RULES
from graphsafe.runtime.trace_report import Finding, Recorder, Site, StackFrame, TraceReport, merge_with_static


def finding(code: str, filename: str, line: int, hits: int = 1) -> Finding:
    rule = RULES[code]
    return Finding(code, rule.name, rule.message, filename, line, 1, "step", hits, (StackFrame(filename, line, "step"),))


def test_recorder_aggregates_per_code_file_and_line_and_builds_the_site_once():
    recorder = Recorder()
    built = []

    def at(line):
        def describe():
            built.append(line)
            return Site("/src/a.py", line, 5, "step")

        return describe

    for _ in range(3):
        recorder.record("GS101", "/src/a.py", 3, at(3), detail="Tensor.item", source="torch-function")
    recorder.record("GS201", "/src/a.py", 3, at(3), detail="Tensor.__bool__")
    key = recorder.record("GS107", "/src/a.py", 1, at(1), detail="aten.nonzero", source="dispatch")
    recorder.confirm(key, "sync-debug")
    findings = recorder.findings()
    assert [(f.code, f.line, f.hits) for f in findings] == [("GS107", 1, 1), ("GS101", 3, 3), ("GS201", 3, 1)]
    assert built == [3, 3, 1]  # once per new key, not per hit
    assert findings[0].seen_by == ("dispatch", "sync-debug")
    assert recorder.key_at("/src/a.py", 3) == ("GS101", "/src/a.py", 3)


def test_details_are_capped():
    recorder = Recorder()
    for i in range(8):
        recorder.record("GS301", "/a.py", 1, lambda: Site("/a.py", 1, 1, "f"), detail=f"v{i}")
    assert recorder.findings()[0].details == ("v0", "v1", "v2", "v3", "v4", "+3 more")


def test_text_uses_paths_relative_to_the_working_directory(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    inside, outside = str(tmp_path / "pkg" / "train.py"), "/elsewhere/x.py"
    report = TraceReport([finding("GS101", inside, 4, hits=2), finding("GS403", outside, 9)], steps=2, seconds=0.5)
    lines = report.to_text().splitlines()
    assert lines[0] == f"{os.path.join('pkg', 'train.py')}:4:1: GS101 {RULES['GS101'].message} (2 hits)"
    assert lines[1] == f"    {os.path.join('pkg', 'train.py')}:4 in step"
    assert lines[2].startswith("/elsewhere/x.py:9:1: GS403") and lines[2].endswith("(1 hit)")
    assert lines[-1] == "Found 2 hazards in 2 traced calls (0.50 s)."
    assert TraceReport([], 1, 0.01).to_text() == "No hazards found in 1 traced call (0.01 s).\n"


def test_merge_classifies_each_code_file_line(tmp_path):
    a, b = str(tmp_path / "a.py"), str(tmp_path / "b.py")
    runtime = [finding("GS101", a, 3), finding("GS201", a, 7).to_json(), finding("GS401", b, 1)]
    static = [
        {"code": "GS101", "filename": "a.py", "row": 3},  # relative: resolved against root
        {"code": "GS105", "filename": a, "location": {"row": 7, "column": 9}},  # ruff-style location
        {"code": "GS102", "filename": b, "row": 12},
    ]
    merged = merge_with_static(runtime, static, root=str(tmp_path))
    summary = {status: [(e["code"], os.path.basename(e["filename"]), e["row"]) for e in merged[status]]
               for status in ("both", "static only", "runtime only")}
    assert summary == {
        "both": [("GS101", "a.py", 3)],
        "static only": [("GS105", "a.py", 7), ("GS102", "b.py", 12)],
        "runtime only": [("GS201", "a.py", 7), ("GS401", "b.py", 1)],
    }
    assert merged["counts"] == {"both": 1, "static only": 2, "runtime only": 2}
    both = merged["both"][0]
    assert both["runtime"]["hits"] == 1 and both["static"]["row"] == 3


def test_merge_matches_the_tracer_on_any_use_of_a_grouped_static_hazard(tmp_path):
    a = str(tmp_path / "a.py")
    grouped = {"code": "GS301", "filename": a, "location": {"row": 4, "column": 9},
               "also": [{"location": {"row": 6, "column": 5}, "end_location": {"row": 6, "column": 9}, "fix": None}]}
    merged = merge_with_static([finding("GS301", a, 6)], [grouped])
    assert [(e["code"], e["row"]) for e in merged["both"]] == [("GS301", 6)]
    assert [(e["code"], e["row"]) for e in merged["static only"]] == [("GS301", 4)]


def test_merge_of_nothing_and_bad_input():
    assert merge_with_static([], [])["counts"] == {"both": 0, "static only": 0, "runtime only": 0}
    with pytest.raises(ValueError, match="needs code, filename, row"):
        merge_with_static([], [{"code": "GS101"}])
