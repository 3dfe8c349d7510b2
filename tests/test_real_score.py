"""bench/real/score.py: how diagnostics are matched to labelled lines (offline: no download)."""

from __future__ import annotations

import importlib.util
import json
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
spec = importlib.util.spec_from_file_location("real_score", ROOT / "bench" / "real" / "score.py")
score_module = importlib.util.module_from_spec(spec)
sys.modules["real_score"] = score_module  # dataclasses look their module up while the class is built
spec.loader.exec_module(score_module)


def label(line: int, kind: str, positive: bool, alt_lines=(), borderline=False) -> dict:
    return {"package": "p", "version": "1", "wheel": "p-1-py3-none-any.whl", "sha256": "0" * 64,
            "path": "p/m.py", "line": line, "text": f"line {line}", "kind": kind,
            "label": "positive" if positive else "negative", "function": "f", "region": "p/m.py::f",
            "reason": "", "borderline": borderline, "alt_lines": list(alt_lines)}


def flag(line: int, code: str) -> dict:
    return {"relpath": "p/m.py", "location": {"row": line, "column": 1}, "code": code}


def run(labels: list[dict], diagnostics: list[dict]):
    package = score_module.Package("p", "1", "p-1-py3-none-any.whl", "0" * 64, labels)
    tallies = defaultdict(score_module.Tally)
    flagged_true = defaultdict(int)
    misses, false_alarms, outside = [], [], []
    score_module.score(package, diagnostics, tallies, flagged_true, misses, false_alarms, outside)
    return tallies, flagged_true, misses, false_alarms, outside


def test_a_positive_is_found_by_its_family_on_its_line_or_an_alternative_line():
    labels = [label(3, "sync", True), label(5, "config", True, alt_lines=[9]), label(7, "scalar", True)]
    tallies, flagged_true, misses, _, _ = run(labels, [flag(3, "GS101"), flag(9, "GS701"), flag(7, "GS201")])
    assert (tallies["sync"].tp, tallies["config"].tp, tallies["scalar"].fn) == (1, 1, 1)
    assert flagged_true["sync"] == 1 and flagged_true["config"] == 1
    assert len(misses) == 1 and "p/m.py:7 scalar" in misses[0]


def test_a_flag_on_a_look_alike_is_a_false_alarm_and_on_another_kinds_positive_is_cross_kind():
    labels = [label(3, "sync", False), label(4, "branch", True)]
    tallies, _, _, false_alarms, _ = run(labels, [flag(3, "GS101"), flag(4, "GS101"), flag(4, "GS201")])
    assert tallies["sync"].fp == 1 and tallies["sync"].cross == 1 and tallies["branch"].tp == 1
    assert false_alarms == ["p p/m.py:3 GS101 (sync): line 3"]


def test_flags_on_unlabelled_lines_are_counted_apart():
    tallies, flagged_true, _, _, outside = run([label(3, "sync", True)], [flag(20, "GS501")])
    assert tallies["cpu_effect"].outside == 1 and tallies["sync"].fn == 1 and outside == ["p p/m.py:20 GS501 (cpu_effect)"]
    assert tallies["cpu_effect"].precision(flagged_true["cpu_effect"]) is None  # nothing labelled was flagged


def test_counters_host_randomness_and_grad_scaler_steps_answer_for_either_of_their_kinds():
    assert score_module.kinds_of("GS302") == {"scalar", "cpu_effect"}
    assert score_module.kinds_of("GS502") == {"cpu_effect", "rng"}
    assert score_module.kinds_of("GS703") == {"config", "sync"}  # `GradScaler.step` reads found_inf on the host
    assert score_module.kinds_of("GS108") == {"sync", "alloc"}  # a boolean-mask read waits and changes shape
    assert score_module.kinds_of("GS807") == {"config"} and score_module.kinds_of("GS000") == frozenset()


def test_the_committed_labels_are_well_formed_and_split_by_package():
    split = json.loads((ROOT / "bench" / "real" / "split.json").read_text())
    packages = score_module.load_labels(ROOT / "bench" / "real" / "labels")
    assert set(packages) == set(split["dev"]) | set(split["test"]) and not set(split["dev"]) & set(split["test"])
    fields = {"package", "version", "wheel", "sha256", "path", "line", "text", "kind", "label", "function", "region",
              "reason", "borderline"}
    seen = set()
    for package in packages.values():
        for item in package.labels:
            assert fields <= set(item) and item["kind"] in score_module.KINDS, item
            assert item["label"] in ("positive", "negative")
            assert "::" in item["region"]
            if item["label"] == "positive" or item["borderline"]:
                assert "review" in item, f"not reviewed by a second labeller: {item['path']}:{item['line']}"
            key = (item["package"], item["path"], item["line"], item["kind"])
            assert key not in seen, key
            seen.add(key)
    test_labels = sum(len(packages[name].labels) for name in split["test"])
    assert test_labels * 3 >= len(seen)  # the test part holds at least a third of the labels


def test_the_other_uses_of_a_grouped_hazard_count_on_their_own_lines():
    grouped = {**flag(3, "GS301"), "also": [{"location": {"row": 6, "column": 5}}]}
    tallies, _, misses, _, _ = run([label(3, "scalar", True), label(6, "scalar", True)], [grouped])
    assert tallies["scalar"].tp == 2 and misses == []


def test_a_declared_loop_is_marked_as_a_region_in_a_copy_and_the_wheel_stays_untouched(tmp_path):
    root = tmp_path / "src"
    (root / "pkg").mkdir(parents=True)
    original = "def gen(n):\n    out = []\n    for i in range(n):\n        out.append(i)\n    return out\n"
    (root / "pkg" / "gen.py").write_text(original)
    copy = score_module.with_loop_marks(root, {"pkg/gen.py": [3]}, tmp_path / "scratch")
    assert (copy / "pkg" / "gen.py").read_text().splitlines()[2] == "    for i in range(n):  # graphsafe: region"
    assert (root / "pkg" / "gen.py").read_text() == original


def test_the_function_holding_a_declared_loop_is_no_region_of_its_own(tmp_path):
    # the pass is the replayed step; the code around the loop runs once, eagerly
    root = tmp_path / "src"
    root.mkdir()
    (root / "gen.py").write_text("class Sampler:\n    def run(self, n):\n        for i in range(n):\n            pass\n\n\n"
                                 "def other(n):\n    for i in range(n):\n        pass\n")
    assert score_module.loop_functions(root, {"gen.py": [3]}) == {"gen.py::Sampler.run"}


def test_a_declared_line_that_is_no_loop_header_stops_the_run(tmp_path):
    root = tmp_path / "src"
    root.mkdir()
    (root / "gen.py").write_text("def gen(n):\n    return n\n")
    try:
        score_module.with_loop_marks(root, {"gen.py": [2]}, tmp_path / "scratch")
    except SystemExit as stop:
        assert "gen.py:2 is not a one-line loop header" in str(stop)
    else:
        raise AssertionError("a line that is no loop header was marked")


def test_every_declared_loop_region_names_a_labelled_package():
    labelled = set(score_module.load_labels(ROOT / "bench" / "real" / "labels"))
    assert set(score_module.loop_regions()) <= labelled
