"""`graphsafe trace` on small programs written to tmp_path: regions by decorator, comment,
pattern and --all; callables with a factory; formats; exit codes; no tracebacks."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch

import graphsafe
from graphsafe.runtime.trace_cli import add_trace_arguments, main, run_trace

pytestmark = pytest.mark.usefixtures("cpu_only_tracer")

REPO = Path(__file__).resolve().parents[2]


def write(tmp_path: Path, name: str, source: str) -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(source).lstrip())
    return path


def line_with(path: Path, text: str) -> int:
    lines = path.read_text().splitlines()
    matches = [i for i, line in enumerate(lines, 1) if text in line]
    assert len(matches) == 1, (text, matches)
    return matches[0]


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    return code, out, err


@pytest.fixture(autouse=True)
def _keep_cwd(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", list(sys.path))


TRAIN = """
import sys
import torch
import graphsafe


@graphsafe.region
def train_step(model, x, lr):
    loss = model(x).square().mean()
    print("loss", loss.item())
    return loss


def eval_step(model, x):  # graphsafe: region
    y = model(x)
    if y.mean() > 100:
        y = -y
    return y


def clean_step(model, x):
    return torch.where(x > 0, model(x), 0.0)


def main():
    torch.manual_seed(0)
    model = torch.nn.Linear(4, 4)
    x = torch.zeros(2, 4)
    for step in range(4):
        x.copy_(torch.randn(2, 4))
        train_step(model, x, lr=0.1 / (step + 1))
        eval_step(model, x)
        clean_step(model, x)
    print("script args", sys.argv[1:])


if __name__ == "__main__":
    main()
"""


def test_script_regions_by_decorator_and_comment(tmp_path, capsys):
    script = write(tmp_path, "train.py", TRAIN)
    code, out, err = run(capsys, str(script), "--steps", "3", "--", "--epochs", "1")
    assert code == 1
    assert "script args ['--epochs', '1']" in out  # the script ran unmodified, with its argv
    findings = [line for line in out.splitlines() if ": GS" in line]
    assert findings == [
        f"train.py:{line_with(script, 'def train_step')}:1: GS301 a Python scalar changes between steps: replay "
        "keeps the value seen at capture — lr: 0.1 → 0.05 (2 hits)",
        f"train.py:{line_with(script, 'loss.item()')}:19: GS101 `.item()` copies a tensor value to the host and "
        "waits for the device — Tensor.item (3 hits)",
        f"train.py:{line_with(script, 'if y.mean()')}:8: GS201 a Python branch on a tensor value (`if`/`while`/"
        "`and`/`not`): a device sync, and replay always takes the branch taken at capture — "
        "Tensor.__bool__ (3 hits)",
    ]
    assert "Found 3 hazards in 6 traced calls of train_step, eval_step" in out
    assert "clean_step" not in out  # not a region
    assert graphsafe.region.__module__ == "graphsafe" and sys.getprofile() is None


def test_region_patterns_for_methods_and_nested_functions(tmp_path, capsys):
    script = write(tmp_path, "loop.py", """
        import torch

        class Trainer:
            def __init__(self):
                self.model = torch.nn.Linear(2, 2)

            def step(self, x):
                return self.model(x).sum().tolist()

        def outer():
            def inner(x):
                return torch.nonzero(x)
            trainer, x = Trainer(), torch.ones(1, 2)
            for _ in range(2):
                inner(x[0])
                trainer.step(x)

        outer()
    """)
    code, out, _ = run(capsys, str(script), "--region", "Trainer.step")
    assert code == 1
    assert [line.split(": ")[1].split()[0] for line in out.splitlines() if ": GS" in line] == ["GS102"]

    code, out, _ = run(capsys, str(script), "--region", "outer.inner", "--region", "loop.py::Trainer.st*")
    assert code == 1
    assert {line.split()[1] for line in out.splitlines() if ": GS" in line} == {"GS102", "GS107"}


def test_all_traces_functions_of_the_script_directory(tmp_path, capsys):
    write(tmp_path, "helpers.py", """
        def read(t):
            return t.max().item()
    """)
    script = write(tmp_path, "main.py", """
        import torch
        from helpers import read

        def step(t):
            return read(t * 2)

        x = torch.ones(3)
        for _ in range(2):
            step(x)  # read() gets a fresh tensor each time: fine, it runs inside step's trace
    """)
    code, out, _ = run(capsys, str(script), "--all", "--format", "json")
    assert code == 1
    (finding,) = json.loads(out)
    assert finding["code"] == "GS101" and finding["filename"].endswith("helpers.py")
    assert [frame["function"] for frame in finding["stack"]] == ["step", "read"]


def test_json_output_is_clean_json_with_the_scripts_prints_on_stderr(tmp_path, capsys):
    script = write(tmp_path, "train.py", TRAIN)
    code, out, err = run(capsys, str(script), "--format", "json")
    assert code == 1
    findings = json.loads(out)
    assert {f["code"] for f in findings} == {"GS101", "GS201", "GS301"}
    assert all({"code", "message", "filename", "location", "hits", "stack", "function"} <= set(f) for f in findings)
    assert "loss" in err and "loss" not in out


def test_clean_region_exits_0(tmp_path, capsys):
    script = write(tmp_path, "ok.py", """
        import torch
        import graphsafe

        @graphsafe.region
        def step(x, out):
            out.copy_(torch.where(x > 0, x, 0.0))
            return out

        x, out = torch.randn(3), torch.zeros(3)
        for _ in range(3):
            step(x, out)
    """)
    code, out, _ = run(capsys, str(script))
    assert code == 0
    assert out.startswith("No hazards found in 3 traced calls of step")


def test_steps_limits_traced_calls_per_region(tmp_path, capsys):
    script = write(tmp_path, "many.py", """
        import torch

        def step(x):  # graphsafe: region
            return x.sum().item()

        for _ in range(20):
            step(torch.ones(2))
    """)
    code, out, _ = run(capsys, str(script), "--steps", "4")
    assert code == 1
    assert "(4 hits)" in out and "4 traced calls of step" in out


def test_no_region_called_is_a_usage_error(tmp_path, capsys):
    script = write(tmp_path, "plain.py", "import torch\nprint(torch.ones(1).item())\n")
    code, _, err = run(capsys, str(script))
    assert code == 2
    assert "no region was called" in err


def test_script_that_raises_reports_what_was_seen_and_exits_2(tmp_path, capsys):
    script = write(tmp_path, "boom.py", """
        import torch

        def step(x):  # graphsafe: region
            value = x.sum().item()
            raise RuntimeError("diverged")

        step(torch.ones(2))
    """)
    code, out, err = run(capsys, str(script))
    assert code == 2
    assert "GS101" in out
    assert f"RuntimeError: diverged (at boom.py:{line_with(script, 'raise RuntimeError')})" in err
    assert sys.getprofile() is None
    assert not torch._C._is_torch_function_mode_enabled() and torch._C._len_torch_dispatch_stack() == 0


def test_script_exit_status_is_a_note_not_an_error(tmp_path, capsys):
    script = write(tmp_path, "exits.py", """
        import sys
        import torch

        def step(x):  # graphsafe: region
            return x.tolist()

        step(torch.ones(2))
        sys.exit(3)
    """)
    code, out, err = run(capsys, str(script))
    assert code == 1 and "GS102" in out
    assert "exited with status 3" in err


FACTORY_MODULE = """
import torch

def step(x, scale):
    return (x * scale).sum().item()

def make_inputs():
    return (torch.ones(3), 2.0), {}

def make_step_inputs(step):
    return (torch.ones(3), 1.0 + step)

def bad_factory():
    raise KeyError("missing data")
"""


def test_callable_with_a_factory(tmp_path, capsys):
    write(tmp_path, "steps_mod.py", FACTORY_MODULE)
    code, out, _ = run(capsys, "steps_mod:step", "--args", "steps_mod:make_inputs", "--steps", "2")
    assert code == 1
    assert "GS101" in out and "GS301" not in out and "2 traced calls of step" in out

    # a factory taking `step` makes fresh inputs every step: drift shows
    code, out, _ = run(capsys, "steps_mod.py:step", "--args", "steps_mod.py:make_step_inputs", "--format", "json")
    assert code == 1
    assert {f["code"] for f in json.loads(out)} == {"GS101", "GS301", "GS401"}


def test_callable_without_findings_exits_0(tmp_path, capsys):
    write(tmp_path, "pure.py", "import torch\ndef step():\n    return torch.ones(2) * 2\n")
    code, out, _ = run(capsys, "pure:step")
    assert code == 0 and out.startswith("No hazards found in 3 traced calls")


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["missing.py"], "no such script: missing.py"),
        (["notatarget"], "give a script (path/to/script.py) or module:function"),
        (["nosuchmodule_xyz:f"], "cannot import 'nosuchmodule_xyz': ModuleNotFoundError"),
        (["steps_mod:nothing"], "'steps_mod' has no 'nothing'"),
        (["steps_mod:step", "--args", "steps_mod"], "expected module:factory"),
        (["steps_mod:step", "--region", "x"], "--region and --all select functions in a script"),
        (["steps_mod:step", "--steps", "0"], "--steps must be at least 1"),
        (["train.py", "--args", "steps_mod:make_inputs"], "--args is for a module:function target"),
    ],
)
def test_usage_errors_exit_2_with_a_message(tmp_path, capsys, argv, message):
    write(tmp_path, "steps_mod.py", FACTORY_MODULE)
    write(tmp_path, "train.py", TRAIN)
    code, out, err = run(capsys, *argv)
    assert code == 2
    assert message in err, err


def test_factory_errors_are_reported_without_traceback(tmp_path, capsys):
    write(tmp_path, "steps_mod.py", FACTORY_MODULE)
    code, _, err = run(capsys, "steps_mod:step", "--args", "steps_mod:bad_factory")
    assert code == 2
    assert "KeyError: 'missing data'" in err


def test_unknown_option_after_the_target_is_an_argparse_error(tmp_path, capsys):
    write(tmp_path, "train.py", TRAIN)
    with pytest.raises(SystemExit) as exit_info:
        main(["train.py", "--bogus"])
    assert exit_info.value.code == 2
    assert "put the script's own arguments after `--`" in capsys.readouterr().err


def test_options_before_and_after_the_target_combine():
    parser = argparse.ArgumentParser()
    add_trace_arguments(parser)
    args = parser.parse_args(["--region", "a", "s.py", "--region", "b", "--steps", "2", "--", "--region", "c"])
    assert (args.target, args.region, args.steps, args.script_args) == ("s.py", ["a", "b"], 2, ["--region", "c"])
    args = parser.parse_args(["s.py"])
    assert (args.region, args.all, args.steps, args.format, args.script_args) == ([], False, None, "text", [])


def test_run_trace_takes_parsed_arguments(tmp_path, capsys):
    script = write(tmp_path, "train.py", TRAIN)
    parser = argparse.ArgumentParser()
    add_trace_arguments(parser)
    assert run_trace(parser.parse_args([str(script), "--steps", "1"])) == 1
    assert "GS101" in capsys.readouterr().out


def test_graphsafe_trace_subcommand(tmp_path, capsys):
    from graphsafe.cli import main as graphsafe_main

    script = write(tmp_path, "train.py", TRAIN)
    assert graphsafe_main(["trace", str(script), "--steps", "2", "--format", "json"]) == 1
    assert {f["code"] for f in json.loads(capsys.readouterr().out)} == {"GS101", "GS201", "GS301"}


def test_module_entry_point_runs_in_a_fresh_process(tmp_path):
    script = write(tmp_path, "train.py", TRAIN)
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    result = subprocess.run(
        [sys.executable, "-m", "graphsafe.runtime.trace_cli", str(script), "--format", "json"],
        capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120,
    )
    assert result.returncode == 1, result.stderr
    assert "Traceback" not in result.stderr
    assert {f["code"] for f in json.loads(result.stdout)} == {"GS101", "GS201", "GS301"}

    result = subprocess.run(
        [sys.executable, "-m", "graphsafe.runtime.trace_cli", "nope.py"],
        capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120,
    )
    assert result.returncode == 2 and "Traceback" not in result.stderr and "no such script" in result.stderr


def test_importing_the_cli_module_does_not_import_torch():
    code = "import sys, graphsafe.runtime.trace_cli; print('torch' in sys.modules)"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            env={**os.environ, "PYTHONPATH": str(REPO)}, timeout=60)
    assert result.stdout.strip() == "False", result.stderr
