"""`graphsafe graph` on the shapes real steps take: a training step built by a factory (a closure),
a module function callers import by name, a return through a caller's hook or a helper that
reads a tensor on the host, and a fix whose tensors the wrapper's host work reads. Each split
computes what the original computed, call after call (on CPU)."""

from __future__ import annotations

import json
import textwrap

import torch

from graphsafe.rewriters.boundary import convert_fixed_values, split_region
from tests.helpers import run_cli

FACTORY = textwrap.dedent('''\
    import torch


    def make_step(model, opt, every=1, output_transform=lambda x, loss: loss.item()):
        if every <= 0:
            raise ValueError("every")

        def update(state, x):
            if state["iteration"] % every == 0:
                opt.zero_grad()
            loss = model(x).pow(2).mean()
            loss.backward()
            opt.step()
            return output_transform(x, loss)

        return update
''')


def _build(source: str):
    namespace: dict = {}
    exec(compile(source, "<program>", "exec"), namespace)
    torch.manual_seed(0)
    model = torch.nn.Linear(3, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    return namespace["make_step"](model, opt), model


def test_a_closure_is_split_next_to_itself_and_its_core_hangs_on_it():
    result = split_region(FACTORY, "make_step.update", {})
    assert result.refusal is None, result.refusal
    assert result.closure == "update" and result.host_return
    assert "loss = update.update_core(state, x)\n        return output_transform(x, loss)" in result.source
    assert "    def update_core(state, x):" in result.source
    assert "    update.update_core = update_core\n" in result.source
    assert "loss.item()" not in result.source.split("def update_core")[1]


def test_the_split_closure_trains_like_the_original_and_its_core_can_be_replaced():
    result = split_region(FACTORY, "make_step.update", {})
    (a, model_a), (b, model_b) = _build(FACTORY), _build(result.source)
    calls = []
    core = b.update_core
    b.update_core = lambda *args: calls.append(1) or core(*args)  # what graphed() does: take the core's place
    for i in range(4):
        x = torch.randn(5, 3, generator=torch.Generator().manual_seed(i))
        assert a({"iteration": i + 1}, x) == b({"iteration": i + 1}, x)
    assert len(calls) == 4 and torch.equal(model_a.weight, model_b.weight)


def test_graph_prints_the_closure_wiring_and_names_it_in_json(tmp_path, capsys):
    program = tmp_path / "steps.py"
    program.write_text(FACTORY, encoding="utf-8")
    code, out, err = run_cli(capsys, "graph", str(program), "--region", "make_step.update", "--no-cache", "--diff")
    assert "fn.update_core = graphed(fn.update_core, train=True)" in err
    assert "fn: the update function make_step() returns" in err
    code, out, err = run_cli(capsys, "graph", str(program), "--region", "make_step.update", "--no-cache", "--json")
    summary = json.loads(out)
    assert summary["wire"] == {"module": "steps", "owner": "", "closure": "make_step.update", "name": "update_core"}
    assert summary["options"] == {"train": True} and summary["host_return"]


SOLVER = textwrap.dedent('''\
    import torch


    def solve(func, y0, t, *, rtol=1e-7, method=None):
        h = (t[1:] - t[:-1]).unsqueeze(-1)
        y = y0
        for i in range(h.shape[0]):
            y = y + h[i] * func(t[i], y)
        if method is None:
            return y
        else:
            return y, h
''')


def test_a_module_function_with_nothing_to_move_still_gets_a_core_its_importers_reach():
    result = split_region(SOLVER, "solve", {})
    assert result.refusal is None and result.moved == 0
    wrapper, core = result.source.split("def solve_core")
    assert "_result = solve_core(func, y0, t, method=method)" in wrapper
    namespace: dict = {}
    exec(compile(result.source, "<split>", "exec"), namespace)
    imported = namespace["solve"]  # `from solver import solve`: bound before any wiring
    replaced = []
    core_function = namespace["solve_core"]
    namespace["solve_core"] = lambda *a, **k: replaced.append(1) or core_function(*a, **k)
    t, y0 = torch.linspace(0, 1, 5), torch.ones(2)
    assert torch.equal(imported(lambda s, y: -y, y0, t), _original_solve(y0, t)) and replaced == [1]


def _original_solve(y0, t):
    namespace: dict = {}
    exec(compile(SOLVER, "<original>", "exec"), namespace)
    return namespace["solve"](lambda s, y: -y, y0, t)


def test_a_method_with_nothing_to_move_is_still_refused_with_the_reason():
    source = "class C:\n    def step(self, x):\n        y = x + 1\n        return y\n"
    result = split_region(source, "C.step", {})
    assert result.source is None and "no host work can move out of it" in result.refusal


SVI = textwrap.dedent('''\
    import torch


    def torch_item(x):
        return x if isinstance(x, float) else x.item()


    class SVI:
        def __init__(self, w):
            self.w = w

        def step(self, x):
            loss = (self.w * x).sum()
            loss.backward()
            with torch.no_grad():
                self.w -= 0.1 * self.w.grad
                self.w.grad = None
            if isinstance(loss, tuple):
                return type(loss)(map(torch_item, loss))
            else:
                return torch_item(loss)
''')


def test_a_return_whose_call_reaches_host_work_is_evaluated_by_the_wrapper_on_the_cores_result():
    # what check reports: a GS101 in torch_item, reached from the call on line 21
    result = split_region(SVI, "SVI.step", {}, reached={21: {"GS101"}})
    assert result.refusal is None and result.host_return
    wrapper, core = result.source.split("def step_core")
    assert "loss = self.step_core(x)" in wrapper and "return torch_item(loss)" in wrapper
    assert "torch_item" not in core and "return loss" in core
    originals, splits = {}, {}
    exec(compile(SVI, "<original>", "exec"), originals)
    exec(compile(result.source, "<split>", "exec"), splits)
    a = originals["SVI"](torch.ones(3, requires_grad=True))
    b = splits["SVI"](torch.ones(3, requires_grad=True))
    for i in range(3):
        x = torch.arange(3.0) + i
        assert a.step(x) == b.step(x)
    assert torch.equal(a.w, b.w)


def test_a_return_whose_call_reaches_tensor_work_stays_in_the_core():
    result = split_region(SVI, "SVI.step", {}, reached={21: {"GS101", "GS408"}})
    assert result.source is None  # a method with nothing else to move


DQN = textwrap.dedent('''\
    import statistics
    import torch


    class DQN:
        def __init__(self):
            self.updates = 0
            self.logged = []

        def train(self, xs):
            losses = []
            for x in xs:
                loss = (x * 2).sum()
                losses.append(loss.detach())
            total = loss.detach()
            self.updates += len(xs)
            self.logged.append((statistics.mean(losses), total + 1))
''')


def test_values_a_fix_made_tensors_are_converted_back_after_the_core_for_the_wrapper():
    result = split_region(DQN, "DQN.train", {16: {"GS302"}, 17: {"GS503"}})
    assert result.epilogue_lines == [16, 17]
    # `graph` fixed `losses.append(loss.item())` and `total = loss.item()` (lines 14 and 15 of DQN)
    # in the core; the split moved them: find them where the core now has them
    lines = {n + 1 for n, text in enumerate(result.source.splitlines())
             if "losses.append(loss.detach())" in text or "total = loss.detach()" in text}
    converted, names = convert_fixed_values(result.source, "DQN.train", "train_core", lines)
    assert names == ["losses", "total"]
    wrapper = converted.split("def train_core")[0]
    assert ("losses, total = self.train_core(xs)\n        losses = [v.item() for v in losses]\n"
            "        total = total.item()\n") in wrapper
    namespace: dict = {}
    exec(compile(converted, "<split>", "exec"), namespace)
    dqn = namespace["DQN"]()
    dqn.train([torch.ones(2), torch.full((2,), 3.0)])
    assert dqn.logged == [(8.0, 13.0)] and all(type(v) is float for v in dqn.logged[0])


def test_nothing_is_converted_when_no_fixed_line_feeds_the_wrapper():
    result = split_region(DQN, "DQN.train", {16: {"GS302"}, 17: {"GS503"}})
    converted, names = convert_fixed_values(result.source, "DQN.train", "train_core", {1})
    assert names == [] and converted == result.source


LOSSES = textwrap.dedent('''\
    def loss_and_grads(model, x):
        loss = model(x).pow(2).mean()
        loss.backward()
        return loss
''')
TRAINER_WITH_HELPER = textwrap.dedent('''\
    import torch
    from losses import loss_and_grads


    class Trainer:
        def __init__(self):
            self.model = torch.nn.Linear(3, 1)
            self.opt = torch.optim.SGD(self.model.parameters(), lr=0.1)
            self.steps = 0

        def step(self, x):
            loss = loss_and_grads(self.model, x)
            self.opt.step()
            self.opt.zero_grad()
            self.steps += 1
            return loss.detach()
''')


def test_graph_wires_train_true_when_a_callee_in_another_file_runs_the_backward(tmp_path, capsys):
    (tmp_path / "losses.py").write_text(LOSSES, encoding="utf-8")
    (tmp_path / "trainer.py").write_text(TRAINER_WITH_HELPER, encoding="utf-8")
    code, out, err = run_cli(capsys, "graph", str(tmp_path), "--region", "Trainer.step", "--no-cache", "--json")
    summary = json.loads(out)
    assert summary["split"] and ".backward(" not in (tmp_path / "trainer.py").read_text(encoding="utf-8")
    assert summary["options"] == {"train": True}
    assert summary["backward_in"].endswith("losses.py:3")


def test_the_real_step_worker_graphs_the_closures_of_one_build_and_not_its_twins():
    from bench.real_e2e.step_api import Built
    from bench.real_e2e.worker import wire_closures
    from graphsafe.runtime.graphed import GraphedCallable

    result = split_region(FACTORY, "make_step.update", {})
    (a, _), (b, _) = _build(result.source), _build(result.source)

    def built(update):
        return Built(step=lambda x: update({"iteration": 1}, x), inputs=lambda i: (torch.ones(2, 3),),
                     state=lambda: {})

    request = {"graph": {"wire": {"closure": "make_step.update", "name": "update_core"},
                         "options": {"train": True, "backend": "eager", "batched": []}}}
    installed = wire_closures(built(a), request)
    assert len(installed) == 1 and isinstance(a.update_core, GraphedCallable)
    assert not isinstance(b.update_core, GraphedCallable)
    assert isinstance(a({"iteration": 1}, torch.ones(2, 3)), float) and installed[0].stats["replays"] == 1


def test_the_docstring_stays_with_the_wrapper_and_a_conversion_lands_after_it():
    source = DQN.replace("def train(self, xs):\n", 'def train(self, xs):\n        """One update."""\n')
    result = split_region(source, "DQN.train", {17: {"GS302"}, 18: {"GS503"}})
    wrapper, core = result.source.split("def train_core")
    assert '"""One update."""\n        losses, total = self.train_core(xs)' in wrapper and '"""' not in core
    lines = {n + 1 for n, text in enumerate(result.source.splitlines()) if "losses.append(loss.detach())" in text}
    converted, names = convert_fixed_values(result.source, "DQN.train", "train_core", lines)
    assert names == ["losses"] and '"""One update."""\n        losses, total = self.train_core(xs)\n' \
        '        losses = [v.item() for v in losses]\n' in converted
