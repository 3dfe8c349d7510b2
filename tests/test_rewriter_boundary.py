"""The capture-boundary split (rewriters/boundary.py) and `graphsafe graph`: host work moves
around a graphable core, callers are unchanged, and the split program computes what the
original computed, call after call (run here on CPU with torch)."""

from __future__ import annotations

import textwrap

import pytest
import torch

from graphsafe.rewriters.boundary import split_region
from tests.helpers import run_cli

TRAINER = textwrap.dedent('''\
    import time
    import torch


    class Trainer:
        def __init__(self):
            torch.manual_seed(0)
            self.model = torch.nn.Linear(4, 1)
            self.opt = torch.optim.SGD(self.model.parameters(), lr=0.1)
            self.step = 0
            self.losses = []
            self.log = []

        def train_step(self, x, y, lr: float):
            t0 = time.perf_counter()
            for group in self.opt.param_groups:
                group["lr"] = lr
            loss = torch.nn.functional.mse_loss(self.model(x), y)
            if loss > 100:
                self.log.append(("spike", loss.item(), self.step))
            self.opt.zero_grad()
            loss.backward()
            self.opt.step()
            self.step += 1
            self.losses.append(loss.item())
            self.log.append(f"step {self.step} lr {lr}")
            return loss.detach(), self.model.weight.sum()
''')
# what `graphsafe check --region Trainer.train_step` reports on TRAINER, line → codes
TRAINER_HOST = {15: {"GS502"}, 17: {"GS301"}, 19: {"GS201"}, 20: {"GS101", "GS503"}, 24: {"GS302"},
                25: {"GS101", "GS503"}, 26: {"GS503"}}


def _run(source: str, calls) -> tuple[list, dict]:
    namespace: dict = {}
    exec(compile(source, "<program>", "exec"), namespace)
    trainer = namespace["Trainer"]()
    results = [trainer.train_step(*args) for args in calls]
    state = {k: v for k, v in vars(trainer).items() if k not in ("model", "opt")}
    state["weight"] = trainer.model.weight.detach().clone()
    return results, state


def _calls(n: int = 5):
    generator = torch.Generator().manual_seed(1)
    return [(torch.randn(8, 4, generator=generator), torch.randn(8, 1, generator=generator) * (30 if i == 2 else 1),
             0.1 / (i + 1)) for i in range(n)]


def _same(a, b) -> None:
    if isinstance(a, torch.Tensor):
        assert torch.equal(a, b)
    elif isinstance(a, (list, tuple)):
        assert type(a) is type(b) and len(a) == len(b)
        for x, y in zip(a, b):
            _same(x, y)
    elif isinstance(a, dict):
        assert a.keys() == b.keys()
        for key in a:
            _same(a[key], b[key])
    else:
        assert a == b


def test_host_work_moves_around_a_core_that_no_longer_takes_the_lr():
    result = split_region(TRAINER, "Trainer.train_step", TRAINER_HOST)
    assert result.refusal is None
    assert result.core_name == "train_step_core"
    assert result.core_parameters == ["x", "y"]  # the lr reaches the graph through the param group
    assert result.prologue_lines == [15, 16]
    assert result.epilogue_lines == [19, 24, 25, 26]
    assert "def train_step(self, x, y, lr: float):" in result.source  # callers unchanged


def test_the_split_program_computes_what_the_original_computed_call_after_call():
    result = split_region(TRAINER, "Trainer.train_step", TRAINER_HOST)
    calls = _calls()
    original, split = _run(TRAINER, calls), _run(result.source, calls)
    _same(original[0], split[0])
    _same(original[1], split[1])  # step counter, losses, log (with the spike entry), weights


def test_the_core_returns_the_result_and_what_the_host_work_after_it_reads():
    result = split_region(TRAINER, "Trainer.train_step", TRAINER_HOST)
    assert "_result, loss = self.train_step_core(x, y)" in result.source
    assert "return (loss.detach(), self.model.weight.sum()), loss" in result.source


def test_host_work_whose_result_feeds_the_tensor_work_stays_in_the_core():
    source = textwrap.dedent('''\
        def step(x, scale):
            y = x * 2
            n = int(y.sum())
            z = y[:n]
            print(z)
            return z
    ''')
    result = split_region(source, "step", {3: {"GS105"}, 5: {"GS104", "GS501"}})
    assert result.kept_host_lines == [3]
    assert result.epilogue_lines == [5]
    assert "n = int(y.sum())" in result.source.split("def step_core")[1]


def test_a_return_that_reads_host_state_is_evaluated_in_the_wrapper():
    source = textwrap.dedent('''\
        class C:
            def step(self, x):
                y = x + 1
                self.count += 1
                return y, self.count
    ''')
    result = split_region(source, "C.step", {4: {"GS302"}})
    wrapper = result.source.split("def step_core")[0]
    assert "y = self.step_core(x)" in wrapper and "return y, self.count" in wrapper


def test_host_work_that_the_later_tensor_work_reads_is_not_moved_across_it():
    source = textwrap.dedent('''\
        class C:
            def step(self, x):
                y = x + 1
                self.count += 1
                z = y * self.count
                return z
    ''')
    result = split_region(source, "C.step", {4: {"GS302"}})
    assert result.source is None and "no host work can move" in result.refusal


@pytest.mark.parametrize("body, reason", [
    ("    print(x)\n    yield x\n", "it is a generator: a yield at line 3"),
    ("    global y\n    print(x)\n", "it declares a global at line 2"),
])
def test_functions_that_cannot_be_split_are_refused_with_the_line_and_a_reason(body, reason):
    source = "def step(x):\n" + body
    result = split_region(source, "step", {2: {"GS501"}, 3: {"GS501"}})
    assert result.source is None and reason in result.refusal


def test_a_guard_clause_after_host_work_stays_in_the_wrapper():
    source = "def step(x):\n    print(x)\n    if x is None:\n        return x\n    return x + 1\n"
    result = split_region(source, "step", {2: {"GS501"}})
    wrapper, core = result.source.split("def step_core")
    assert result.prologue_lines == [2, 3]
    assert "if x is None:\n        return x" in wrapper and "return x + 1" in core


def test_graph_command_prints_the_patch_and_the_wiring_and_writes_nothing_with_diff(tmp_path, capsys):
    program = tmp_path / "train.py"
    program.write_text(TRAINER + "\n\n# graphsafe: region\n", encoding="utf-8")
    code, out, err = run_cli(capsys, "graph", str(program), "--region", "Trainer.train_step", "--diff", "--no-cache")
    assert code in (0, 1), err
    assert "+    def train_step_core(self, x, y):" in out
    assert "graphed(obj.train_step_core, train=True)" in err
    assert program.read_text(encoding="utf-8") == TRAINER + "\n\n# graphsafe: region\n"


def test_graph_command_writes_the_split_and_names_what_still_blocks(tmp_path, capsys):
    program = tmp_path / "train.py"
    program.write_text(TRAINER, encoding="utf-8")
    code, out, err = run_cli(capsys, "graph", str(program), "--region", "Trainer.train_step", "--no-cache")
    text = program.read_text(encoding="utf-8")
    assert "def train_step_core(self, x, y):" in text
    assert "split: the tensor work is now Trainer.train_step_core(x, y)" in out
    compile(text, "train.py", "exec")


def test_graph_command_needs_exactly_one_region(tmp_path, capsys):
    program = tmp_path / "train.py"
    program.write_text(TRAINER, encoding="utf-8")
    code, out, err = run_cli(capsys, "graph", str(program), "--region", "Nothing.here", "--no-cache")
    assert code == 2 and "no function matches" in err


DECODER = textwrap.dedent('''\
    import torch


    class Decoder:
        def __init__(self):
            torch.manual_seed(0)
            self.table = torch.randn(3, 12, 5)
            self.pos = 4
            self.trace = []

        def step(self, x):
            row = self.table[:, self.pos - 1] * x
            self.trace.append(self.pos)
            self.pos += 1
            return row.sum(-1)
''')


def test_a_per_step_attribute_becomes_a_core_parameter_carried_by_numbers():
    result = split_region(DECODER, "Decoder.step", {12: {"GS301"}, 13: {"GS503"}, 14: {"GS302"}},
                          per_step={12: {"self.pos"}})
    assert result.core_parameters == ["x", "pos"] and result.numbers == [1]
    assert "self.step_core(x, self.pos)" in result.source
    assert "self.table[:, torch.as_tensor(pos - 1).reshape(1)].squeeze(1) * x" in result.source
    assert result.number_indexes == 1


def test_the_attribute_split_computes_what_the_original_computed_with_numbers_or_device_scalars():
    result = split_region(DECODER, "Decoder.step", {12: {"GS301"}, 13: {"GS503"}, 14: {"GS302"}},
                          per_step={12: {"self.pos"}})
    originals, splits = {}, {}
    exec(compile(DECODER, "<original>", "exec"), originals)
    exec(compile(result.source, "<split>", "exec"), splits)
    a, b = originals["Decoder"](), splits["Decoder"]()
    core = b.step_core
    b.step_core = lambda x, pos: core(x, torch.tensor(pos))  # as graphed(numbers=[1]) passes it
    for i in range(6):
        x = torch.full((5,), float(i))
        assert torch.equal(a.step(x), b.step(x))
    assert (a.pos, a.trace) == (b.pos, b.trace)


@pytest.mark.parametrize("shape, dim", [((4, 7), 1), ((3, 5, 2), 1), ((6,), 0), ((2, 3, 4), 2)])
def test_a_one_element_index_tensor_reads_what_the_integer_index_read(shape, dim):
    x = torch.arange(float(torch.tensor(shape).prod())).reshape(shape)
    lead = (slice(None),) * dim
    for n in range(-shape[dim], shape[dim]):
        for carried in (n, torch.tensor(n)):
            assert torch.equal(x[lead + (n,)], x[lead + (torch.as_tensor(carried).reshape(1),)].squeeze(dim))
    with pytest.raises(IndexError):
        x[lead + (torch.as_tensor(shape[dim]).reshape(1),)]


def test_graph_command_carries_a_per_step_attribute_and_counts_its_hazards_settled(tmp_path, capsys):
    program = tmp_path / "decode.py"
    program.write_text(DECODER, encoding="utf-8")
    code, out, err = run_cli(capsys, "graph", str(program), "--region", "Decoder.step", "--no-cache")
    assert "per-step numbers now core parameters, carried by device scalars (numbers=): pos" in out
    assert "graphed(obj.step_core, numbers=[1])" in out
    assert "nothing static blocks capture any more" in out, out
    assert code == 0


def test_host_data_before_the_tensor_work_becomes_a_core_input_and_a_host_return_stays_outside():
    source = textwrap.dedent('''\
        import torch


        class Agent:
            def act(self, obs_list):
                obs = torch.as_tensor(obs_list, dtype=torch.float32)
                logits = self.net(obs)
                action = logits.argmax(-1)
                return action.cpu()
    ''')
    result = split_region(source, "Agent.act", {6: {"GS402"}, 9: {"GS103"}})
    wrapper, core = result.source.split("def act_core")
    assert "obs = torch.as_tensor(obs_list" in wrapper and "action = self.act_core(obs)" in wrapper
    assert "return action.cpu()" in wrapper and "return action" in core
    assert result.core_parameters == ["obs"]


GUARDED = textwrap.dedent('''\
    import torch


    class Step:
        def __init__(self):
            self.calls = 0
            self.history = []

        def run(self, x, scale):
            if x is None:
                return None
            y = x * scale
            self.calls += 1
            self.history.append(self.calls)
            if isinstance(scale, tuple):
                return y.sum(), y
            else:
                return y.sum()
''')


def test_guard_clauses_stay_in_the_wrapper_and_a_final_if_returns_through_the_core():
    result = split_region(GUARDED, "Step.run", {13: {"GS302"}, 14: {"GS503"}})
    assert result.refusal is None, result.refusal
    wrapper, core = result.source.split("def run_core")
    assert "if x is None:\n            return None" in wrapper
    assert "return _result" in wrapper and "return y.sum()" in core
    originals, splits = {}, {}
    exec(compile(GUARDED, "<original>", "exec"), originals)
    exec(compile(result.source, "<split>", "exec"), splits)
    a, b = originals["Step"](), splits["Step"]()
    for x, scale in ((torch.ones(3), 2.0), (None, 1.0), (torch.arange(3.0), 0.5)):
        assert repr(a.run(x, scale)) == repr(b.run(x, scale))
    assert (a.calls, a.history) == (b.calls, b.history)


EXITS = textwrap.dedent('''\
    import torch


    class Step:
        def __init__(self):
            self.log = []
            self.calls = 0

        def run(self, x, limit):
            self.calls += 1
            y = x * 2
            if limit is None:
                return y
            for i in range(3):
                if i == limit:
                    return y + i, i
            z = y.sum()
            self.log.append(z.item())
            return z
''')
EXITS_HOST = {10: {"GS302"}, 18: {"GS101", "GS503"}}


def test_returns_in_the_middle_come_back_through_a_selector_the_wrapper_dispatches_on():
    result = split_region(EXITS, "Step.run", EXITS_HOST)
    assert result.refusal is None, result.refusal
    wrapper, core = result.source.split("def run_core")
    assert "_exited, _result, z = self.run_core(x, limit)" in wrapper
    assert "if _exited:\n            return _result\n        self.log.append(z.item())" in wrapper
    assert "return True, y, None" in core and "return True, (y + i, i), None" in core
    assert "return False, z, z" in core
    assert result.epilogue_lines == [18]


def test_the_selector_split_computes_what_the_original_computed_on_every_path():
    result = split_region(EXITS, "Step.run", EXITS_HOST)
    originals, splits = {}, {}
    exec(compile(EXITS, "<original>", "exec"), originals)
    exec(compile(result.source, "<split>", "exec"), splits)
    a, b = originals["Step"](), splits["Step"]()
    for i, limit in enumerate((None, 1, 7, 0, 5, 2)):
        x = torch.arange(4.0) + i
        _same(a.run(x, limit), b.run(x, limit))
    assert (a.calls, a.log) == (b.calls, b.log) and len(a.log) == 2


def test_host_work_before_an_early_exit_stays_in_the_core():
    source = textwrap.dedent('''\
        def step(x, log):
            y = x + 1
            log.append(1)
            if y.sum() > 0:
                return y
            log.append(2)
            return -y
    ''')
    result = split_region(source, "step", {3: {"GS503"}, 4: {"GS201"}, 6: {"GS503"}})
    wrapper, core = result.source.split("def step_core")
    assert result.kept_host_lines == [3] and result.epilogue_lines == [6]
    assert "log.append(1)" in core and "log.append(2)" in wrapper
    for sign in (1.0, -1.0):
        logs = ([], [])
        originals, splits = {}, {}
        exec(compile(source, "<original>", "exec"), originals)
        exec(compile(result.source, "<split>", "exec"), splits)
        x = torch.full((3,), sign * 5)
        _same(originals["step"](x, logs[0]), splits["step"](x, logs[1]))
        assert logs[0] == logs[1]


def test_a_body_in_one_no_grad_block_is_split_inside_it_and_both_parts_keep_the_block():
    source = textwrap.dedent('''\
        import torch


        class Model:
            def forward(self, x, trace):
                """One step."""
                with torch.no_grad():
                    trace.append(len(trace))
                    y = (x * self.w).sum()
                    return y
    ''')
    result = split_region(source, "Model.forward", {8: {"GS503"}})
    assert result.refusal is None, result.refusal
    wrapper, core = result.source.split("def forward_core")
    assert '"""One step."""' in wrapper and '"""One step."""' not in core
    assert wrapper.count("with torch.no_grad():") == 1 and core.count("with torch.no_grad():") == 1
    namespace: dict = {}
    exec(compile(result.source, "<split>", "exec"), namespace)
    model, trace = namespace["Model"](), []
    model.w = torch.ones(3, requires_grad=True)
    out = model.forward(torch.ones(3), trace)
    assert trace == [0] and float(out) == 3.0 and not out.requires_grad


def test_graph_splits_an_inherited_method_where_it_is_defined_and_wires_the_named_class(tmp_path, capsys):
    import json

    (tmp_path / "base.py").write_text(textwrap.dedent('''\
        import torch


        class Base(torch.nn.Module):
            def step(self, x):
                y = x * 2
                self.calls += 1
                return y
    '''), encoding="utf-8")
    (tmp_path / "sub.py").write_text("from base import Base\n\n\nclass Sub(Base):\n    calls = 0\n",
                                     encoding="utf-8")
    code, out, err = run_cli(capsys, "graph", str(tmp_path), "--region", "Sub.step", "--no-cache", "--json")
    summary = json.loads(out)
    assert summary["core"] == "Base.step_core"
    assert summary["wire"] == {"module": "sub", "owner": "Sub", "name": "step_core"}
    assert "def step_core(self, x):" in (tmp_path / "base.py").read_text(encoding="utf-8")


def test_graph_method_on_a_subclass_graphs_only_its_instances():
    from graphsafe.runtime.graphed import GraphedCallable, graph_method

    class Base:
        def step_core(self, x):
            return x + 1

    class Sub(Base):
        pass

    graph_method(Sub, "step_core", batched=[], backend="eager")
    assert isinstance(Sub().step_core, GraphedCallable) and not isinstance(Base().step_core, GraphedCallable)
    assert torch.equal(Sub().step_core(torch.zeros(2)), torch.ones(2))


def test_graph_keeps_the_files_line_endings_and_encoding(tmp_path, capsys):
    program = tmp_path / "train.py"
    original = ("# -*- coding: latin-1 -*-\n# caf\xe9\n" + TRAINER).replace("\n", "\r\n")
    program.write_bytes(original.encode("latin-1"))
    code, out, err = run_cli(capsys, "graph", str(program), "--region", "Trainer.train_step", "--no-cache")
    data = program.read_bytes()
    assert b"def train_step_core(self, x, y):\r\n" in data
    assert b"\n" not in data.replace(b"\r\n", b"")  # every line ends as before
    assert "caf\xe9".encode("latin-1") in data
