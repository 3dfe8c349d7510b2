"""Host-produced core inputs (rewriters/host_inputs.py): a sampler that turns host lists into
tensors moves to the wrapper (hoisted out of a loop), the core takes its values, and the
rewritten program computes what the original computed, call after call with the inputs changing
(run here on CPU with torch, through graphed()'s static buffers with backend="eager")."""

from __future__ import annotations

import textwrap

import torch

from graphsafe.rewriters.boundary import split_region
from graphsafe.rewriters.host_inputs import host_inputs
from tests.helpers import run_cli

BUFFER = textwrap.dedent('''\
    import random

    import torch


    class Buffer:
        def __init__(self, size, device):
            self.rng = random.Random(0)
            self.obs = [[self.rng.gauss(0, 1) for _ in range(4)] for _ in range(size)]
            self.target = [[self.rng.gauss(0, 1)] for _ in range(size)]
            self.device = device

        def to_torch(self, rows):
            return torch.tensor(rows, device=self.device)

        def sample(self, batch_size):
            index = [self.rng.randrange(len(self.obs)) for _ in range(batch_size)]
            return self.to_torch([self.obs[i] for i in index]), self.to_torch([self.target[i] for i in index])


    class Learner:
        def __init__(self, device="cpu"):
            torch.manual_seed(0)
            self.model = torch.nn.Linear(4, 1)
            self.opt = torch.optim.SGD(self.model.parameters(), lr=0.05)
            self.buffer = Buffer(100, device)
            self.updates = 0

        def train(self, gradient_steps, batch_size):
            self.model.train()
            losses = []
            for _ in range(gradient_steps):
                # one minibatch per gradient step
                batch = self.buffer.sample(batch_size)  # type: ignore[union-attr]
                loss = torch.nn.functional.mse_loss(self.model(batch[0]), batch[1])
                self.opt.zero_grad()
                loss.backward()
                self.opt.step()
                losses.append(loss.detach())
            self.updates += gradient_steps
            return torch.stack(losses)
''')
TRAIN_LINE = BUFFER.splitlines().index("    def train(self, gradient_steps, batch_size):") + 1
FOR_LINE, SAMPLE_LINE = TRAIN_LINE + 3, TRAIN_LINE + 5


def _run(source: str, calls, wrap=None) -> tuple[list, torch.Tensor, int]:
    namespace: dict = {"__name__": "program"}
    exec(compile(source, "<program>", "exec"), namespace)
    learner = namespace["Learner"]()
    if wrap is not None:
        wrap(learner)
    results = [learner.train(*args) for args in calls]
    return results, learner.model.weight.detach().clone(), learner.updates


def test_a_sampler_in_a_loop_is_hoisted_before_it_and_the_loop_reads_its_values():
    result = host_inputs(BUFFER, "Learner.train", {}, {SAMPLE_LINE: {"GS402", "GS502"}})
    assert "batch_list = [self.buffer.sample(batch_size) for _ in range(gradient_steps)]  # type: ignore[union-attr]\n" \
        in result.source
    assert "for _, batch in zip(range(gradient_steps), batch_list):" in result.source
    assert "batch = self.buffer.sample" not in result.source
    lines = result.source.splitlines()
    hoisted = result.line_map(SAMPLE_LINE)
    assert lines[hoisted - 1].strip().startswith("batch_list = ")
    assert lines[result.line_map(FOR_LINE) - 1].strip().startswith("for _, batch in zip(")
    assert lines[result.line_map(SAMPLE_LINE + 1) - 1].strip().startswith("loss = ")
    assert result.producers == {hoisted: {"GS402", "GS502"}}
    assert [result.line_back(result.line_map(n)) for n in (TRAIN_LINE, FOR_LINE, SAMPLE_LINE, SAMPLE_LINE + 1)] == \
        [TRAIN_LINE, FOR_LINE, SAMPLE_LINE, SAMPLE_LINE + 1]
    assert "# one minibatch per gradient step" in lines[hoisted - 2]


def test_the_hoisted_sampler_moves_to_the_wrapper_past_core_statements_it_commutes_with():
    hosted = host_inputs(BUFFER, "Learner.train", {}, {SAMPLE_LINE: {"GS402"}})
    host_lines = hosted.remap({})
    host_lines.update(hosted.producers)
    split = split_region(hosted.source, "Learner.train", host_lines, {}, {}, hosted.producers)
    wrapper, core = split.source.split("def train_core")
    assert "batch_list = [self.buffer.sample(batch_size)" in wrapper
    assert "self.model.train()" in core and "self.buffer" not in core
    assert split.core_parameters == ["gradient_steps", "batch_list"]
    assert hosted.in_original_lines(split).prologue_lines == [SAMPLE_LINE]


def test_the_rewritten_program_computes_what_the_original_computed_call_after_call():
    hosted = host_inputs(BUFFER, "Learner.train", {}, {SAMPLE_LINE: {"GS402"}})
    host_lines = dict(hosted.producers)
    split = split_region(hosted.source, "Learner.train", host_lines, {}, {}, hosted.producers)
    calls = [(1, 8), (3, 8), (2, 8), (1, 8)]
    before = _run(BUFFER, calls)
    after = _run(split.source, calls)
    for a, b in zip(before[0], after[0]):
        assert torch.equal(a, b)
    assert torch.equal(before[1], after[1]) and before[2] == after[2]


def test_the_core_through_graphed_static_buffers_matches_the_original_with_the_batches_changing():
    from graphsafe.runtime.graphed import graphed

    hosted = host_inputs(BUFFER, "Learner.train", {}, {SAMPLE_LINE: {"GS402"}})
    split = split_region(hosted.source, "Learner.train", dict(hosted.producers), {}, {}, hosted.producers)
    calls = [(2, 8)] * 4  # a graph per (gradient_steps, batch shape): the same each call

    def wire(learner):
        learner.train_core = graphed(learner.train_core, train=True, backend="eager")

    before = _run(BUFFER, calls)
    after = _run(split.source, calls, wire)
    for a, b in zip(before[0], after[0]):
        assert torch.allclose(a, b, atol=1e-6)
    assert torch.allclose(before[1], after[1], atol=1e-6)


LOOPS = textwrap.dedent('''\
    class Learner:
        def train(self, n):
            for i in range(n):
                batch = self.buffer.sample(i)
                if batch is None:
                    break
                self.fit(batch)

        def shifted(self, n):
            for i in range(n):
                batch = self.buffer.sample(self.offset)
                self.offset = self.offset + 1
                self.fit(batch)

        def copied(self, x, n):
            for i in range(n):
                x = x.to(self.device)
                x = self.layer(x)
            return x

        def branch(self, flag):
            if flag:
                self.fit(self.buffer.sample(4))
            return self.model.weight
''')


def _line(text: str) -> int:
    return LOOPS.splitlines().index(text) + 1


def test_a_loop_that_may_stop_early_keeps_its_sampler_and_says_why():
    line = _line("            batch = self.buffer.sample(i)")
    result = host_inputs(LOOPS, "Learner.train", {}, {line: {"GS402"}})
    assert result.source == LOOPS
    assert result.refused == [(line, f"a host input made in the loop at line {line - 1} stays in the core: "
                                     "the loop may stop early (a break): fewer values would be used than drawn")]


def test_a_sampler_reading_what_the_loop_body_writes_is_not_hoisted():
    line = _line("            batch = self.buffer.sample(self.offset)")
    result = host_inputs(LOOPS, "Learner.shifted", {}, {line: {"GS402"}})
    assert result.source == LOOPS
    assert "the loop body writes `self.offset`" in result.refused[0][1]


def test_a_copy_of_a_value_the_loop_rebinds_stays_with_the_reason():
    line = _line("            x = x.to(self.device)")
    result = host_inputs(LOOPS, "Learner.copied", {line: {"GS402"}}, {})
    assert result.source == LOOPS
    assert result.refused[0][0] == line and "it copies `x`, a value the loop carries" in result.refused[0][1]


def test_a_host_copy_in_a_block_is_refused_with_the_line():
    line = _line("            self.fit(self.buffer.sample(4))")
    result = host_inputs(LOOPS, "Learner.branch", {}, {line: {"GS402"}})
    assert result.source == LOOPS and not result.producers
    assert result.refused == [(line - 1, "a host-to-device copy in what it calls stays in the core: it is not an "
                                         "assignment of names (an if statement): the core can take only names")]


def test_a_top_level_producer_moves_past_calls_on_other_objects_but_not_on_the_one_it_reads():
    source = textwrap.dedent('''\
        class Learner:
            def step(self, n):
                self.buffer.reset()
                batch = self.buffer.sample(n)
                return self.fit(batch)
    ''')
    result = host_inputs(source, "Learner.step", {}, {4: {"GS402"}})
    assert not result.producers
    assert result.refused == [(4, "a host input stays in the core: `self.buffer.reset()` is called before it and "
                                  "may change what it reads")]
    moved = host_inputs(source.replace("self.buffer.reset()", "self.model.reset()"), "Learner.step", {}, {4: {"GS402"}})
    split = split_region(moved.source, "Learner.step", dict(moved.producers), {}, {}, moved.producers)
    wrapper, core = split.source.split("def step_core")
    assert "batch = self.buffer.sample(n)" in wrapper and "self.model.reset()" in core


def test_graph_moves_the_sampler_to_the_wrapper_and_lists_no_host_copy(tmp_path, capsys):
    program = tmp_path / "learner.py"
    program.write_text(BUFFER)
    code, out, err = run_cli(capsys, "graph", str(program), "--region", "Learner.train", "--no-cache")
    text = program.read_text()
    assert "batch_list = [self.buffer.sample(batch_size) for _ in range(gradient_steps)]" in text
    assert f"learner.py:{SAMPLE_LINE}: `batch` of every iteration of the loop at line {FOR_LINE} is made " \
           "before it (`batch_list`), in the wrapper" in out
    assert "GS402" not in out and "GS502" not in out, out
    after = _run(text, [(2, 8), (1, 8), (3, 8)])
    before = _run(BUFFER, [(2, 8), (1, 8), (3, 8)])
    assert all(torch.equal(a, b) for a, b in zip(before[0], after[0])) and torch.equal(before[1], after[1])


def test_graph_keeps_the_package_directory_so_absolute_imports_reach_the_callees(tmp_path, capsys):
    package = tmp_path / "pkg"
    (package / "sub").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "sub" / "__init__.py").write_text("")
    (package / "sub" / "helpers.py").write_text("import torch\n\n\ndef pick(t):\n    return torch.nonzero(t)\n")
    (package / "model.py").write_text(textwrap.dedent('''\
        import torch
        from pkg.sub.helpers import pick


        class Model:
            def step(self, x):
                y = x * 2
                index = pick(y)
                z = y.flatten().index_select(0, index.flatten()) * 3  # tensor work on it: kept in the core
                return z
    '''))
    code, out, err = run_cli(capsys, "graph", str(package), "--region", "Model.step", "--no-cache", "--diff")
    assert "pkg/sub/helpers.py:5" in err and "GS107" in err, err


def test_the_core_of_an_inherited_method_is_checked_through_the_class_the_region_named(tmp_path, capsys):
    import json

    (tmp_path / "base.py").write_text(textwrap.dedent('''\
        import torch


        class Base(torch.nn.Module):
            def step(self, x):
                y = self.apply_to(x * 2)
                self.calls += 1
                return y

            def apply_to(self, x):
                return x
    '''), encoding="utf-8")
    (tmp_path / "sub.py").write_text(textwrap.dedent('''\
        from base import Base


        class Sub(Base):
            calls = 0

            def apply_to(self, x):
                return x + 1


        class Other(Base):
            def apply_to(self, x):
                return x * x.sum().item()
    '''), encoding="utf-8")
    code, out, err = run_cli(capsys, "graph", str(tmp_path), "--region", "Sub.step", "--no-cache", "--json")
    summary = json.loads(out)
    assert summary["core"] == "Base.step_core" and summary["split"]
    assert summary["blocking"] == [], summary["blocking"]  # Other.apply_to's .item() is not on Sub's path
    code, out, err = run_cli(capsys, "check", str(tmp_path), "--region", "Other.step_core", "--no-cache")
    assert "GS101" in out  # the core through Other does reach it


AUGMENT = textwrap.dedent('''\
    class Augment:
        def forward(self, x, params=None):
            x = self.prepare(x)
            shape = x.shape
            if params is None:
                params = self.sample(shape)
            out = self.apply(x, params)
            return out
''')


def test_a_guarded_producer_moves_with_the_hazard_free_statements_it_reads():
    # line 5 reads `shape`, computed at 4 from `x` of line 3: the three move together, in their order
    result = host_inputs(AUGMENT, "Augment.forward", {}, {5: {"GS402"}, 7: {"GS402", "GS105"}})
    assert sorted(result.producers) == [3, 4, 5]
    assert result.moved == [(5, "the host input made here moves to the wrapper with line 3, 4, which it reads (no "
                                "hazard on them): their values become core inputs")]
    assert result.refused == [(7, "a host-to-device copy in what it calls stays in the core: what it reaches also has "
                                  "GS105: tensor work, which the core keeps")]
    split = split_region(AUGMENT, "Augment.forward", dict(result.producers), {}, {}, result.producers)
    wrapper, core = split.source.split("def forward_core")
    assert ("x = self.prepare(x)\n        shape = x.shape\n        if params is None:\n            params = "
            "self.sample(shape)\n        _result = self.forward_core(x, params)") in wrapper
    assert "out = self.apply(x, params)" in core and "prepare" not in core and split.prologue_lines == [3, 4, 5]


def test_the_moved_statements_compute_what_the_original_did_call_after_call():
    program = textwrap.dedent('''\
        import torch


        class Augment:
            def __init__(self):
                self.gen = torch.Generator().manual_seed(0)

            def prepare(self, x):
                return x.unsqueeze(0) if x.dim() == 3 else x

            def sample(self, shape):
                return torch.rand(shape[0], generator=self.gen).to(torch.float64)

            def apply(self, x, params):
                return x * params.view(-1, 1, 1, 1).to(x.dtype)
    ''') + textwrap.indent(AUGMENT.split("\n", 1)[1], "")
    guard = program.splitlines().index("        if params is None:") + 1
    result = host_inputs(program, "Augment.forward", {}, {guard: {"GS402"}})
    split = split_region(program, "Augment.forward", dict(result.producers), {}, {}, result.producers)
    assert split.source is not None and split.prologue_lines == [guard - 2, guard - 1, guard], split.refusal
    assert "self.apply(x, params)" in split.source.split("def forward_core")[1]
    outputs = []
    for source in (program, split.source):
        namespace: dict = {}
        exec(compile(source, "<program>", "exec"), namespace)
        augment = namespace["Augment"]()
        outputs.append([augment.forward(torch.full((3, 2, 2), float(i))) for i in range(4)])
    assert all(torch.equal(a, b) for a, b in zip(*outputs))


def test_a_producer_reading_what_hazardous_tensor_work_computes_stays_with_the_reason():
    result = host_inputs(AUGMENT, "Augment.forward", {3: {"GS401"}}, {5: {"GS402"}})
    assert result.refused == [(5, "a host-to-device copy in what it calls stays in the core: it reads `shape`, which "
                                  "line 4 computes before it in the core (the wrapper cannot make it before the core's "
                                  "work); line 3, which it depends on, has GS401: the core keeps it")]
    assert result.producers == {}


def test_a_producer_that_cannot_move_before_the_core_stays_in_it_never_after_it():
    split = split_region(AUGMENT, "Augment.forward", {7: {"GS402"}}, {}, {}, {7})  # after core work it reads
    assert split.source is None and "host work at line 7 feeds the tensor work" in split.refusal


def test_a_guarded_producer_of_host_data_moves_before_the_core_with_its_condition():
    source = textwrap.dedent('''\
        class Augment:
            def forward(self, x, params=None):
                y = self.prepare(x)
                if params is None:
                    params = self.sample(x.shape)
                out = self.apply(y, params)
                return out
    ''')
    result = host_inputs(source, "Augment.forward", {}, {4: {"GS402"}})
    split = split_region(source, "Augment.forward", dict(result.producers), {}, {}, result.producers)
    wrapper, core = split.source.split("def forward_core")
    assert "if params is None:\n            params = self.sample(x.shape)\n        _result = self.forward_core(x, params)" \
        in wrapper
    assert "y = self.prepare(x)" in core and "out = self.apply(y, params)" in core


def test_a_forward_whose_callee_builds_a_tensor_from_a_number_is_tensor_work_not_a_producer():
    source = textwrap.dedent('''\
        import torch


        def decode_step(model, tokens: torch.Tensor, caches, state):
            logits = model(tokens, caches)
            table = model.lookup(state.ids)
            state.out = logits + table
    ''')
    # line 5 reads the tensor parameter; line 6 reaches a per-step counter (GS302) besides the copy
    result = host_inputs(source, "decode_step", {}, {5: {"GS402"}, 6: {"GS402", "GS302"}})
    assert result.producers == {} and result.source == source
    assert result.refused == [(5, "a host-to-device copy in what it calls stays in the core: it reads `tokens`, a "
                                  "tensor input: tensor work, which the core keeps"),
                              (6, "a host-to-device copy in what it calls stays in the core: what it reaches also "
                                  "has GS302: tensor work, which the core keeps")]


def test_a_statement_the_producer_does_not_read_stays_in_the_core_when_it_commutes():
    source = textwrap.dedent('''\
        class Decoder:
            def forward(self, tokens, state=None):
                w = self.w
                if state is None:
                    for i in range(2):
                        state = self.fresh(w, i)
                many = len(tokens) > 1
                x = w["emb"][tokens if many else tokens[0]]
                return self.layers(x, state)
    ''')
    # the block binds `i` on some paths only: it is not taken, and the maker commutes with it
    result = host_inputs(source, "Decoder.forward", {}, {8: {"GS402"}})
    assert sorted(result.producers) == [3, 7, 8] and result.refused == []
    split = split_region(source, "Decoder.forward", dict(result.producers), {}, {}, result.producers)
    wrapper, core = split.source.split("def forward_core")
    assert "for i in range(2)" in core and "many = len(tokens) > 1" in wrapper and split.prologue_lines == [3, 7, 8]


def test_a_block_the_producer_reads_keeps_it_in_the_core_with_the_reason():
    source = textwrap.dedent('''\
        class Decoder:
            def forward(self, tokens):
                if len(tokens) > 1:
                    many = True
                else:
                    many = False
                x = self.emb[tokens if many else tokens[0]]
                return self.layers(x)
    ''')
    result = host_inputs(source, "Decoder.forward", {}, {7: {"GS402"}})
    assert result.producers == {} and result.refused[0][1].endswith(
        "; line 3, which it depends on, is not an assignment of names (it may bind them on some paths only): the core "
        "keeps it")
