"""Branches on tensors a traced run took (`graphsafe trace --save-facts` records them per
function) are reported by `check` with the facts where static inference could not tell the test
was a tensor (analyzer/run_facts.py, ObservedIndex.branch_hits)."""

from __future__ import annotations

import json
import textwrap

import pytest

from graphsafe.analyzer import run_facts
from graphsafe.analyzer.engine import check_paths
from graphsafe.config import Settings

PROGRAM = textwrap.dedent('''
    import torch


    def solve_step(y, tableau, func):  # graphsafe: region
        for a in tableau.alpha:
            if a == 1.0:
                y = func(y)
        return y


    def helper(y, table):
        if table.scale > 0:
            return y * table.scale
        return y
''').lstrip()
BRANCH_LINE = 6  # `if a == 1.0:` (tableau.alpha held tensors)
NOTE = "observed at run time: a branch on a tensor here (Tensor.__bool__)"


def write_facts(root, program: str, branches: dict[str, list[int]], first_lines: dict[str, int]) -> None:
    """Facts as the tracer writes them for train.py: each function's source hash, its first
    line at trace time and the lines of the branches it took there."""
    hashes = run_facts.function_hashes(program)
    functions = {name: {"source_hash": next(iter(hashes[name])), "line": first_lines[name], "values": {},
                        "branches": [{"line": line, "code": "GS201", "details": ["Tensor.__bool__"]} for line in lines]}
                 for name, lines in branches.items()}
    path = root / ".graphsafe" / "facts.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"version": 1, "root": "..", "files": {"train.py": {"functions": functions}}}))


@pytest.fixture
def project(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "train.py").write_text(PROGRAM)
    return tmp_path


def branches(root) -> list[tuple[int, str]]:
    result = check_paths([root], Settings(root=root), use_cache=False)
    lines = (root / "train.py").read_text().splitlines()
    return [(d.start.line, lines[d.start.line - 1].strip()) for d in result.diagnostics
            if d.code == "GS201" and NOTE in d.message]


def test_without_facts_a_branch_on_an_unannotated_objects_attribute_is_not_reported(project):
    result = check_paths([project], Settings(root=project), use_cache=False)
    assert [d for d in result.diagnostics if d.code == "GS201"] == []


def test_a_branch_the_run_took_is_reported_on_its_line(project):
    write_facts(project, PROGRAM, {"solve_step": [BRANCH_LINE]}, {"solve_step": 4})
    assert branches(project) == [(BRANCH_LINE, "if a == 1.0:")]


def test_a_branch_fact_follows_its_function_when_edits_above_move_it(project):
    write_facts(project, PROGRAM, {"solve_step": [BRANCH_LINE]}, {"solve_step": 4})
    (project / "train.py").write_text(PROGRAM.replace("import torch\n", "import torch\nimport math\n\nK = 2\n"))
    assert branches(project) == [(BRANCH_LINE + 3, "if a == 1.0:")]


def test_an_edited_function_loses_its_branch_facts(project):
    write_facts(project, PROGRAM, {"solve_step": [BRANCH_LINE]}, {"solve_step": 4})
    (project / "train.py").write_text(PROGRAM.replace("a == 1.0", "a == 2.0"))
    assert branches(project) == []


def test_a_branch_in_a_function_no_region_reaches_is_not_reported(project):
    write_facts(project, PROGRAM, {"helper": [12]}, {"helper": 11})  # traced elsewhere, never called here
    assert branches(project) == []


def test_a_branch_static_analysis_reports_already_is_reported_once(project):
    program = PROGRAM.replace("def solve_step(y, tableau, func):", "def solve_step(y: torch.Tensor, tableau, func):")
    program = program.replace("if a == 1.0:", "if y.sum() > 1.0:")
    (project / "train.py").write_text(program)
    write_facts(project, program, {"solve_step": [BRANCH_LINE]}, {"solve_step": 4})
    result = check_paths([project], Settings(root=project), use_cache=False)
    assert [(d.start.line, NOTE in d.message) for d in result.diagnostics if d.code == "GS201"] == [(BRANCH_LINE, False)]


COPY_PROGRAM = textwrap.dedent('''
    import torch


    def augment_step(images, params):  # graphsafe: region
        angle = to_device(params["angle"], images.device)
        return images * angle


    def to_device(value, device):
        return value.to(device=device, non_blocking=True)
''').lstrip()
COPY_LINE = 10  # `value.to(device=...)`: `params` held CPU tensors, a pageable copy every step


def test_a_host_to_device_copy_the_run_made_is_gs402_with_facts_and_silent_without(project):
    (project / "train.py").write_text(COPY_PROGRAM)
    hashes = run_facts.function_hashes(COPY_PROGRAM)
    functions = {"augment_step": {"source_hash": next(iter(hashes["augment_step"])), "line": 4, "values": {}},
                 "to_device": {"source_hash": next(iter(hashes["to_device"])), "line": 9, "values": {},
                               "host_copies": [{"line": COPY_LINE, "code": "GS402", "details": ["aten._to_copy"]}]}}

    def copies() -> list[tuple[int, str]]:
        result = check_paths([project], Settings(root=project), use_cache=False)
        return [(d.start.line, d.message) for d in result.diagnostics if d.code == "GS402"]

    assert copies() == []  # static inference cannot tell where `params` lives
    path = project / ".graphsafe" / "facts.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"version": 1, "root": "..", "files": {"train.py": {"functions": functions}}}))
    found = copies()
    assert [line for line, _ in found] == [COPY_LINE]
    assert "observed at run time: a host-to-device copy here (aten._to_copy)" in found[0][1]
