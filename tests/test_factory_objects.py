"""Objects a region reaches through factories, lists of them and loops over several sequences.

Shapes from streaming generation (incremental WaveNet): per-layer queues built by an
unannotated factory in another file (`return Ring(n)` or `return Shift(n)`), kept in a list
built by a comprehension, and advanced in a `for layer, queue in zip(self.model.layers,
self.queues)` loop that also calls a method of each layer of a model defined elsewhere. Each
case has a look-alike that must stay silent.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

from graphsafe.analyzer.engine import check_paths
from graphsafe.config import Settings

LAYERS = """
import torch
from torch import nn


class Ring:
    def __init__(self, n: int):
        self.buf = torch.zeros(4, n)
        self.head = 0

    def push_pop(self, x):
        old = self.buf[:, self.head].clone()
        self.head = (self.head + 1) % 4
        return old


class Shift:
    def __init__(self, n: int):
        self.buf = torch.zeros(4, n)

    def push_pop(self, x):
        old = self.buf[:, 0]
        self.buf = torch.roll(self.buf, shifts=-1, dims=1)
        return old


def make_queue(n: int):
    if n <= 2:
        return Shift(n)
    return Ring(n)


class Layer(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def incremental(self, x, past):
        return self.lin(x) * torch.tensor(0.5, device=x.device) + past
"""

MODEL = """
from torch import nn
from layers import Layer


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList([Layer() for _ in range(3)])
"""

# What the region reaches in layers.py: the ring's index and counter, the shift's rebinding,
# the layer's host constant.
QUEUE_HITS = {("layers.py", 12, "GS301"), ("layers.py", 13, "GS302"), ("layers.py", 23, "GS401")}
LAYER_HIT = {("layers.py", 39, "GS402")}


def write(tmp_path: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        (tmp_path / name).write_text(textwrap.dedent(text))


def found(tmp_path: Path) -> set[tuple[str, int, str]]:
    result = check_paths([tmp_path], Settings(root=tmp_path), use_cache=False, jobs=1)
    return {(Path(d.path).name, d.start.line, d.code) for d in result.diagnostics}


def streamer(init: str, body: str) -> str:
    return (
        "import torch\nfrom layers import make_queue, Ring\nfrom model import Net\n\n\n"
        "class Streamer:\n    def __init__(self, model: Net):\n        self.model = model\n"
        + textwrap.indent(textwrap.dedent(init).strip("\n"), "        ") + "\n\n"
        + "    def step(self, x: torch.Tensor):  # graphsafe: region\n"
        + textwrap.indent(textwrap.dedent(body).strip("\n"), "        ") + "\n"
    )


def test_queues_from_a_factory_zipped_with_the_layers_of_a_model_elsewhere(tmp_path):
    write(tmp_path, {"layers.py": LAYERS, "model.py": MODEL, "streamer.py": streamer(
        "self.queues = [make_queue(d) for d in (1, 2, 4)]",
        """
        for layer, queue in zip(self.model.layers, self.queues):
            past = queue.push_pop(x)
            x = layer.incremental(x, past)
        return x
        """)})
    assert found(tmp_path) == QUEUE_HITS | LAYER_HIT


def test_one_queue_from_the_factory_in_an_attribute(tmp_path):
    write(tmp_path, {"layers.py": LAYERS, "model.py": MODEL, "streamer.py": streamer(
        "self.queue = make_queue(4)",
        "return self.queue.push_pop(x)")})
    assert found(tmp_path) == QUEUE_HITS  # either class the factory may return


def test_a_plain_list_of_project_objects_built_in_the_same_file(tmp_path):
    write(tmp_path, {"layers.py": LAYERS, "model.py": MODEL, "streamer.py": streamer(
        "self.queues = [Ring(d) for d in (3, 4)]",
        """
        for queue in self.queues:
            x = queue.push_pop(x)
        return x
        """)})
    assert found(tmp_path) == {("layers.py", 12, "GS301"), ("layers.py", 13, "GS302")}


def test_layers_through_zip_without_queues(tmp_path):
    write(tmp_path, {"layers.py": LAYERS, "model.py": MODEL, "streamer.py": streamer(
        "self.pasts = [torch.zeros(4, 4) for _ in range(3)]",
        """
        for layer, past in zip(self.model.layers, self.pasts):
            x = layer.incremental(x, past)
        return x
        """)})
    assert found(tmp_path) == LAYER_HIT


def test_queues_used_only_outside_the_region_stay_silent(tmp_path):
    write(tmp_path, {"layers.py": LAYERS, "model.py": MODEL, "streamer.py": streamer(
        "self.queues = [make_queue(d) for d in (1, 2, 4)]",
        "return self.model.layers[0].lin(x)")
        + "\n    def warm(self, x):\n"
        "        for layer, queue in zip(self.model.layers, self.queues):\n"
        "            x = layer.incremental(x, queue.push_pop(x))\n"
        "        return x\n"})
    assert found(tmp_path) == set()


def test_a_factory_that_returns_tensors_or_objects_is_not_taken_for_objects(tmp_path):
    layers = LAYERS.replace("    return Ring(n)\n", "    return torch.zeros(n)\n")
    write(tmp_path, {"layers.py": layers, "model.py": MODEL, "streamer.py": streamer(
        "self.queues = [make_queue(d) for d in (1, 2, 4)]",
        """
        for queue in self.queues:
            x = queue.push_pop(x)
        return x
        """)})
    assert found(tmp_path) == set()


def test_a_queue_from_the_factory_in_a_local(tmp_path):
    write(tmp_path, {"layers.py": LAYERS, "model.py": MODEL, "streamer.py": streamer(
        "pass",
        """
        queue = make_queue(4)
        return queue.push_pop(x)
        """)})
    assert found(tmp_path) == QUEUE_HITS


def test_a_local_from_a_factory_of_tensors_calls_nothing(tmp_path):
    layers = LAYERS + "\n\ndef make_past(n: int):\n    return torch.zeros(4, n)\n"
    write(tmp_path, {"layers.py": layers, "model.py": MODEL, "streamer.py": streamer(
        "pass",
        """
        from layers import make_past
        past = make_past(4)
        return past.push_pop(x)
        """)})
    assert found(tmp_path) == set()


def test_queues_from_the_factory_in_a_dict_by_name(tmp_path):
    write(tmp_path, {"layers.py": LAYERS, "model.py": MODEL, "streamer.py": streamer(
        "self.queues = {f'q{d}': make_queue(d) for d in (1, 2, 4)}",
        """
        for name in ('q1', 'q2', 'q4'):
            x = self.queues[name].push_pop(x)
        return x
        """)})
    assert found(tmp_path) == QUEUE_HITS


def test_queues_from_a_static_factory_method(tmp_path):
    layers = LAYERS + "\n\nclass Queues:\n    @staticmethod\n    def make(n: int):\n        return Ring(n)\n"
    write(tmp_path, {"layers.py": layers, "model.py": MODEL, "streamer.py": streamer(
        "self.queue = Queues.make(4)",
        "return self.queue.push_pop(x)").replace("import make_queue, Ring", "import make_queue, Ring, Queues")})
    assert found(tmp_path) == {("layers.py", 12, "GS301"), ("layers.py", 13, "GS302")}
