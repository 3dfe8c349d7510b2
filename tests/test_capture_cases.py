"""Issue 23's real-case table, executable: every tests/capture_cases file marked `static` is reported by
`graphsafe check` with its expected code (its negative twin with none of the codes it names), and
every file marked `runtime` is named by the capture classifier from its recorded error, at the
file's own line. docs/cases.md lists every case."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import pytest

from graphsafe.runtime.classify import FailureRecord, Frame, LibraryFilter, classify
from tests.helpers import run_cli

CASES = Path(__file__).parent / "capture_cases"
DOCS = Path(__file__).parent.parent / "docs" / "cases.md"
SITE = "/usr/lib/python3.12/site-packages"  # where recorded library frames live (torch, triton)
CAPTURE_EXIT = (Frame(f"{SITE}/torch/cuda/graphs.py", 265, "graph.__exit__", "self.cuda_graph.capture_end()"),)


@dataclass(frozen=True)
class Case:
    path: Path
    header: dict[str, str]

    @property
    def expect(self) -> str:
        return self.header["expect"]

    @property
    def checks(self) -> set[str]:
        return set(self.header["check"].split())

    def line_of(self, text: str) -> int:
        [line] = [i for i, source in enumerate(self.path.read_text().splitlines(), 1)
                  if text in source and not source.startswith("#")]
        return line


def _case(path: Path) -> Case:
    header = {}
    for line in path.read_text().splitlines():
        if not line.startswith("# ") or ":" not in line:
            break
        key, _, value = line[2:].partition(":")
        header[key.strip()] = value.strip()
    return Case(path, header)


ALL = [_case(p) for p in sorted(CASES.glob("c*.py"))]
STATIC = [c for c in ALL if "static" in c.checks]
RUNTIME = [c for c in ALL if "runtime" in c.checks]


def _check_codes(capsys) -> dict[str, set[str]]:
    """Codes one `graphsafe check` run over every static case reports, by file."""
    code, out, err = run_cli(capsys, "check", "--no-cache", "--output-format", "json", *(str(c.path) for c in STATIC))
    assert code in (0, 1), err
    found: dict[str, set[str]] = {str(c.path): set() for c in STATIC}
    for d in json.loads(out):
        found.setdefault(str(Path(d["filename"]).resolve()), set()).add(d["code"])
        found.setdefault(d["filename"], set()).add(d["code"])
    return found


def test_there_are_at_least_18_cases_with_reports_and_a_twin_for_static_ones():
    positives = [c for c in ALL if c.expect != "-"]
    assert len(positives) >= 18
    for case in ALL:
        assert {"family", "report", "expect", "check"} <= set(case.header), case.path.name
    assert len([c for c in ALL if c.expect == "-"]) >= 8


def test_graphsafe_check_reports_each_static_case_and_nothing_for_its_twin(capsys):
    found = _check_codes(capsys)
    for case in STATIC:
        codes = found.get(str(case.path), set()) | found.get(str(case.path.resolve()), set())
        if case.expect == "-":
            named = set(case.header["codes"].split())
            assert not codes & named, f"{case.path.name}: {sorted(codes & named)} on the safe twin"
        else:
            assert case.expect in codes, f"{case.path.name}: expected {case.expect}, got {sorted(codes)}"


def _record(case: Case) -> FailureRecord:
    errors = [e.strip() for e in case.header["error"].split(" | ")]
    library = tuple(Frame(f"{SITE}/{spec.partition('::')[0]}", 10, spec.partition("::")[2], "")
                    for spec in case.header.get("frames", "").split())
    at = case.header["at"]
    user = (Frame(str(case.path), case.line_of(at), "step", at), *library)
    chain = []
    for index, error in enumerate(errors):
        kind, _, message = error.partition(": ")
        innermost = index == len(errors) - 1
        chain.append((kind, message, user if innermost else CAPTURE_EXIT))
    return FailureRecord.of(*chain)


@pytest.mark.parametrize("case", RUNTIME, ids=lambda c: c.path.stem)
def test_the_classifier_names_each_runtime_case_at_its_line(case):
    failure = classify(_record(case), LibraryFilter(), phase="capture")
    if case.expect == "out-of-memory":
        assert failure.code is None and "memory pressure" in failure.error_class, failure
    else:
        assert failure.code == case.expect, failure
    assert (failure.file, failure.line) == (str(case.path), case.line_of(case.header["at"])), failure


def test_docs_case_table_lists_every_case():
    table = DOCS.read_text()
    for case in ALL:
        assert f"`{case.path.name}`" in table, case.path.name
