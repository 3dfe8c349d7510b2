"""graphed()'s CUDA path run on the CPU: a stand-in for torch.cuda.graph that records the aten ops
of the capture and replays them on the same tensors, without running the step's Python again.

That is what matters for state kept in Python (attribute bindings, dict entries, list slots): a
replay reproduces the tensor work at fixed addresses and nothing else. Random ops draw again at
each replay (unlike a real graph's registered generator offsets); the tests here use none.
"""
from __future__ import annotations

import contextlib

import torch
from torch.utils._python_dispatch import TorchDispatchMode


class _Recorder(TorchDispatchMode):
    """Records each op; the tensors ops write in place are put back at the end, as a real capture
    (which runs no kernel) leaves memory as it found it. Ops reading a tensor of `host` (ids of
    tensors that stand for host memory) are host work: run, not recorded."""

    host: set[int] = set()

    def __init__(self, ops: list) -> None:
        super().__init__()
        self.ops = ops
        self.written: dict[int, tuple[torch.Tensor, torch.Tensor]] = {}

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        for i, argument in enumerate(func._schema.arguments):
            value = args[i] if i < len(args) else kwargs.get(argument.name)
            if isinstance(value, torch.Tensor) and argument.alias_info is not None and argument.alias_info.is_write \
                    and id(value) not in self.written:
                self.written[id(value)] = (value, value.detach().clone())
        out = func(*args, **kwargs)
        inputs = [a for a in (*args, *kwargs.values()) for a in (a if isinstance(a, (list, tuple)) else (a,))]
        if not any(isinstance(a, torch.Tensor) and id(a) in self.host for a in inputs):
            self.ops.append((func, args, kwargs, out))
        return out


class SimulatedGraph:
    def __init__(self) -> None:
        self.ops: list = []

    def replay(self) -> None:
        with torch.no_grad():
            for func, args, kwargs, out in self.ops:
                if func.__name__.startswith(("empty", "new_empty")):
                    continue  # an allocation, not a kernel: a replay leaves the memory as it is
                fresh = func(*args, **kwargs)
                for old, new in zip(out if isinstance(out, (tuple, list)) else (out,),
                                    fresh if isinstance(fresh, (tuple, list)) else (fresh,)):
                    if isinstance(old, torch.Tensor) and isinstance(new, torch.Tensor) and new is not old \
                            and not torch._C._is_alias_of(new, old):
                        if old.shape != new.shape:  # resized later by an `out=` op, as at capture
                            old.resize_(new.shape)
                        old.copy_(new)


class _Stream:
    def wait_stream(self, other) -> None:
        pass


@contextlib.contextmanager
def _graph(graph, pool=None, stream=None, **_):
    recorder = _Recorder(graph.ops)
    with recorder:
        yield
    with torch.no_grad():
        for tensor, value in recorder.written.values():
            if tensor.shape == value.shape:  # else resized by an `out=` op: made by the capture itself
                tensor.copy_(value)


def simulate_cuda_graphs(monkeypatch) -> None:
    """Make graphed(backend="cuda") capture and replay CPU steps with SimulatedGraph."""
    for name, value in {"is_available": lambda: True, "graph_pool_handle": lambda: (0, 0),
                        "Stream": _Stream, "current_stream": lambda *a, **k: _Stream(),
                        "stream": lambda s: contextlib.nullcontext(), "CUDAGraph": SimulatedGraph,
                        "graph": _graph, "synchronize": lambda *a, **k: None,
                        "is_current_stream_capturing": lambda: False, "current_device": lambda: 0}.items():
        monkeypatch.setattr(torch.cuda, name, value)
