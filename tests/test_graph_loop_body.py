"""A loop whose exit reads the device (`if done.all(): break`): `graph` moves its body into a
function and graphs that (rewriters/loop_body.py, graph_loop.py); the loop and its exit stay
eager. The extracted and the graph-written programs compute what the original computed (CPU)."""

from __future__ import annotations

import json
import textwrap

import torch

from graphsafe.rewriters.boundary import split_region
from graphsafe.rewriters.loop_body import exit_loops, extract_loop_body
from tests.helpers import run_cli

DECODER = textwrap.dedent('''\
    import torch


    class Greedy:
        def __init__(self, eos=3):
            torch.manual_seed(0)
            self.embed = torch.nn.Embedding(8, 4)
            self.out = torch.nn.Linear(4, 8)
            self.eos = eos

        @torch.no_grad()
        def forward(self, enc, max_steps):
            tokens = torch.zeros(enc.shape[0], dtype=torch.long)
            done = torch.zeros(enc.shape[0], dtype=torch.bool)
            hidden = enc
            steps = []
            for step in range(max_steps):
                hidden = torch.tanh(hidden + self.embed(tokens))
                logits = self.out(hidden)
                tokens = logits.argmax(-1)
                scores = torch.log_softmax(logits, -1)
                steps.append(scores)
                done = done | (tokens == self.eos)
                scores[done] = -torch.inf
                if done.all():
                    break
            return torch.stack(steps, 1), tokens
''')


def _decode(source: str, inputs) -> list:
    namespace: dict = {}
    exec(compile(source, "<program>", "exec"), namespace)
    searcher = namespace["Greedy"]()
    return [searcher.forward(enc, n) for enc, n in inputs]


def _inputs():
    gen = torch.Generator().manual_seed(2)
    return [(torch.randn(3, 4, generator=gen) * scale, n) for scale, n in ((1.0, 6), (3.0, 9), (0.1, 1), (5.0, 12))]


def _same(a, b) -> bool:
    return all(torch.equal(x, y) for (xs, xt), (ys, yt) in zip(a, b) for x, y in ((xs, ys), (xt, yt)))


def test_a_loop_that_breaks_at_its_end_is_found_with_its_exit_lines():
    assert exit_loops(DECODER, "Greedy.forward") == [(17, [25, 26])]


def test_the_loop_body_moves_into_a_method_that_returns_what_later_code_reads():
    body, why = extract_loop_body(DECODER, "Greedy.forward", 17)
    assert why == "" and body.body_name == "Greedy.forward_body"
    assert body.parameters == ["self", "hidden", "tokens", "steps", "done"]
    assert body.results == ["done", "hidden", "tokens"]  # `logits`, `scores` are the body's own
    assert "done, hidden, tokens = self.forward_body(hidden, tokens, steps, done)" in body.source
    assert _same(_decode(DECODER, _inputs()), _decode(body.source, _inputs()))


def test_a_body_that_returns_or_binds_a_name_on_some_paths_only_is_refused_with_the_line():
    returns = DECODER.replace("            steps.append(scores)\n",
                              "            if step > 5:\n                return None\n            steps.append(scores)\n")
    assert extract_loop_body(returns, "Greedy.forward", 17)[0] is None
    assert "`return`" in extract_loop_body(returns, "Greedy.forward", 17)[1]
    partial = DECODER.replace("            tokens = logits.argmax(-1)\n",
                              "            tokens = logits.argmax(-1)\n            if step == 0:\n"
                              "                first = tokens\n").replace("return torch.stack(steps, 1), tokens",
                                                                             "return torch.stack(steps, 1), first")
    body, why = extract_loop_body(partial, "Greedy.forward", 17)
    assert body is None and "`first` is bound on some paths" in why


def test_an_append_moves_after_in_place_writes_of_what_it_appends_but_not_after_a_rebinding():
    body, _ = extract_loop_body(DECODER, "Greedy.forward", 17)
    line = next(i for i, text in enumerate(body.source.splitlines(), 1) if "steps.append" in text)
    append = {line: {"GS503"}}  # `steps.append(scores)` in forward_body: host work
    split = split_region(body.source, "Greedy.forward_body", append)
    assert split.source is not None and split.moved == 1  # `scores[done] = -inf` is in place: the list sees it
    rebinding = body.source.replace("scores[done] = -torch.inf", "scores = scores.masked_fill(done[:, None], -1.0)")
    assert split_region(rebinding, "Greedy.forward_body", append).moved == 0


def test_graph_graphs_the_loop_body_and_the_written_program_decodes_the_same(tmp_path, capsys):
    program = tmp_path / "greedy.py"
    program.write_text(DECODER, encoding="utf-8")
    code, out, err = run_cli(capsys, "graph", str(program), "--region", "Greedy.forward", "--no-cache", "--json")
    summary = json.loads(out)
    assert summary["core"] == "Greedy.forward_body_core"
    assert summary["wire"]["name"] == "forward_body_core" and summary["wire"]["owner"] == "Greedy"
    assert any("the loop's exit reads the device (line 25)" in n for n in summary["notes"])
    assert summary["blocking"] == []
    written = program.read_text(encoding="utf-8")
    assert "def forward_body_core(self" in written and "if done.all():" in written
    assert _same(_decode(DECODER, _inputs()), _decode(written, _inputs()))


def test_a_while_loop_on_device_data_moves_its_whole_body():
    source = textwrap.dedent('''\
        import torch


        def decode(x, limit):
            done = torch.zeros(x.shape[0], dtype=torch.bool)
            n = 0
            while not done.all() and n < limit:
                x = x * 0.5 + 1.0
                done = done | (x > 1.9)
                n += 1
            return x, n
    ''')
    assert exit_loops(source, "decode") == [(7, [7])]
    body, why = extract_loop_body(source, "decode", 7)
    assert why == "" and body.body_name == "decode_body" and body.results == ["done", "n", "x"]
    assert "done, n, x = decode_body(x, done, n)" in body.source
    run = {}
    for name, text in (("orig", source), ("body", body.source)):
        namespace: dict = {}
        exec(compile(text, name, "exec"), namespace)
        run[name] = [namespace["decode"](torch.linspace(0, 1.5, 4), limit) for limit in (1, 3, 50)]
    assert all(torch.equal(a[0], b[0]) and a[1] == b[1] for a, b in zip(run["orig"], run["body"]))


MARKED = textwrap.dedent('''\
    import torch


    class Sampler:
        def __init__(self):
            torch.manual_seed(0)
            self.net = torch.nn.Linear(4, 4)

        @torch.no_grad()
        def sample(self, x, steps):
            hist = []
            for i in range(steps):  # graphsafe: region
                x = torch.tanh(self.net(x)) * 0.9 + x * 0.1
                hist.append(x.sum())
            return x, torch.stack(hist)
''')


def test_a_loop_marked_as_the_region_is_found_by_its_comment():
    from graphsafe.rewriters.loop_body import marked_loops

    assert marked_loops(MARKED, "Sampler.sample") == [12]
    assert marked_loops(MARKED.replace("  # graphsafe: region", ""), "Sampler.sample") == []


def test_graph_graphs_the_body_of_a_loop_marked_as_the_region_and_the_program_computes_the_same(tmp_path, capsys):
    program = tmp_path / "sampler.py"
    program.write_text(MARKED, encoding="utf-8")
    code, out, err = run_cli(capsys, "graph", str(program), "--region", "Sampler.sample", "--no-cache", "--json")
    summary = json.loads(out)
    assert summary["core"].startswith("Sampler.sample_body")
    assert any("the loop is marked as the region" in n for n in summary["notes"])
    written = program.read_text(encoding="utf-8")
    assert "def sample_body" in written and "for i in range(steps):" in written

    def run(source: str) -> list:
        namespace: dict = {}
        exec(compile(source, "<program>", "exec"), namespace)
        sampler = namespace["Sampler"]()
        gen = torch.Generator().manual_seed(3)
        return [sampler.sample(torch.randn(2, 4, generator=gen), n) for n in (1, 3, 7)]

    assert all(torch.equal(a[0], b[0]) and torch.equal(a[1], b[1]) for a, b in zip(run(MARKED), run(written)))
