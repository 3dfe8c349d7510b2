"""Cross-file return kinds: values returned by project functions defined in other files.

The per-file walk exports each function's return summary; the project pass walks again only
the files whose rule questions depended on such calls. The re-walk is cached under the file's
content and the kinds it was given, so editing the callee invalidates the caller's result.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

from graphsafe.analyzer.engine import check_paths, check_source
from graphsafe.analyzer.returns import summarize_returns
from graphsafe.config import Settings

MODEL = """
import torch
from torch import nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x, lengths: torch.Tensor):
        out = self.lin(x)
        return out.log_softmax(-1), lengths - 1
"""

DECODE = """
import torch


def greedy(log_probs):
    pred = log_probs.argmax(-1)
    return [], pred, 0.5
"""

EVAL = """
import torch
from model import Net
from decode import greedy


@torch.compile(mode="reduce-overhead")
def eval_step(model: Net, x, lengths):
    log_probs, out_lens = model(x, lengths)
    n = int(out_lens.sum())
    hyps, pred, conf = greedy(log_probs)
    text = repr(pred[0])
    c = float(conf)
    return n, text, c
"""


def write(tmp_path: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        (tmp_path / name).write_text(textwrap.dedent(text))


def found(tmp_path: Path, cache_dir: Path | None = None) -> set[tuple[str, int, str]]:
    result = check_paths([tmp_path], Settings(root=tmp_path), use_cache=cache_dir is not None,
                         cache_dir=cache_dir, jobs=1)
    return {(Path(d.path).name, d.start.line, d.code) for d in result.diagnostics}


def test_tuple_elements_returned_by_a_module_and_a_function_in_other_files(tmp_path):
    write(tmp_path, {"model.py": MODEL, "decode.py": DECODE, "eval.py": EVAL})
    got = found(tmp_path)
    assert ("eval.py", 10, "GS105") in got  # int(out_lens.sum()): element 1 of Net.forward
    assert ("eval.py", 12, "GS104") in got  # repr(pred[0]): element 1 of greedy()
    assert ("eval.py", 13, "GS105") not in got  # conf is element 2: a Python float


def test_unknown_returns_stay_silent(tmp_path):
    write(tmp_path, {
        "model.py": MODEL.replace("return out.log_softmax(-1), lengths - 1", "return self.helper(out)"),
        "decode.py": DECODE, "eval.py": EVAL,
    })
    assert ("eval.py", 10, "GS105") not in found(tmp_path)


def test_return_annotation_and_base_class_dispatch(tmp_path):
    write(tmp_path, {
        "metric.py": """
            import torch

            class Metric:
                def compute(self) -> torch.Tensor:
                    raise NotImplementedError

                def forward(self, x):
                    self.update(x)
                    return self.compute()

            class Mean(Metric):
                def update(self, x: torch.Tensor):
                    if x.isnan().any():
                        pass
        """,
        "step.py": """
            import torch
            from metric import Mean

            class Eval:
                def __init__(self):
                    self.mean = Mean()

                def step(self, x):  # graphsafe: region
                    value = self.mean.forward(x)
                    if value > 0:
                        pass
        """,
    })
    got = found(tmp_path)
    assert ("step.py", 11, "GS201") in got  # Metric.compute is annotated -> Tensor
    assert ("metric.py", 14, "GS201") in got  # self.update() in Metric runs Mean.update


def test_cache_invalidates_callers_when_a_callee_changes(tmp_path):
    project, cache = tmp_path / "p", tmp_path / "cache"
    project.mkdir()
    write(project, {"model.py": MODEL, "decode.py": DECODE, "eval.py": EVAL})
    assert ("eval.py", 10, "GS105") in found(project, cache)
    assert ("eval.py", 10, "GS105") in found(project, cache)  # warm: same answer
    # the callee now returns a Python int as element 1: eval.py itself did not change
    write(project, {"model.py": MODEL.replace("lengths - 1", "len(lengths)")})
    assert ("eval.py", 10, "GS105") not in found(project, cache)
    write(project, {"model.py": MODEL})
    assert ("eval.py", 10, "GS105") in found(project, cache)


def test_editor_buffer_uses_other_files_summaries(tmp_path):
    write(tmp_path, {"model.py": MODEL, "decode.py": DECODE, "eval.py": EVAL})
    others = check_paths([tmp_path], Settings(root=tmp_path), use_cache=False, jobs=1).facts
    result = check_source(textwrap.dedent(EVAL), str(tmp_path / "eval.py"), Settings(root=tmp_path),
                          others=[f for f in others if not f.path.endswith("eval.py")])
    assert any(d.code == "GS105" and d.start.line == 10 for d in result.diagnostics)


def test_summaries_merge_returns():
    assert summarize_returns([("T",), ("B",)]) == ("T",)
    assert summarize_returns([("T",), ("S",)]) == ()  # a tensor on one path, None on another
    assert summarize_returns([("tuple", "T", "S"), ("tuple", "T", "S")]) == ("tuple", "T", "S")
    # a tensor on one path, a tuple of tensors on another: elements are tensors either way
    assert summarize_returns([("tuple", "T", "T"), ("T",)]) == ("either", "T", "T")
    assert summarize_returns([("T",), ("tuple", "T", "B")]) == ("either", "T", "B")
    assert summarize_returns([("tuple", "T", "S"), ("T",)]) == ()  # an element may be a number
    assert summarize_returns([("tuple", "T", "T"), ("tuple", "T"), ("T",)]) == ()  # lengths differ
    assert summarize_returns([("tuple", "T", "T"), ("S",)]) == ()  # None on one path
    assert summarize_returns([("S",)]) == ()  # nothing a caller can use


SEG_MODEL = """
import torch
from torch import nn


class Seg(nn.Module):
    def __init__(self):
        super().__init__()
        self.head = nn.Conv2d(3, 4, 1)
        self.aux = nn.Conv2d(3, 4, 1)

    def forward(self, image):
        out = self.head(image)
        if not self.training:
            return out
        return out, self.aux(image)
"""

SEG_STEP = """
import torch
from model import Seg


@torch.compile(mode="reduce-overhead")
def train_step(model: Seg, image):
    out, aux = model(image)
    background = out[:, [0]]
    whole = model(image)
    picked = whole[:, [0]]
    return background.sum() + aux.sum() + picked.sum()
"""


def test_elements_of_a_tensor_or_a_tuple_of_tensors_are_tensors(tmp_path):
    write(tmp_path, {"model.py": SEG_MODEL, "step.py": SEG_STEP})
    got = {(name, line, code) for name, line, code in found(tmp_path) if code == "GS402"}
    # `out` (element 0) is a tensor either way; `whole` may be a tuple: not known, silent
    assert got == {("step.py", 9, "GS402")}


def test_several_callers_are_walked_again_in_a_pool(tmp_path):
    write(tmp_path, {"model.py": MODEL, "decode.py": DECODE, "eval.py": EVAL, "eval2.py": EVAL})
    result = check_paths([tmp_path], Settings(root=tmp_path), use_cache=False, jobs=2)
    got = {(Path(d.path).name, d.start.line, d.code) for d in result.diagnostics}
    assert {("eval.py", 10, "GS105"), ("eval2.py", 10, "GS105")} <= got


def test_pieces_of_a_split_of_what_a_project_call_returns(tmp_path):
    step = """
        import torch
        from model import Net

        def step(model: Net, x, lengths, scale: float):  # graphsafe: region
            out, _ = model(x, lengths)
            a, b = out.{split}
            if a.sum() > 0:
                pass
            return scale * (a - b)
    """
    write(tmp_path, {"model.py": MODEL, "step.py": step.format(split="chunk(2)")})
    assert {("step.py", 8, "GS201"), ("step.py", 10, "GS301")} <= found(tmp_path)
    write(tmp_path, {"step.py": step.format(split="shape")})  # a torch.Size: numbers
    assert {d for d in found(tmp_path) if d[0] == "step.py"} == set()


def test_warm_run_reads_cached_re_walks_without_a_pool(tmp_path, monkeypatch):
    from graphsafe.analyzer import engine

    project, cache = tmp_path / "p", tmp_path / "cache"
    project.mkdir()
    write(project, {"model.py": MODEL, "decode.py": DECODE, "eval.py": EVAL, "eval2.py": EVAL})

    def run() -> set:
        result = check_paths([project], Settings(root=project), use_cache=True, cache_dir=cache, jobs=2)
        return {(Path(d.path).name, d.start.line, d.code) for d in result.diagnostics}

    cold = run()
    assert {("eval.py", 10, "GS105"), ("eval2.py", 10, "GS105")} <= cold

    def no_workers(*args, **kwargs):
        raise AssertionError("a warm run needs no worker processes")

    monkeypatch.setattr(engine, "run_jobs", no_workers)
    assert run() == cold


CACHES = """
import torch


class KVCache:
    def __init__(self):
        self.k = torch.zeros(4, 8)
        self.pos = 0

    def rollback(self, n: int) -> None:
        self.pos -= n


class LM(torch.nn.Module):
    def make_caches(self, n: int) -> {annotation}:
        return [KVCache() for _ in range(n)]
"""

DECODER = """
import torch
from lm import LM


class Decoder:
    def __init__(self, lm: LM):
        self.caches = lm.make_caches(2)

    def step(self, x: torch.Tensor):  # graphsafe: region
        for cache in self.caches:
            cache.rollback(1)
        return x
"""


def test_objects_a_method_in_another_file_is_annotated_to_return_are_followed(tmp_path):
    write(tmp_path, {"lm.py": CACHES.replace("{annotation}", "list[KVCache]"), "dec.py": DECODER})
    assert found(tmp_path) == {("lm.py", 11, "GS302")}


def test_an_unannotated_factory_in_another_file_stays_unknown(tmp_path):
    write(tmp_path, {"lm.py": CACHES.replace(" -> {annotation}", ""), "dec.py": DECODER})
    assert found(tmp_path) == set()


def test_object_returns_survive_the_cache(tmp_path):
    project, cache = tmp_path / "p", tmp_path / "cache"
    project.mkdir()
    write(project, {"lm.py": CACHES.replace("{annotation}", "list[KVCache]"), "dec.py": DECODER})
    assert found(project, cache) == {("lm.py", 11, "GS302")}
    assert found(project, cache) == {("lm.py", 11, "GS302")}  # from the cache
    write(project, {"lm.py": CACHES.replace(" -> {annotation}", "")})
    assert found(project, cache) == set()
