"""trial_capture on a real GPU: a clean training step captures and replays like eager (and the
user's objects are untouched afterwards); planted hazards fail with the right rule at the right
line; the process stays usable after a failed capture; the CLI's subprocess path end to end."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch

from graphsafe.runtime import trial_capture

pytestmark = pytest.mark.cuda

REPO = Path(__file__).resolve().parents[2]


def line_of(text: str, path: str = __file__) -> int:
    lines = Path(path).read_text().splitlines()
    # the asserting line names the marker too: only lines that plant it count
    matches = [i for i, line in enumerate(lines, 1) if text in line and "line_of(" not in line]
    assert len(matches) == 1, (text, matches)
    return matches[0]


def make_mlp(capturable: bool = True):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Dropout(0.1),
                                torch.nn.Linear(64, 8)).cuda()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, capturable=capturable)
    x = torch.randn(16, 32, device="cuda")
    y = torch.randint(0, 8, (16,), device="cuda")

    def train_step(x, y):
        opt.zero_grad(set_to_none=True)
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()  # the optimizer's line
        return loss

    return model, opt, train_step, x, y


def user_state(model, opt):
    return ({k: v.clone() for k, v in model.state_dict().items()}, [p.grad for p in model.parameters()],
            len(opt.state), torch.cuda.get_rng_state().clone(), torch.get_rng_state().clone())


def assert_process_usable():
    a = torch.randn(64, 64, device="cuda")
    b = torch.nn.functional.dropout(a @ a, 0.5)
    c = torch.rand(3, device="cuda") + b.sum()
    torch.cuda.synchronize()
    assert torch.isfinite(c).all()


def test_clean_training_step_replays_like_eager_and_leaves_the_user_state_alone():
    model, opt, step, x, y = make_mlp()
    before = user_state(model, opt)
    report = trial_capture(step, (x, y), repeats=5, inner=5)
    assert report.status == "ok", report.to_text()
    assert report.match
    by_kind = {c.kind for c in report.comparisons}
    assert {"output", "parameter", "grad", "optimizer-state", "rng"} <= by_kind
    assert any(c.name == "rng.cuda:0" and c.ok for c in report.comparisons)  # dropout's RNG advanced alike
    t = report.timings
    assert t.eager_ms > 0 and t.replay_ms > 0 and t.capture_s > 0
    assert t.floor_ms is None or t.floor_ms > 0
    assert report.memory is not None and report.memory.reserved_bytes > 0, report.memory
    after = user_state(model, opt)
    for key in before[0]:
        assert torch.equal(before[0][key], after[0][key]), key
    assert after[1] == [None] * len(after[1]) and after[2] == 0
    assert torch.equal(before[3], after[3]) and torch.equal(before[4], after[4])
    print(report.to_text())


def test_item_fails_with_gs101_at_the_users_line_and_the_process_stays_usable():
    def step(x):
        y = x * 2
        scale = y.sum().item()  # planted sync
        return y * scale

    x = torch.randn(8, 8, device="cuda")
    report = trial_capture(step, (x,), timing=False)
    assert report.status == "failed", report.to_text()
    failure = report.failure
    assert failure.code == "GS101" and failure.name == "item-sync"
    assert (failure.file, failure.line) == (__file__, line_of("# planted sync"))
    assert failure.cuda_error == 900
    assert "cudaErrorStreamCaptureInvalidated (901)" in failure.error_class
    assert report.process_usable is True
    assert_process_usable()
    model, opt, clean, x, y = make_mlp()  # and a clean trial still works in this process
    assert trial_capture(clean, (x, y), timing=False).status == "ok"
    assert_process_usable()


def test_non_capturable_adamw_is_gs701():
    model, opt, step, x, y = make_mlp(capturable=False)
    report = trial_capture(step, (x, y), timing=False)
    assert report.status == "failed"
    assert report.failure.code == "GS701", report.to_text()
    assert report.failure.line == line_of("opt.step()  # the optimizer's line")
    assert_process_usable()


def test_pageable_host_to_device_copy_is_gs402():
    def step(x):
        w = torch.tensor([1.0, 2.0], device="cuda")  # planted H2D copy of pageable memory
        return x[:, :2] * w

    report = trial_capture(step, (torch.randn(4, 4, device="cuda"),), timing=False)
    assert report.failure is not None and report.failure.code == "GS402", report.to_text()
    assert report.failure.line == line_of("# planted H2D copy")
    assert_process_usable()


def test_python_value_baked_in_at_capture_is_a_mismatch():
    counter = {"t": 0}

    def step(x):
        counter["t"] += 1  # runs once at capture; eager steps see 1, 2, 3 ...
        return x * counter["t"]

    report = trial_capture(step, (torch.ones(4, device="cuda"),), timing=False)
    assert report.status == "mismatch", report.to_text()
    assert any(c.kind == "output" and not c.ok for c in report.comparisons)
    assert report.code == "GS301"


def test_graphed_callables_mode():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.GELU(), torch.nn.Linear(32, 4)).cuda()
    x = torch.randn(8, 16, device="cuda", requires_grad=True)
    report = trial_capture(model, (x,), mode="graphed_callables", repeats=3, inner=5)
    assert report.status == "ok", report.to_text()
    assert any(c.kind == "grad" and c.name.endswith("weight.grad") for c in report.comparisons)
    assert report.memory is not None and report.memory.reserved_bytes > 0


EAGER_FORWARDS: list[int] = []  # outside the module: a counter on it would be state the trial compares


class _CountingMLP(torch.nn.Module):
    """Counts its eager forwards: Python in forward runs on eager calls, never on graph replays."""

    def __init__(self):
        super().__init__()
        self.net = torch.nn.Sequential(*(torch.nn.Linear(16, 16) for _ in range(6)))

    def forward(self, x):
        EAGER_FORWARDS.append(1)
        return self.net(x)


def test_graphed_callables_compares_against_a_really_eager_module_and_gives_it_back():
    """make_graphed_callables swaps a module's forward in place (found on an H200: the eager
    reference and eager timing replayed the graph too, so eager == replay to 4 digits)."""
    torch.manual_seed(0)
    EAGER_FORWARDS.clear()
    model = _CountingMLP().cuda()
    x = torch.randn(8, 16, device="cuda", requires_grad=True)
    report = trial_capture(model, (x,), mode="graphed_callables", replays=3, repeats=3, inner=5, profile=False)
    assert report.status == "ok", report.to_text()
    assert "forward" not in model.__dict__, "the user's module keeps the graphed forward after the trial"
    # 3 warm-up + capture by make_graphed_callables, 3 eager reference steps, 3 x 5 x (1 + warm-up) timed
    assert len(EAGER_FORWARDS) >= 3 + 3 + 15
    t = report.timings
    assert t.eager_ms > 1.5 * t.replay_ms, f"eager {t.eager_ms:.3f} ms vs replay {t.replay_ms:.3f} ms"


def test_compile_mode_runs_for_comparison():
    w = torch.randn(32, 32, device="cuda")

    def f(x):
        return torch.sin(x) @ w + 1

    report = trial_capture(f, (torch.randn(16, 32, device="cuda"),), mode="compile", repeats=3, inner=5,
                           profile=False)
    assert report.status == "ok", report.to_text()
    assert report.timings.replay_ms > 0


FACTORIES = '''
import torch


def item():
    def step(x):
        return x * x.sum().item()  # planted
    return step, (torch.ones(4, device="cuda"),)


def clean():
    model = torch.nn.Linear(8, 8).cuda()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    x = torch.randn(4, 8, device="cuda")

    def step(x):
        opt.zero_grad(set_to_none=True)
        model(x).square().mean().backward()
        opt.step()
    return step, (x,), (model, opt)
'''


def test_cli_runs_the_trial_in_a_subprocess(tmp_path):
    (tmp_path / "factories.py").write_text(textwrap.dedent(FACTORIES))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
    env.pop("GRAPHSAFE_CAPTURE_BACKEND", None)

    def capture(*argv):
        done = subprocess.run([sys.executable, "-m", "graphsafe.runtime.capture_cli", *argv], cwd=tmp_path, env=env,
                              capture_output=True, text=True, timeout=300)
        assert "Traceback" not in done.stdout + done.stderr, done.stderr
        return done

    done = capture("factories.py:item", "--format", "json", "--no-timing")
    assert done.returncode == 1, done.stdout + done.stderr
    data = json.loads(done.stdout)
    assert data["failure"]["code"] == "GS101"
    assert data["failure"]["line"] == line_of("# planted", str(tmp_path / "factories.py"))
    done = capture("factories.py:clean", "--repeats", "3", "--inner", "5")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "replay matches eager" in done.stdout and "graph pool" in done.stdout
