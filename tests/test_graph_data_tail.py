"""`graph` hands the wrapper what no graph can hold but the step's inputs and outputs allow:
a data-dependent tail (decoded lists, masked selections only the return reads: rewriters/data_tail.py),
timing events (rewriters/timing_events.py), a host size read that trims a step input
(rewriters/trimmed_inputs.py) and a `@torch.compile` decorator (rewriters/compiled_region.py).
Each rewritten program computes the original's results over several calls with changing inputs,
on CPU; the core also through graphed() with CUDA graphs simulated (tests/runtime/cpu_graph.py)."""

from __future__ import annotations

import importlib.util
import json
import sys
import textwrap

import pytest

from graphsafe.rewriters.compiled_region import uncompiled_region
from graphsafe.rewriters.timing_events import timing_event_lines
from tests.helpers import run_cli

torch = pytest.importorskip("torch")

TAIL = textwrap.dedent('''\
    import torch


    def decode(scores):
        keep = scores > scores.mean()
        hyps = [row[k].tolist() for row, k in zip(scores, keep)]
        picked = torch.masked_select(scores, keep)
        return hyps, picked


    class Tagger:
        def __init__(self):
            torch.manual_seed(0)
            self.proj = torch.nn.Linear(4, 3)

        def step(self, x):
            if x.is_cuda:
                start = torch.cuda.Event(enable_timing=True)
                start.record()
            scores = torch.tanh(self.proj(x))
            hyps, picked = decode(scores)
            return hyps, picked.mean(), scores
''')

TRIM = textwrap.dedent('''\
    import torch


    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            torch.manual_seed(0)
            self.conv = torch.nn.Conv1d(3, 2, 3, padding=1)

        def forward(self, x: torch.Tensor, lengths: torch.Tensor):
            """x: (B, 3, T) padded; lengths: (B,) valid frames."""
            n = int(lengths.max())
            x = x[:, :, :n]
            return self.conv(x), lengths * 2


    def step(net: Net, x, lengths):
        out, doubled = net(x, lengths)
        return out.sum(-1), doubled
''')


def _graph(tmp_path, capsys, source, region, name="prog"):
    folder = tmp_path / "graphed"
    folder.mkdir()
    (folder / f"{name}.py").write_text(source, encoding="utf-8")
    code, out, err = run_cli(capsys, "graph", str(folder), "--region", region, "--no-cache", "--json")
    return json.loads(out), folder / f"{name}.py"


def _load(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    finally:
        del sys.modules[name]
    return module


def test_a_decoded_list_and_a_masked_selection_only_the_return_reads_run_after_the_core(tmp_path, capsys):
    summary, graphed_file = _graph(tmp_path, capsys, TAIL, "Tagger.step")
    assert summary["blocking"] == []
    assert summary["epilogue_lines"] == [21] and summary["host_return"], summary
    text = graphed_file.read_text(encoding="utf-8")
    core = text[text.index("def step_core"):]
    assert "decode(" not in core and "masked_select" not in text[text.index("def step("):text.index("def step_core")]
    (tmp_path / "original.py").write_text(TAIL, encoding="utf-8")
    original, rewritten = _load(tmp_path / "original.py", "tail_original"), _load(graphed_file, "tail_graphed")
    a, b = original.Tagger(), rewritten.Tagger()
    generator = torch.Generator().manual_seed(1)
    for _ in range(4):
        x = torch.randn(3, 4, generator=generator)
        (hyps, mean, scores), (hyps2, mean2, scores2) = a.step(x), b.step(x)
        assert hyps == hyps2 and torch.equal(mean, mean2) and torch.equal(scores, scores2)


def test_the_core_left_by_the_tail_replays_and_the_wrapper_decodes_each_replay(tmp_path, capsys, monkeypatch):
    from graphsafe.runtime import graphed
    from tests.runtime.cpu_graph import simulate_cuda_graphs

    _, graphed_file = _graph(tmp_path, capsys, TAIL, "Tagger.step")
    (tmp_path / "original.py").write_text(TAIL, encoding="utf-8")
    original, rewritten = _load(tmp_path / "original.py", "tail_original2"), _load(graphed_file, "tail_graphed2")
    simulate_cuda_graphs(monkeypatch)
    a, b = original.Tagger(), rewritten.Tagger()
    b.step_core = graphed(b.step_core, nvtx_ranges=False)
    generator = torch.Generator().manual_seed(2)
    with torch.no_grad():
        for _ in range(5):
            x = torch.randn(3, 4, generator=generator)
            (hyps, mean, _), (hyps2, mean2, _) = a.step(x), b.step(x)
            assert hyps == hyps2 and torch.equal(mean, mean2)
    assert b.step_core.stats["replays"] >= 3 and b.step_core.stats["eager"] == 0, b.step_core.stats


def test_timing_events_made_and_recorded_in_a_branch_are_host_lines():
    source = TAIL.replace("            scores = torch.tanh", "            other.record()\n            scores = torch.tanh")
    lines = timing_event_lines(source, "Tagger.step")
    assert sorted(lines) == [17, 18, 19] and lines[17] == {"GS106"}
    assert 20 not in lines  # `other` is no event the step made


def test_a_host_size_read_that_trims_an_input_moves_to_the_wrapper(tmp_path, capsys):
    summary, graphed_file = _graph(tmp_path, capsys, TRIM, "step")
    assert summary["blocking"] == [] and summary["options"] == {"pad": False, "shapes": 16}, summary
    assert any("the wrapper now trims it before the core" in n for n in summary["notes"]), summary["notes"]
    text = graphed_file.read_text(encoding="utf-8")
    wrapper = text[text.index("def step("):text.index("def step_core")]
    assert "x_trimmed = x[:, :, :int(lengths.max())]" in wrapper and "step_core(net, x_trimmed, lengths)" in wrapper
    (tmp_path / "original.py").write_text(TRIM, encoding="utf-8")
    original, rewritten = _load(tmp_path / "original.py", "trim_original"), _load(graphed_file, "trim_graphed")
    a, b = original.Net(), rewritten.Net()
    generator = torch.Generator().manual_seed(3)
    for _ in range(4):
        x, lengths = torch.randn(2, 3, 9, generator=generator), torch.randint(3, 10, (2,), generator=generator)
        for got, expected in zip(b_step(rewritten, b, x, lengths), original.step(a, x, lengths)):
            assert torch.equal(got, expected)


def b_step(module, net, x, lengths):
    return module.step(net, x, lengths)


def test_a_trimmed_core_replays_a_graph_of_its_own_for_each_trimmed_length(tmp_path, capsys, monkeypatch):
    from graphsafe.runtime import graphed
    from tests.runtime.cpu_graph import simulate_cuda_graphs

    summary, graphed_file = _graph(tmp_path, capsys, TRIM, "step")
    (tmp_path / "original.py").write_text(TRIM, encoding="utf-8")
    original, rewritten = _load(tmp_path / "original.py", "trim_original2"), _load(graphed_file, "trim_graphed2")
    simulate_cuda_graphs(monkeypatch)
    a, b = original.Net(), rewritten.Net()
    rewritten.step_core = graphed(rewritten.step_core, nvtx_ranges=False, **summary["options"])
    generator = torch.Generator().manual_seed(4)
    maxima = [7, 7, 5, 7, 9, 7]
    with torch.no_grad():
        for top in maxima:
            x = torch.randn(2, 3, 9, generator=generator)
            lengths = torch.tensor([top, 2])
            for got, expected in zip(rewritten.step(b, x, lengths), original.step(a, x, lengths)):
                torch.testing.assert_close(got, expected, rtol=0, atol=0)
    stats = rewritten.step_core.stats
    # the wiring asks for shapes=16: 7 gets the first graph, 5 and 9 graphs of their own; no call eager
    assert stats["eager"] == 0 and stats["replays"] == 6 and stats["other_shapes"] == 2, stats


def test_a_compile_decorator_on_the_region_becomes_a_comment_and_keeps_the_line_count():
    source = "import torch\n\n\n@torch.compile(mode='reduce-overhead')\n@torch.no_grad()\ndef step(x):\n    return x\n"
    new, note = uncompiled_region(source, "step")
    assert new.splitlines()[3].startswith("# graphsafe: @torch.compile(mode='reduce-overhead') removed")
    assert len(new.splitlines()) == len(source.splitlines()) and "@torch.no_grad()" in new
    assert note and "line 4" in note
    spread = source.replace("(mode='reduce-overhead')", "(\n    mode='reduce-overhead',\n)")
    assert uncompiled_region(spread, "step")[0] == spread
    assert uncompiled_region(source.replace("@torch.compile(mode='reduce-overhead')\n", ""), "step") == (
        source.replace("@torch.compile(mode='reduce-overhead')\n", ""), None)


def _evaluate_module(directory):
    sys.path.insert(0, str(directory))
    try:
        return importlib.import_module("evaluate")
    finally:
        sys.path.remove(str(directory))


def _unload(directory):
    for name in [m for m, v in list(sys.modules.items()) if str(directory) in str(getattr(v, "__file__", "") or "")]:
        del sys.modules[name]


def test_speech_evals_own_loop_replays_a_graph_per_trimmed_length(tmp_path, monkeypatch):
    """corpus/speech_eval's evaluate() trims each batch to its longest utterance (10..20 frames): with
    the wiring `graph` prints (shapes=16) every call replays, and the loop computes the original's
    numbers (before shapes=, 2 replays and 10 eager calls of 12)."""
    from graphsafe.graph_command import wiring_options
    from graphsafe.runtime import graphed
    from tests import finish
    from tests.runtime.cpu_graph import simulate_cuda_graphs

    program = finish.CORPUS / "speech_eval"
    target, result = finish.graphed_copy(program, tmp_path)
    options = wiring_options(result.split, result.blocking, result.shapes_vary)
    assert options == {"pad": False, "shapes": 16}
    try:
        expected = _evaluate_module(program).evaluate(12, 0, torch.device("cpu"))  # before torch.cuda is faked
    finally:
        _unload(program)
    simulate_cuda_graphs(monkeypatch)
    try:
        module = _evaluate_module(target)
        module.eval_step_core = graphed(module.eval_step_core, nvtx_ranges=False, **options)
        assert module.evaluate(12, 0, torch.device("cpu")) == expected
        stats = module.eval_step_core.stats
    finally:
        _unload(target)
    assert stats["replays"] == 12 and stats["eager"] == 0 and stats["other_shapes"] >= 2, stats


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_speech_evals_own_loop_replays_a_cuda_graph_per_trimmed_length(tmp_path):
    """The same loop on a GPU: the graphed core (real captures, one per trimmed length) against the
    split program's eager core, same seeds."""
    from graphsafe.graph_command import wiring_options
    from graphsafe.runtime import graphed
    from tests import finish

    target, result = finish.graphed_copy(finish.CORPUS / "speech_eval", tmp_path)
    options = wiring_options(result.split, result.blocking, result.shapes_vary)
    try:
        module = _evaluate_module(target)
        expected = module.evaluate(12, 0, torch.device("cuda"))
        module.eval_step_core = graphed(module.eval_step_core, **options)
        got = module.evaluate(12, 0, torch.device("cuda"))
        stats = module.eval_step_core.stats
    finally:
        _unload(target)
    assert got == pytest.approx(expected, rel=1e-5), (got, expected)
    assert stats["replays"] == 12 and stats["eager"] == 0 and stats["other_shapes"] >= 2, stats
