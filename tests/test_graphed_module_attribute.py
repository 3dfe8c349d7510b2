"""A module attribute rebound to `make_graphed_callables(self.m, ...)` keeps its class: calls on it
still reach the module's forward, so hazards there are reported from the regions that call it."""

from __future__ import annotations

import textwrap

from tests.helpers import diagnostics

DECODER = """\
    import torch
    from torch import nn
    from torch.utils.checkpoint import checkpoint


    class Decoder(nn.Module):
        def __init__(self, mean):
            super().__init__()
            self.mean = mean
            self.proj = nn.Linear(4, 4)

        def forward(self, z: torch.Tensor) -> torch.Tensor:
            mean = torch.tensor(self.mean, device=z.device)
            return checkpoint(self.proj, z + mean, use_reentrant=False, preserve_rng_state=True)


    class Pipe:
        def __init__(self, mean):
            self.decoder = Decoder(mean).cuda().eval()
            self.graph = torch.cuda.CUDAGraph()

        def {graph_method}(self):
            sample = torch.zeros(2, 4, device="cuda")
            self.decoder = {wrapper}

        def step(self, x: torch.Tensor) -> torch.Tensor:
            return self.decoder(x) * 2

        def capture(self, x: torch.Tensor):
            with torch.cuda.graph(self.graph):
                self.out = self.step(x)
"""


def _found(wrapper: str, graph_method: str = "graph_decoder") -> set[tuple[str, int]]:
    source = textwrap.dedent(DECODER).replace("{wrapper}", wrapper).replace("{graph_method}", graph_method)
    return {(d.code, d.start.line) for d in diagnostics(source) if d.code in ("GS402", "GS603")}


def test_a_graphed_module_attribute_still_reaches_its_forward():
    assert _found("torch.cuda.make_graphed_callables(self.decoder, (sample,))") == {("GS402", 13), ("GS603", 14)}


def test_transformer_engine_make_graphed_callables_keeps_the_class_too():
    found = _found("__import__('transformer_engine.pytorch').pytorch.make_graphed_callables(self.decoder, (sample,))")
    assert found == set()  # an unresolvable callee says nothing about the attribute: silent
    source = "    import transformer_engine.pytorch as te\n" + DECODER
    source = textwrap.dedent(source).replace("{wrapper}", "te.make_graphed_callables(self.decoder, (sample,))")
    source = source.replace("{graph_method}", "graph_decoder")
    assert {(d.code, d.start.line) for d in diagnostics(source) if d.code in ("GS402", "GS603")} == {
        ("GS402", 14), ("GS603", 15)}


def test_graphing_a_tuple_of_callables_does_not_give_the_attribute_a_class():
    # a tuple of callables returns a tuple: the attribute is not the module any more
    assert _found("torch.cuda.make_graphed_callables((self.decoder,), ((sample,),))") == set()


def test_a_compiled_module_attribute_still_reaches_its_forward():
    found = _found("torch.compile(self.decoder)")  # default mode: not a region itself
    assert found == {("GS402", 13), ("GS603", 14)}  # reached from the capture block through step


def test_a_compiled_function_gives_the_attribute_no_class():
    assert _found("torch.compile(torch.sin)") == set()
