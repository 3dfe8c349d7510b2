"""`graphsafe capture` and its subprocess protocol on the CPU: the trial runs in a fresh worker
(here on the simulated backend); the parent only reads a JSON result. A worker that crashes,
hangs or answers nonsense gives a clean report, never a traceback."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from graphsafe.runtime.capture_cli import (
    TrialUsageError,
    add_capture_arguments,
    main,
    run_trial_subprocess,
)
from graphsafe.runtime.capture_report import CaptureReport

pytestmark = pytest.mark.slow  # each trial runs in a fresh process that imports torch

REPO = Path(__file__).resolve().parents[2]

FACTORIES = '''
import os
import time
import torch


def clean():
    torch.manual_seed(0)
    model = torch.nn.Linear(4, 2)
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    x = torch.randn(3, 4)

    def train_step(x):
        opt.zero_grad()
        loss = model(x).square().mean()
        loss.backward()
        opt.step()
        return loss

    return train_step, (x,)


CALLS = []


def pageable():
    def step(x):
        CALLS.append(1)
        if len(CALLS) > 3:  # the first call after warm-up stands for the capture
            raise RuntimeError("Cannot copy between CPU and CUDA tensors during CUDA graph capture unless the CPU "
                               "tensor is pinned. Please use tensor.pin_memory() or allocate the tensor with "
                               "pin_memory=True.")
        return x * 2
    return {"step": step, "args": (torch.ones(2),)}


def boom():
    raise ValueError("boom")


def aborts():
    def step(x):
        print("about to die", flush=True)
        os.abort()
    return step, (torch.ones(1),)


def segfaults():
    def step(x):
        import ctypes
        ctypes.string_at(0)
    return step, (torch.ones(1),)


def hangs():
    def step(x):
        time.sleep(60)
    return step, (torch.ones(1),)


def not_a_target():
    return 42
'''


@pytest.fixture
def project(tmp_path, monkeypatch):
    (tmp_path / "factories.py").write_text(textwrap.dedent(FACTORIES))
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("GRAPHSAFE_CAPTURE_BACKEND", "simulated")
    monkeypatch.delenv("GRAPHSAFE_DEBUG", raising=False)
    return tmp_path


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(["--repeats", "2", "--inner", "2", *argv])
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    return code, out, err


def line_of(path: Path, text: str) -> int:
    return next(i for i, line in enumerate(path.read_text().splitlines(), 1) if text in line)


def test_clean_step_text(project, capsys):
    code, out, err = run(capsys, "factories:clean")
    assert code == 0, out + err
    assert "graphsafe capture: clean.train_step (mode graph)" in out
    assert "replay matches eager over 5 steps, bitwise" in out


def test_clean_step_json_and_file_target(project, capsys):
    code, out, _ = run(capsys, "factories.py:clean", "--format", "json", "--replays", "2", "--bitwise")
    data = json.loads(out)
    assert code == 0
    assert data["status"] == "ok" and data["replays"] == 2 and data["tolerance"] == {"rtol": 0.0, "atol": 0.0}
    assert CaptureReport.from_json(data).match


def test_capture_failure_names_rule_and_line(project, capsys):
    code, out, _ = run(capsys, "factories:pageable")
    line = line_of(project / "factories.py", 'raise RuntimeError("Cannot copy')
    assert code == 1
    assert "capture FAILED (capture): pageable host copy during capture" in out
    assert f"factories.py:{line}: GS402 [host-data-tensor]" in out
    code, out, _ = run(capsys, "factories:pageable", "--format", "json")
    data = json.loads(out)
    assert data["failure"]["code"] == "GS402" and data["failure"]["line"] == line
    assert data["failure"]["file"].endswith("factories.py")


def test_factory_error_is_a_usage_error(project, capsys):
    code, out, err = run(capsys, "factories:boom")
    assert code == 2 and out == ""
    line = line_of(project / "factories.py", 'raise ValueError("boom")')
    assert f"the factory factories:boom raised ValueError: boom (at {project / 'factories.py'}:{line})" in err


@pytest.mark.parametrize("target, message", [
    ("factories", "expected MODULE:FACTORY"),
    ("factories:nope", "has no attribute 'nope'"),
    ("no_such_module:make", "cannot import 'no_such_module'"),
    ("missing.py:make", "no such file: missing.py"),
    ("factories:not_a_target", "a factory must return"),
])
def test_bad_targets(project, capsys, target, message):
    code, out, err = run(capsys, target)
    assert code == 2 and out == ""
    assert message in err and err.startswith("graphsafe capture: error:")


def test_bad_options(project, capsys):
    for argv, message in ((["--replays", "0"], "--replays must be at least 1"),
                          (["--timeout", "0"], "--timeout must be positive"),
                          (["--bitwise", "--atol", "1"], "--bitwise and --atol exclude each other")):
        code, _, err = run(capsys, "factories:clean", *argv)
        assert code == 2 and message in err


@pytest.mark.parametrize("target, how", [("factories:aborts", "was killed by SIGABRT"),
                                         ("factories:segfaults", "was killed by SIGSEGV")])
def test_crashing_worker_gives_a_clean_report(project, capsys, target, how):
    code, out, err = run(capsys, target)
    assert code == 2
    assert "the trial process CRASHED (worker): trial process crashed" in out
    assert how in out
    if "aborts" in target:
        assert "about to die" in out  # the worker's last output is shown
    code, out, _ = run(capsys, target, "--format", "json")
    data = json.loads(out)
    assert data["status"] == "crashed" and data["failure"]["phase"] == "worker"


def test_hanging_worker_is_stopped(project, capsys):
    code, out, _ = run(capsys, "factories:hangs", "--timeout", "8", "--format", "json")
    data = json.loads(out)
    assert code == 2 and data["status"] == "timeout"
    assert "did not finish in 8 s" in data["failure"]["cause"]


# --- the protocol itself, with stand-in workers -----------------------------------------------------

FAKE_WORKER = '''
import json, sys
request = json.load(open(sys.argv[1]))
print("user output on stdout")
report = {"target": request["target"], "mode": request["mode"], "status": "ok", "replays": 1,
          "comparisons": [{"name": "output", "kind": "output", "ok": True, "bitwise": True,
                           "max_abs": 0.0, "max_rel": 0.0, "note": None, "code": None}],
          "timings": {"eager_ms": 2.0, "replay_ms": 0.5, "floor_ms": 0.4, "capture_s": 0.01},
          "memory": {"reserved_bytes": 2097152, "active_bytes": 1048576, "segments": 1, "source": "test"}}
json.dump({"protocol": 1, "report": report}, open(sys.argv[2], "w"))
'''

GARBAGE_WORKER = '''
import sys
open(sys.argv[2], "w").write("{not json")
print("half a result")
'''

INTERNAL_WORKER = '''
import json, sys
json.dump({"protocol": 1, "error": {"kind": "internal", "message": "KeyError: 'x'", "traceback": "Traceback ..."}},
          open(sys.argv[2], "w"))
'''


def fake(tmp_path: Path, name: str, source: str) -> dict[str, str]:
    (tmp_path / f"{name}.py").write_text(source)
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(tmp_path), env.get("PYTHONPATH", "")])
    return env


def test_protocol_reads_the_json_a_worker_writes(tmp_path):
    env = fake(tmp_path, "fake_worker", FAKE_WORKER)
    report = run_trial_subprocess({"target": "m:f", "mode": "graph"}, env=env, worker_module="fake_worker")
    assert report.status == "ok" and report.match
    assert report.timings.speedup == 4.0 and report.memory.reserved_bytes == 2 * 2**20
    assert "graph pool 2.0 MiB reserved, 1.0 MiB in use" in report.to_text()


def test_protocol_garbage_result_is_a_crash_report(tmp_path):
    env = fake(tmp_path, "garbage_worker", GARBAGE_WORKER)
    report = run_trial_subprocess({"target": "m:f", "mode": "graph"}, env=env, worker_module="garbage_worker")
    assert report.status == "crashed"
    assert "exited with status 0" in report.failure.cause
    assert "half a result" in report.output_tail


def test_protocol_internal_error(tmp_path):
    env = fake(tmp_path, "internal_worker", INTERNAL_WORKER)
    report = run_trial_subprocess({"target": "m:f", "mode": "graph"}, env=env, worker_module="internal_worker")
    assert report.status == "crashed" and "KeyError: 'x'" in report.failure.cause


def test_usage_errors_raise(project):
    with pytest.raises(TrialUsageError, match="has no attribute"):
        run_trial_subprocess({"target": "factories:nope", "mode": "graph"})


def test_add_capture_arguments_defaults():
    parser = argparse.ArgumentParser()
    add_capture_arguments(parser)
    args = parser.parse_args(["pkg.mod:make"])
    assert (args.target, args.mode, args.format, args.warmup, args.replays) == ("pkg.mod:make", "graph", "text", None, 5)
    assert parser.parse_args(["a:b", "--mode", "compile"]).mode == "compile"
    with pytest.raises(SystemExit):
        parser.parse_args(["a:b", "--mode", "cudagraph"])


def test_the_cli_side_never_imports_torch():
    code = ("import sys, argparse\n"
            "from graphsafe.runtime.capture_cli import add_capture_arguments, run_capture\n"
            "import graphsafe.runtime.capture_report, graphsafe.runtime.classify\n"
            "add_capture_arguments(argparse.ArgumentParser())\n"
            "print('torch' in sys.modules, 'libcst' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO,
                         env={**os.environ, "PYTHONPATH": str(REPO)}, check=True).stdout
    assert out.strip() == "False False"


def test_arguments_fit_under_the_graphsafe_command():
    """cli.py adds `capture` as a subcommand whose parser keeps the subcommand in `command`."""
    parser = argparse.ArgumentParser(prog="graphsafe")
    sub = parser.add_subparsers(dest="command")
    add_capture_arguments(sub.add_parser("capture"))
    args = parser.parse_args(["capture", "pkg.mod:make", "--format", "json", "--mode", "graphed_callables"])
    assert (args.command, args.target, args.format, args.mode) == ("capture", "pkg.mod:make", "json",
                                                                   "graphed_callables")
