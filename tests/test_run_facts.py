"""Run-time facts read by the static side (analyzer/run_facts.py), without torch: facts files
written here as `graphsafe trace --save-facts` writes them; stale functions, bad files, the
cache and the editor's path (check_source)."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from graphsafe.analyzer import run_facts
from graphsafe.analyzer.engine import check_paths, check_source
from graphsafe.config import Settings

PROGRAM = '''
import torch


def apply_update(w, grad, lr):
    w.sub_(grad * lr)


def train_step(w, x, sched, lr, i):  # graphsafe: region
    loss = ((w * x).sum() - 1.0) ** 2
    if sched[i + 1] > 0:
        loss = loss * 2
    apply_update(w, x, lr)
    return loss
'''

TENSOR = {"kind": "tensor", "device": "cpu", "dtype": "float32", "zero_dim": False, "changed": False}
LR = {"kind": "number", "changed": True, "values": ["0.0003", "3e-05"]}


def write_facts(root: Path, program: str, values: dict[str, dict], path: Path | None = None) -> Path:
    """A facts file for train.py as it is now: `values` by function qualified name."""
    hashes = run_facts.function_hashes(program)
    functions = {name: {"source_hash": next(iter(hashes[name])), "values": v} for name, v in values.items()}
    target = path or root / ".graphsafe" / "facts.json"
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(json.dumps({"version": 1, "root": "..", "files": {"train.py": {"functions": functions}}}))
    return target


FACTS = {"train_step": {"sched": TENSOR, "lr": LR}, "apply_update": {"lr": LR}}


@pytest.fixture
def project(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    program = textwrap.dedent(PROGRAM).lstrip()
    (tmp_path / "train.py").write_text(program)
    return tmp_path


def found(root: Path, **settings) -> set[tuple[str, str, str]]:
    """(code, source line, note) of each diagnostic."""
    result = check_paths([root], Settings(root=root, **settings), use_cache=False)
    lines = (root / "train.py").read_text().splitlines()
    return {(d.code, lines[d.start.line - 1].strip(), d.message.rpartition("(observed at run time: ")[2].rstrip(")"))
            for d in result.diagnostics}


def test_without_facts_the_unannotated_parameters_stay_unknown(project):
    assert found(project) == set()


def test_facts_make_a_tensor_parameter_branch_and_a_changing_number_per_step(project):
    write_facts(project, (project / "train.py").read_text(), FACTS)
    assert found(project) == {
        ("GS201", "if sched[i + 1] > 0:", "`sched` is a tensor"),
        ("GS301", "w.sub_(grad * lr)", "lr changed 0.0003 → 3e-05"),
    }


def test_an_edited_function_loses_its_facts_and_the_others_keep_theirs(project):
    write_facts(project, (project / "train.py").read_text(), FACTS)
    program = (project / "train.py").read_text().replace("loss * 2", "loss * 3")  # train_step edited
    (project / "train.py").write_text(program)
    assert found(project) == {("GS301", "w.sub_(grad * lr)", "lr changed 0.0003 → 3e-05")}


def test_edits_elsewhere_that_move_a_function_keep_its_facts(project):
    write_facts(project, (project / "train.py").read_text(), FACTS)
    program = (project / "train.py").read_text().replace("import torch\n", "import torch\nimport os\n\n\nX = 1\n")
    (project / "train.py").write_text(program)
    assert {code for code, _, _ in found(project)} == {"GS201", "GS301"}


@pytest.mark.parametrize("content, said", [
    ("{not json", "is not valid JSON"),
    (json.dumps({"version": 99, "files": {}}), "has version 99, this graphsafe reads version 1"),
    (json.dumps({"files": {}}), "has no version"),
    (json.dumps({"version": 1, "files": {"train.py": {"functions": {"f": {"values": {}}}}}}), "is malformed"),
])
def test_a_bad_facts_file_is_one_warning_and_the_result_without_facts(project, capsys, content, said):
    (project / ".graphsafe").mkdir()
    (project / ".graphsafe" / "facts.json").write_text(content)
    assert found(project) == set()
    assert found(project) == set()  # analysed again: the warning is not repeated
    err = capsys.readouterr().err
    assert err.count("graphsafe: warning:") == 1
    assert said in err and "analysing without run-time facts" in err


def test_a_missing_facts_file_named_explicitly_is_a_warning(project, capsys):
    assert found(project, facts_file=project / "nowhere.json") == set()
    assert "cannot read facts file" in capsys.readouterr().err


def test_a_new_facts_file_changes_the_result_with_the_cache_on(project):
    settings = Settings(root=project)
    cache_dir = project / "cache"
    assert check_paths([project], settings, cache_dir=cache_dir).diagnostics == []
    write_facts(project, (project / "train.py").read_text(), FACTS)
    again = check_paths([project], settings, cache_dir=cache_dir)
    assert sorted(d.code for d in again.diagnostics) == ["GS201", "GS301"]


def test_an_editor_buffer_uses_the_facts_of_its_project(project):
    text = (project / "train.py").read_text()
    write_facts(project, text, FACTS)
    result = check_source(text, str(project / "train.py"), Settings(root=project))
    assert sorted(d.code for d in result.diagnostics) == ["GS201", "GS301"]
    edited = text.replace("loss * 2", "loss * 3")
    result = check_source(edited, str(project / "train.py"), Settings(root=project))
    assert sorted(d.code for d in result.diagnostics) == ["GS301"]


def test_a_changing_attribute_read_in_a_region_is_per_step(project):
    program = textwrap.dedent('''
        import torch


        class Trainer:
            def __init__(self, cfg):
                self.lr = cfg.lr

            def step(self, w: torch.Tensor, g: torch.Tensor):  # graphsafe: region
                w.sub_(g * self.lr)
    ''').lstrip()
    (project / "train.py").write_text(program)
    assert found(project) == set()
    write_facts(project, program, {"Trainer.step": {"self.lr": LR}})
    assert found(project) == {("GS301", "w.sub_(g * self.lr)", "self.lr changed 0.0003 → 3e-05")}


def test_function_hashes_tell_two_definitions_of_one_name_apart():
    program = "if X:\n    def f():\n        return 1\nelse:\n    def f():\n        return 2\n"
    assert len(run_facts.function_hashes(program)["f"]) == 2


def test_fix_offers_the_branch_rewrite_that_run_time_facts_made_certain(project, capsys):
    from graphsafe.cli import main

    assert main(["fix", "--diff", "--unsafe-fixes", "--no-cache", "."]) == 0
    assert "torch.where" not in capsys.readouterr().out
    write_facts(project, (project / "train.py").read_text(), FACTS)
    main(["fix", "--diff", "--unsafe-fixes", "--no-cache", "."])
    assert "+    loss = torch.where(sched[i + 1] > 0, loss * 2, loss)" in capsys.readouterr().out


def test_a_constant_index_into_an_observed_tensor_parameter_is_a_tensor(project):
    program = "import torch\n\n\ndef step(x, sched):  # graphsafe: region\n    if sched[0] > 0:\n        return x * 2\n    return x\n"
    (project / "train.py").write_text(program)
    write_facts(project, program, {"step": {"sched": TENSOR}})
    assert found(project) == {("GS201", "if sched[0] > 0:", "`sched` is a tensor")}


def test_facts_traced_in_another_checkout_of_the_same_code_are_used(tmp_path):
    """A facts file written for one tree (CI's clone) applies to another copy of the same files
    (the editor's clone): paths match by their ending, functions by their source."""
    import json
    import shutil

    from graphsafe.analyzer.run_facts import load

    first, second = tmp_path / "ci" / "proj", tmp_path / "home" / "proj"
    (first / "pkg").mkdir(parents=True)
    source = "def step(sched, i):\n    return sched[i] > 0\n"
    (first / "pkg" / "m.py").write_text(source)
    shutil.copytree(first, second)
    from graphsafe.analyzer.run_facts import function_hashes

    digest = sorted(function_hashes(source)["step"])[0]
    facts = first / ".graphsafe" / "facts.json"
    facts.parent.mkdir()
    facts.write_text(json.dumps({"version": 1, "root": "..", "files": {"pkg/m.py": {"functions": {
        "step": {"line": 1, "source_hash": digest, "values": {"sched": {"kind": "tensor", "changed": False}}}}}}}))
    loaded = load(facts)
    assert loaded.for_file(str(second / "pkg" / "m.py"), "pkg.m", source)
    assert not loaded.for_file(str(second / "pkg" / "m.py"), "pkg.m", source.replace("> 0", "> 1"))
