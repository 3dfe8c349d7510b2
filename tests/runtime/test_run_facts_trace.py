"""`graphsafe trace --save-facts` then `graphsafe check`: what a run saw settles what static
inference left Unknown (an unannotated parameter that is a tensor, a number that changes per
step), and the diagnostics say so. In-process, on CPU tensors."""

from __future__ import annotations

import json
import sys
import textwrap
from pathlib import Path

import pytest

from graphsafe.cli import main as graphsafe_main
from graphsafe.runtime.trace_cli import main as trace_main

pytestmark = pytest.mark.usefixtures("cpu_only_tracer")

# `sched` comes from a call static inference cannot follow (getattr), `lr` from a dict of
# lists: `check` alone sees neither as what it is.
PROGRAM = '''
import torch


def make_schedule(n):
    return getattr(torch, "linspace")(1.0, 0.0, n)


def apply_update(w, grad, lr):
    w.sub_(grad * lr)


def train_step(w, x, sched, lr, i):  # graphsafe: region
    loss = ((w * x).sum() - 1.0) ** 2
    if sched[i + 1] > 0:
        loss = loss * 2
    apply_update(w, x, lr)
    return loss


def main():
    w = torch.zeros(4)
    x = torch.ones(4)
    sched = make_schedule(8)
    lrs = {"values": [3e-4, 3e-5, 3e-6, 3e-7]}
    for i in range(4):
        train_step(w, x, sched, lrs["values"][i], i)


if __name__ == "__main__":
    main()
'''


@pytest.fixture
def project(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", list(sys.path))
    (tmp_path / "train.py").write_text(textwrap.dedent(PROGRAM).lstrip())
    return tmp_path


def check(capsys, *extra: str) -> tuple[int, list[dict], str]:
    code = graphsafe_main(["check", "--no-cache", "--output-format", "json", *extra, "."])
    out, err = capsys.readouterr()
    return code, json.loads(out), err


def line_of(path: Path, text: str) -> int:
    return next(i for i, line in enumerate(path.read_text().splitlines(), 1) if text in line)


def trace(capsys, *extra: str) -> tuple[int, str, str]:
    code = trace_main(["train.py", *extra])
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    return code, out, err


def test_check_alone_misses_the_per_step_lr_and_the_tensor_schedule(project, capsys):
    # the loop counter `i` its caller passes is seen statically (analyzer/loop_counters.py); the lr
    # from a dict of lists and the schedule from getattr are not
    _, found, _ = check(capsys)
    assert [(d["code"], d["location"]["row"]) for d in found] == [("GS301", line_of(project / "train.py", "if sched[i + 1]"))]
    assert "loop counter of `for i in range(...)`" in found[0]["message"]


def test_check_after_trace_save_facts_reports_them_as_observed_at_run_time(project, capsys):
    _, _, err = trace(capsys, "--save-facts")
    assert "facts saved to .graphsafe/facts.json" in err
    code, found, err = check(capsys)
    assert code == 1 and "warning" not in err
    by_line = {(d["code"], d["location"]["row"]): d["message"] for d in found}
    lr_line = line_of(project / "train.py", "w.sub_(grad * lr)")
    branch_line = line_of(project / "train.py", "if sched[i + 1] > 0:")
    assert "observed at run time: lr changed 0.0003 → 3e-05" in by_line[("GS301", lr_line)]
    assert "observed at run time: `sched` is a tensor" in by_line[("GS201", branch_line)]


def test_saved_facts_hold_kind_device_dtype_and_change_per_function(project, capsys):
    trace(capsys, "--save-facts")
    data = json.loads((project / ".graphsafe" / "facts.json").read_text())
    assert data["version"] == 1
    functions = data["files"]["train.py"]["functions"]
    step = functions["train_step"]["values"]
    assert step["sched"] == {"kind": "tensor", "device": "cpu", "dtype": "float32", "zero_dim": False,
                             "changed": False, "shape_changed": False}
    assert step["lr"] == {"kind": "number", "changed": True, "values": ["0.0003", "3e-05"]}
    # a function the region calls has its own facts, not only the region
    assert functions["apply_update"]["values"]["lr"]["changed"] is True
    assert functions["train_step"]["branches"][0]["code"] == "GS201"


def test_save_facts_to_a_path_is_read_by_check_with_facts_flag(project, capsys):
    trace(capsys, "--save-facts", "run/facts.json")
    assert not (project / ".graphsafe").exists()
    _, found, _ = check(capsys, "--facts", "run/facts.json")
    assert {d["code"] for d in found} == {"GS201", "GS301"}


def test_save_facts_before_the_target_still_traces_the_script(project, capsys):
    code = trace_main(["--save-facts", "train.py"])
    capsys.readouterr()
    assert code == 1 and (project / ".graphsafe" / "facts.json").is_file()


def test_trace_static_says_whether_static_alone_the_facts_or_only_the_run_saw_each_hazard(project, capsys):
    (project / "train.py").write_text((project / "train.py").read_text().replace(
        "    return loss\n", "    print(loss.item())\n    return loss\n"))
    _, out, _ = trace(capsys, "--static", "--format", "json")
    merged = json.loads(out)["merged"]
    seen = {(e["code"], e["row"]): e["static_by"] for entries in (merged["both"], merged["runtime only"])
            for e in entries}
    path = project / "train.py"
    assert seen[("GS101", line_of(path, "loss.item()"))] == "static alone"
    assert seen[("GS201", line_of(path, "if sched[i + 1] > 0:"))] == "facts"
    assert seen[("GS301", line_of(path, "def train_step"))] is None  # reported at the def line: only the run
    assert merged["by facts"] >= 1
    assert not (project / ".graphsafe").exists()  # --static alone saves nothing


def test_trace_static_text_names_the_hazards_the_facts_settled(project, capsys):
    _, out, _ = trace(capsys, "--static")
    assert f"train.py:{line_of(project / 'train.py', 'if sched')}: GS201 (static, with this run's facts)" in out


def test_a_traced_callable_saves_the_facts_of_its_parameters(project, capsys):
    (project / "steps.py").write_text(textwrap.dedent('''
        import torch

        W = torch.zeros(3)


        def update(w, lr):
            w.add_(torch.ones(3) * lr)


        def inputs(step):
            return (W, 0.1 / (step + 1))
    ''').lstrip())
    code = trace_main(["steps:update", "--args", "steps:inputs", "--save-facts"])
    capsys.readouterr()
    assert code == 1
    data = json.loads((project / ".graphsafe" / "facts.json").read_text())
    values = data["files"]["steps.py"]["functions"]["update"]["values"]
    assert values["lr"] == {"kind": "number", "changed": True, "values": ["0.1", "0.05"]}
    assert values["w"]["kind"] == "tensor" and values["w"]["changed"] is False
    assert "inputs" not in data["files"]["steps.py"]["functions"]  # the factory runs outside the step


def test_a_second_trace_keeps_the_facts_of_functions_it_did_not_trace(project, capsys):
    trace(capsys, "--save-facts")
    (project / "other.py").write_text("def helper(k):  # graphsafe: region\n    return k + 1\n\n\nhelper(1)\nhelper(2)\n")
    trace_main(["other.py", "--save-facts"])
    capsys.readouterr()
    files = json.loads((project / ".graphsafe" / "facts.json").read_text())["files"]
    assert "train_step" in files["train.py"]["functions"]
    assert files["other.py"]["functions"]["helper"]["values"]["k"]["values"] == ["1", "2"]


DISPATCH = '''
import torch


class LoggingLoss:
    def __call__(self, out):
        print("loss", float(out.sum()))
        return out.sum()


class QuietLoss:
    def __call__(self, out):
        return out.sum()


def step(w, x, loss_fn):  # graphsafe: region
    return loss_fn(w * x)


def main():
    losses = {"log": LoggingLoss, "quiet": QuietLoss}
    loss_fn = losses[getattr(str, "lower")("LOG")]()
    for _ in range(3):
        step(torch.ones(3), torch.ones(3), loss_fn)


if __name__ == "__main__":
    main()
'''


def test_a_call_only_the_run_resolved_joins_the_call_graph(tmp_path, monkeypatch, capsys):
    """`loss_fn(out)` on an object static inference cannot type: the run saw which `__call__`
    ran, and `check` with its facts follows it (and only it) into that method's hazards."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", list(sys.path))
    (tmp_path / "train.py").write_text(textwrap.dedent(DISPATCH).lstrip())
    code, found, _ = check(capsys)
    assert not [d for d in found if d["code"] in ("GS105", "GS501")]
    trace(capsys, "--save-facts")
    facts = json.loads((tmp_path / ".graphsafe" / "facts.json").read_text())
    assert facts["files"]["train.py"]["functions"]["step"]["calls"] == ["train.py::LoggingLoss.__call__"]
    code, found, _ = check(capsys)
    lines = {(d["code"], d["location"]["row"]) for d in found}
    assert ("GS105", line_of(tmp_path / "train.py", "float(out.sum())")) in lines
    assert not [d for d in found if "QuietLoss" in " ".join(d.get("chain") or [])]


OVERRIDES = '''
import torch


class Augmentation:
    def forward(self, x):
        return self.apply(x)


class Affine(Augmentation):
    def apply(self, x):
        return x * float(x.sum())


class Noisy(Augmentation):
    def apply(self, x):
        print("noisy")
        return x


def step(aug, x):  # graphsafe: region
    return aug.forward(x)


def main():
    aug = {"affine": Affine, "noisy": Noisy}[getattr(str, "lower")("AFFINE")]()
    for _ in range(3):
        step(aug, torch.ones(3))


if __name__ == "__main__":
    main()
'''


def test_the_run_narrows_a_self_call_to_the_override_it_ran(tmp_path, monkeypatch, capsys):
    """`self.apply(x)` in a base class reaches every subclass's override statically; the run saw
    `Affine.apply` only, so with its facts `Noisy.apply`'s print is not reported."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", list(sys.path))
    (tmp_path / "train.py").write_text(textwrap.dedent(OVERRIDES).lstrip())
    trace(capsys, "--save-facts")
    code, found, _ = check(capsys)
    codes = {(d["code"], d["location"]["row"]) for d in found}
    assert ("GS105", line_of(tmp_path / "train.py", "float(x.sum())")) in codes
    assert ("GS501", line_of(tmp_path / "train.py", 'print("noisy")')) not in codes
