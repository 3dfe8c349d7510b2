"""A newcomer's first run: no silent "All checks passed!" when nothing is reachable, and no
silent pass for a `--region` typo or unknown codes in the config."""

from __future__ import annotations

import textwrap

import pytest

from graphsafe.cli import EXIT_NO_REGION
from tests.helpers import run_cli as run

TRAIN = textwrap.dedent("""\
    import torch

    def train_step(model, opt, x, lr):
        loss = model(x).sum()
        loss.backward()
        for group in opt.param_groups:
            group["lr"] = lr
        opt.step()
        if loss > 10:
            print(loss.item())
        return loss
""")


@pytest.fixture
def tree(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "train.py").write_text(TRAIN)
    return tmp_path


def test_a_file_with_hazards_and_no_region_says_nothing_was_checked(tree, capsys):
    code, out, err = run(capsys, "check", "train.py", "--no-cache")
    assert code == EXIT_NO_REGION
    assert "All checks passed" not in out and "No capture region found" in out
    assert "# graphsafe: region" in err and "--region" in err
    assert "train.py::train_step (line 3)" in err  # the step it looks like


def test_the_same_file_with_its_region_named_reports_the_hazards(tree, capsys):
    code, out, _ = run(capsys, "check", "train.py", "--no-cache", "--region", "train_step")
    assert code == 1 and "GS101" in out and "GS201" in out


def test_a_region_pattern_that_matches_nothing_is_an_error_with_the_closest_names(tree, capsys):
    code, _, err = run(capsys, "check", "train.py", "--no-cache", "--region", "train_stpe")
    assert code == 2 and "matches no function" in err and "train_step" in err


def test_an_audit_of_every_function_is_never_an_unmatched_pattern(tree, capsys):
    code, out, _ = run(capsys, "check", "train.py", "--no-cache", "--region", "*")
    assert code == 1 and "GS101" in out


def test_show_regions_says_when_there_are_none(tree, capsys):
    _, out, _ = run(capsys, "check", "train.py", "--no-cache", "--show-regions", "--exit-zero")
    assert out.startswith("no capture regions found\n")


def test_json_output_stays_json_and_the_notice_goes_to_stderr(tree, capsys):
    code, out, err = run(capsys, "check", "train.py", "--no-cache", "--format", "json")
    assert code == EXIT_NO_REGION and out.strip() == "[]" and "no capture region found" in err


def test_exit_zero_keeps_the_notice_but_exits_zero(tree, capsys):
    code, _, err = run(capsys, "check", "train.py", "--no-cache", "--exit-zero")
    assert code == 0 and "no capture region found" in err


def test_unknown_codes_in_the_config_are_an_error_like_on_the_command_line(tree, capsys):
    (tree / "pyproject.toml").write_text('[tool.graphsafe]\nselect = ["XYZ"]\n')
    code, _, err = run(capsys, "check", "train.py", "--no-cache", "--region", "train_step")
    assert code == 2 and "select" in err and "XYZ" in err


def test_a_config_region_that_matches_nothing_is_an_error_when_the_whole_project_is_checked(tree, capsys):
    (tree / "pyproject.toml").write_text('[tool.graphsafe]\nregions = ["Trainer.stepp"]\n')
    code, _, err = run(capsys, "check", ".", "--no-cache")
    assert code == 2 and "Trainer.stepp" in err and "matches no function" in err


SCRIPT = textwrap.dedent("""\
    import torch

    model = torch.nn.Linear(4, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for it in range(100):
        loss = model(torch.randn(8, 4)).sum()
        loss.backward()
        opt.step()
        print(it, loss.item())
""")


def test_a_script_without_functions_gets_its_training_loop_named_and_the_marked_loop_is_checked(tmp_path, capsys,
                                                                                              monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "script.py").write_text(SCRIPT)
    code, _, err = run(capsys, "check", "script.py", "--no-cache")
    assert code == EXIT_NO_REGION and "Loops that run a training step: script.py:5 `for it in range(100):`" in err
    (tmp_path / "script.py").write_text(SCRIPT.replace("range(100):", "range(100):  # graphsafe: region"))
    code, out, _ = run(capsys, "check", "script.py", "--no-cache")
    assert code == 1 and "GS101" in out and "GS501" in out
