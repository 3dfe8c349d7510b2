"""Argument kinds: a callee's unannotated parameter takes the kind every caller passes.

`def crit(ids, scores)` says nothing about `ids`; when every call site the project resolves to
`crit` passes a tensor in that slot (by position or keyword, directly or through the caller's
own parameters), `ids` is a tensor inside `crit`. One caller passing anything else, a call that
unpacks `*args`/`**kwargs` of unknown contents, or a call that leaves the parameter to its
default keeps it unknown; `*(a, b)` spreads by position, `*pieces` of known tensors gives
tensors to every later position.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from graphsafe.analyzer.engine import check_paths
from graphsafe.config import Settings
from tests.helpers import codes

CALLEE = """
import torch


def is_done(ids, eos):
    done = ids[:, -1] == eos
    if done.all():
        pass
    return done
"""


def region(call: str, extra: str = "") -> str:
    """CALLEE plus a region that calls it (`call`) and, optionally, other code."""
    return CALLEE + textwrap.dedent(f"""

        def step(x: torch.Tensor, n: int):  # graphsafe: region
            {call}
        """) + textwrap.dedent(extra)


def branch_lines(source: str) -> list[int]:
    from tests.helpers import diagnostics

    return [d.start.line for d in diagnostics(source) if d.code == "GS201"]


@pytest.mark.parametrize("call", [
    "is_done(x, 2)",
    "is_done(ids=x, eos=2)",
    "is_done(x * 2, eos=n)",
    "is_done(*[x, 2])",  # a literal list spread by position: `ids` gets `x`
    "is_done(*x.chunk(2))",  # every position gets a piece of a tensor
    "is_done(*[t.flatten() for t in x.split(1)])",
])
def test_every_caller_passes_a_tensor(call):
    assert branch_lines(region(call)) == [7]


@pytest.mark.parametrize("call,extra", [
    ("is_done(x, 2)", "\ndef other():\n    is_done([[1, 2]], 2)\n"),  # another caller passes a list
    ("is_done(*args)", "\nargs = []\n"),  # unpacked: which argument lands in `ids` is unknown
    ("is_done(*[n, x.shape[0]])", ""),  # a literal spread by position: `ids` gets the int
    ("is_done(**{'ids': x, 'eos': 2})", ""),
    ("is_done(n, 2)", ""),  # a Python int
])
def test_one_caller_that_does_not_pass_a_tensor_keeps_it_unknown(call, extra):
    assert branch_lines(region(call, extra)) == []


def test_the_report_says_which_parameter_every_caller_passes_a_tensor():
    from tests.helpers import diagnostics

    found = [d.message for d in diagnostics(region("is_done(x, n)")) if d.code == "GS201"]
    assert len(found) == 1 and "(every call of `is_done` passes a tensor as `ids`)" in found[0]


def test_a_comparison_with_a_tensor_spread_into_the_other_slot_is_a_tensor():
    # `ids` gets the int, `eos` the tensor: `ids[:, -1] == eos` compares element-wise either way
    assert branch_lines(region("is_done(*[n, x])")) == [7]


def test_a_parameter_left_to_its_default_stays_unknown():
    source = textwrap.dedent("""
        import torch

        def scaled(x, bias=None):
            if bias:
                pass
            return x

        def step(x: torch.Tensor):  # graphsafe: region
            return scaled(x)
    """)
    assert branch_lines(source) == []


def test_methods_constructors_and_module_calls_map_slots_without_self():
    source = textwrap.dedent("""
        import torch
        from torch import nn

        class Stop:
            def __call__(self, ids, scores):
                if (ids[:, -1] == 0).any():
                    pass

        class Head(nn.Module):
            def forward(self, h):
                if h.sum() > 0:
                    pass
                return h

        class Model(nn.Module):
            def __init__(self):
                super().__init__()
                self.head = Head()
                self.stop = Stop()

            def step(self, x: torch.Tensor):  # graphsafe: region
                self.stop(x, x.softmax(-1))
                return self.head(x * 2)
    """)
    assert branch_lines(source) == [7, 12]


def test_kinds_follow_a_chain_of_unannotated_parameters_across_files(tmp_path: Path):
    files = {
        "crit.py": CALLEE,
        "loop.py": """
            import torch
            from crit import is_done

            def check(tokens, eos):
                return is_done(tokens, eos)

            def step(x: torch.Tensor):  # graphsafe: region
                return check(x.argmax(-1), 2)
        """,
    }
    for name, text in files.items():
        (tmp_path / name).write_text(textwrap.dedent(text))
    result = check_paths([tmp_path], Settings(root=tmp_path), use_cache=False, jobs=1)
    assert {(Path(d.path).name, d.start.line, d.code) for d in result.diagnostics} == {("crit.py", 7, "GS201")}


def test_cache_follows_a_caller_that_changes_what_it_passes(tmp_path: Path):
    project, cache = tmp_path / "p", tmp_path / "cache"
    project.mkdir()
    (project / "crit.py").write_text(CALLEE)
    step = "import torch\nfrom crit import is_done\n\ndef step(x: torch.Tensor, n: int):  # graphsafe: region\n    is_done({}, 2)\n"

    def found() -> set:
        result = check_paths([project], Settings(root=project), use_cache=True, cache_dir=cache, jobs=1)
        return {(Path(d.path).name, d.start.line, d.code) for d in result.diagnostics}

    (project / "step.py").write_text(step.format("x"))
    assert ("crit.py", 7, "GS201") in found()
    (project / "step.py").write_text(step.format("n"))  # crit.py itself did not change
    assert ("crit.py", 7, "GS201") not in found()


def test_unreached_callers_still_count():
    # a caller outside any region passing a number decides too: precision before recall
    extra = "\ndef log_only():\n    is_done(3, 2)\n"
    assert codes(region("is_done(x, 2)", extra)) == []


STREAMER = """
import torch


class Streamer:
    def __init__(self):
        self.tokens = []

    def put(self, value: torch.Tensor):
        if value.dim() > 1:
            value = value[0]
        return value.tolist(), value[0].item(), int(value.sum())


class Decoder:
    def __init__(self):
        self.streamer = Streamer()

    def step(self, logits: torch.Tensor):  # graphsafe: region
        tokens = logits.argmax(-1)
        {calls}
        return tokens
"""


def sync_codes(calls: str) -> list[tuple[int, str]]:
    from tests.helpers import diagnostics

    source = STREAMER.replace("{calls}", calls)
    return sorted((d.start.line, d.code) for d in diagnostics(source) if d.code in ("GS101", "GS102", "GS105"))


def test_reading_a_host_tensor_that_every_caller_passes_is_no_sync():
    assert sync_codes("self.streamer.put(tokens[:1].cpu())") == []
    assert sync_codes('host = tokens.to("cpu")\n        self.streamer.put(host)') == []


def test_one_caller_passing_a_device_tensor_keeps_the_syncs():
    calls = "self.streamer.put(tokens[:1].cpu())\n        self.streamer.put(tokens)"
    assert sync_codes(calls) == [(12, "GS101"), (12, "GS102"), (12, "GS105")]


STAR_AGENT = """
import torch
from buffer import sample


class Agent:
    def __init__(self):
        self.static = None

    def update(self, obs, done):
        if done.any():
            obs = obs * 2
        return obs

    def capture(self, batch: tuple[torch.Tensor, ...]):
        self.static = {static}
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            self.update(*self.static)

    def eager(self):
        return self.update(*{eager})
"""

BUFFER = """
import torch


class Buffer:
    def __init__(self):
        self.obs = torch.zeros(8, 3)
        self.done = torch.zeros(8, 1)


BUF = Buffer()


def sample():
    idx = torch.randint(0, 8, (4,))
    return BUF.obs[idx], BUF.done[idx]
"""


@pytest.mark.parametrize(("static", "eager"), [
    ("[t.to('cuda') for t in batch]", "(t.to('cuda') for t in sample())"),
    ("tuple(t.cuda() for t in batch)", "sample()"),
    ("list(batch)", "[t.clone() for t in sample()]"),
    # an eager fallback that spreads a batch of unknown contents says nothing against it
    ("[t.to('cuda') for t in batch]", "self.rows"),
])
def test_a_step_given_spread_tuples_of_tensors_takes_tensors(tmp_path, static, eager):
    (tmp_path / "agent.py").write_text(STAR_AGENT.format(static=static, eager=eager))
    (tmp_path / "buffer.py").write_text(BUFFER)
    result = check_paths([tmp_path], Settings(root=tmp_path), use_cache=False, jobs=1)
    assert {(Path(d.path).name, d.start.line, d.code) for d in result.diagnostics} == {("agent.py", 11, "GS201")}


@pytest.mark.parametrize(("static", "eager"), [
    ("[t.to('cuda') for t in batch]", "(t for t in range(2))"),  # one caller spreads numbers
    ("[t.tolist() for t in batch]", "sample()"),  # lists, not tensors
])
def test_a_spread_of_anything_else_keeps_it_unknown(tmp_path, static, eager):
    (tmp_path / "agent.py").write_text(STAR_AGENT.format(static=static, eager=eager))
    (tmp_path / "buffer.py").write_text(BUFFER)
    result = check_paths([tmp_path], Settings(root=tmp_path), use_cache=False, jobs=1)
    assert [d for d in result.diagnostics if d.code == "GS201"] == []


def test_a_spread_tuple_of_a_tensor_and_a_number_gives_no_kind():
    # `args = (x, 2)` holds a tensor and an int: spreading it says nothing about `eos`
    source = CALLEE.replace("if done.all():", "if eos > 0:") + textwrap.dedent("""

        def step(x: torch.Tensor, n: int):  # graphsafe: region
            args = (x, 2)
            is_done(*args)
        """)
    assert branch_lines(source) == []
