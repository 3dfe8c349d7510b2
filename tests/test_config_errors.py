"""A configuration that cannot be what the user meant fails loudly: one line, exit 2, no traceback;
ALL in --select/--ignore (and the config) means every rule, as in ruff."""

from __future__ import annotations

import json
import textwrap

import pytest

from tests.helpers import run_cli as run

HAZARD = textwrap.dedent("""\
    import torch

    def step(x: torch.Tensor):  # graphsafe: region
        torch.cuda.synchronize()
        return x.item()
""")


@pytest.fixture
def tree(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "step.py").write_text(HAZARD)
    return tmp_path


BROKEN = {
    "invalid_toml": (b"[tool.graphsafe\nselect = ['GS1']\n", "invalid TOML: Expected ']'"),
    "nul_byte": (b"[tool.graphsafe]\nselect = ['GS1']\x00\n", "invalid TOML"),
    "not_utf8": (b"[tool.graphsafe]\nselect = ['GS1\xff']\n", "not UTF-8 text: byte 0xff at line 2, column 15"),
    "tool_not_a_table": (b"tool = 3\n", "[tool] must be a table"),
    "select_a_string": (b"[tool.graphsafe]\nselect = 'GS1'\n", "[tool.graphsafe] select must be a list of strings, not a string"),
    "exclude_a_number": (b"[tool.graphsafe]\nexclude = 3\n", "exclude must be a list of strings, not an integer"),
    "unknown_select_code": (b"[tool.graphsafe]\nselect = ['GS1', 'XYZ']\n", "[tool.graphsafe] select: unknown rule code or prefix: XYZ"),
    "unknown_ignore_code": (b"[tool.graphsafe]\nignore = ['GS55']\n", "[tool.graphsafe] ignore: unknown rule code or prefix: GS55"),
    "unknown_per_file_code": (b"[tool.graphsafe]\nper-file-ignores = { 'a/*.py' = ['GS1O1'] }\n",
                              "[tool.graphsafe] per-file-ignores.a/*.py: unknown rule code or prefix: GS1O1"),
    "per_file_codes_a_string": (b"[tool.graphsafe]\nper-file-ignores = { 'a/*.py' = 'GS1' }\n",
                                "per-file-ignores.a/*.py must be a list of strings, not a string"),
    "jobs_is_no_setting": (b"[tool.graphsafe]\njobs = 'x'\n", "unknown [tool.graphsafe] key(s): jobs"),
    "respect_gitignore_a_string": (b"[tool.graphsafe]\nrespect-gitignore = 'no'\n",
                                   "respect-gitignore must be true or false, not a string"),
}


@pytest.mark.parametrize("case", sorted(BROKEN))
@pytest.mark.parametrize("command", ["check", "fix"])
def test_a_broken_config_is_one_error_line_and_exit_2(case, command, tree, capsys):
    content, what = BROKEN[case]
    (tree / "pyproject.toml").write_bytes(content)
    code, out, err = run(capsys, command, "step.py", "--no-cache")
    assert code == 2 and out == ""
    assert err.startswith(f"graphsafe: error: {tree / 'pyproject.toml'}: ") and what in err, err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert (tree / "step.py").read_text() == HAZARD  # fix changed nothing


def test_a_broken_pyproject_above_the_checked_folder_is_an_error_not_skipped(tree, capsys):
    (tree / "pyproject.toml").write_text("[tool.graphsafe\nignore = ['GS1']\n")
    (tree / "src").mkdir()
    (tree / "step.py").rename(tree / "src" / "step.py")
    code, _, err = run(capsys, "check", "src", "--no-cache")
    assert code == 2 and "invalid TOML" in err


def test_ignore_all_ignores_every_rule(tree, capsys):
    code, out, _ = run(capsys, "check", "step.py", "--no-cache", "--ignore", "ALL")
    assert code == 0 and "All checks passed!" in out
    (tree / "pyproject.toml").write_text("[tool.graphsafe]\nignore = ['all']\n")
    code, out, _ = run(capsys, "check", "step.py", "--no-cache")
    assert code == 0 and "All checks passed!" in out


def test_ignore_all_still_says_which_files_could_not_be_analysed(tree, capsys):
    (tree / "broken.py").write_text("def f(:\n")
    code, out, _ = run(capsys, "check", ".", "--no-cache", "--ignore", "ALL", "--format", "json")
    assert code == 1 and [(d["filename"], d["code"]) for d in json.loads(out)] == [("broken.py", "GS000")]


def test_select_all_selects_every_rule_and_ignore_narrows_it(tree, capsys):
    _, out, _ = run(capsys, "check", "step.py", "--no-cache", "--select", "ALL", "--format", "json")
    assert sorted(d["code"] for d in json.loads(out)) == ["GS101", "GS106"]
    _, out, _ = run(capsys, "check", "step.py", "--no-cache", "--select", "all", "--ignore", "GS106", "--format", "json")
    assert [d["code"] for d in json.loads(out)] == ["GS101"]


def test_per_file_ignores_all_ignores_every_rule_in_those_files(tree, capsys):
    (tree / "pyproject.toml").write_text("[tool.graphsafe]\nper-file-ignores = { 'step.py' = ['ALL'] }\n")
    (tree / "other.py").write_text(HAZARD)
    _, out, _ = run(capsys, "check", ".", "--no-cache", "--format", "json")
    assert {d["filename"] for d in json.loads(out)} == {"other.py"}


@pytest.mark.parametrize("command", ["check", "fix"])
def test_jobs_below_one_is_a_usage_error(command, tree, capsys):
    code, out, err = run(capsys, command, "step.py", "--no-cache", "--jobs", "0")
    assert code == 2 and out == "" and err == "graphsafe: error: --jobs must be at least 1\n"


def test_unknown_codes_on_the_command_line_are_all_named(tree, capsys):
    code, _, err = run(capsys, "fix", "step.py", "--select", "GS1,XX", "--ignore", "YY")
    assert code == 2 and "unknown rule code or prefix: XX, YY" in err
