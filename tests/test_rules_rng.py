"""GS6xx on whole programs: custom generators, seeding and checkpointing inside capture regions."""

from __future__ import annotations

import textwrap


from graphsafe.config import Settings
from graphsafe.fixer import fix_text
from tests.helpers import codes, diagnostics


def found(source: str, prefix: str = "GS6") -> list[tuple[str, int, tuple[str, ...]]]:
    return [(d.code, d.start.line, d.chain) for d in diagnostics(textwrap.dedent(source)) if d.code.startswith(prefix)]


DECODE = """\
import torch

torch.manual_seed(0)


def sample(logits, temperature: float):
    probs = (logits / temperature).softmax(-1)
    return torch.multinomial(probs, 1, generator=gen)


def decode_step(model, tokens):
    logits = model(tokens)[:, -1]
    return sample(logits, 0.8)


def main(model):
    tokens = torch.zeros(1, 16, dtype=torch.long, device="cuda")
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        out = decode_step(model, tokens)
    return g, out


gen = torch.Generator(device="cuda")
gen.manual_seed(1234)
"""


def test_unregistered_generator_defined_below_its_use():
    d = [d for d in diagnostics(DECODE) if d.code == "GS601"]
    assert len(d) == 1
    assert (d[0].start.line, d[0].start.column) == (8, 49)  # the `gen` of generator=gen
    assert d[0].chain == ("torch.cuda.graph block in main (line 19)", "decode_step", "sample")
    assert d[0].message == (
        "generator `gen` is a CUDA generator that no graph registers "
        "(`graph.register_generator_state(gen)`): capture fails"
    )


def test_module_level_seeding_is_not_in_the_region():
    assert [c for c in codes(DECODE) if c == "GS602"] == []


def test_registering_the_generator_silences_it():
    registered = DECODE.replace("    g = torch.cuda.CUDAGraph()\n",
                                "    g = torch.cuda.CUDAGraph()\n    g.register_generator_state(gen)\n")
    assert found(registered) == []


def test_cpu_generator_is_fine():
    cpu = DECODE.replace('gen = torch.Generator(device="cuda")', "gen = torch.Generator()")
    assert found(cpu) == []


SAMPLER = """\
import torch
from torch import nn


class Sampler(nn.Module):
    def __init__(self, seed: int):
        super().__init__()
        self.gen = torch.Generator(device=f"cuda:{torch.cuda.current_device()}")
        self.gen.manual_seed(seed)

    def forward(self, logits):
        self.gen.manual_seed(0)
        noise = torch.rand(logits.shape, generator=self.gen, device=logits.device)
        return (logits - torch.log(-torch.log(noise))).argmax(-1)


def capture(sampler: Sampler, logits):
    g = torch.cuda.CUDAGraph()
    REGISTER
    with torch.cuda.graph(g):
        ids = sampler(logits)
    return g, ids
"""


def test_generator_attribute_registered_elsewhere_is_matched_by_name():
    unregistered = SAMPLER.replace("REGISTER", "pass")
    region = "torch.cuda.graph block in capture (line 20)"
    assert found(unregistered) == [
        ("GS602", 12, (region, "Sampler.forward")),  # self.gen.manual_seed(0) in forward
        ("GS601", 13, (region, "Sampler.forward")),
    ]
    registered = SAMPLER.replace("REGISTER", "g.register_generator_state(sampler.gen)")
    assert [c for c, _, _ in found(registered)] == ["GS602"]


def test_seeding_reached_from_a_region():
    source = """
        import random

        import numpy as np
        import torch


        def reseed(seed):
            torch.manual_seed(seed)
            random.seed(seed)
            np.random.seed(seed)


        def setup():
            reseed(0)  # not reachable: fine


        def step(x: torch.Tensor):  # graphsafe: region
            reseed(1)
            return torch.nn.functional.dropout(x, 0.1)
    """
    assert found(source) == [("GS602", line, ("step", "reseed")) for line in (9, 10, 11)]
    assert "replays never reseed" in diagnostics(textwrap.dedent(source))[0].message


CHECKPOINTED = """\
import torch
from torch import nn
from torch.utils.checkpoint import checkpoint


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.ff = nn.Sequential(nn.Linear(8, 8), nn.Dropout(0.1))

    def forward(self, x):
        return x + self.ff(x)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = nn.ModuleList([Block() for _ in range(4)])

    def forward(self, x):
        for block in self.blocks:
            x = checkpoint(block, x, use_reentrant=False)  # keep this comment
        return x


def build(x):
    net = Net().cuda()
    return torch.cuda.make_graphed_callables(net, (x,))
"""


def test_checkpoint_in_graphed_module():
    d = [d for d in diagnostics(CHECKPOINTED) if d.code == "GS603"]
    assert [(x.start.line, x.chain) for x in d] == [(22, ("Net.forward",))]
    assert d[0].fix is not None and d[0].fix.applicability.value == "unsafe"
    assert "torch before 2.10" in d[0].message


def test_checkpoint_fix_is_unsafe_keeps_the_comment_and_is_idempotent():
    untouched = fix_text(CHECKPOINTED, "net.py", Settings(), [], unsafe=False)
    assert untouched.fixed == CHECKPOINTED  # unsafe: not without --unsafe-fixes
    fixed = fix_text(CHECKPOINTED, "net.py", Settings(), [], unsafe=True)
    assert fixed.error is None
    assert fixed.fixed == CHECKPOINTED.replace(
        "use_reentrant=False)  # keep", "use_reentrant=False, preserve_rng_state=False)  # keep"
    )
    assert [c for c in codes(fixed.fixed) if c == "GS603"] == []
    again = fix_text(fixed.fixed, "net.py", Settings(), [], unsafe=True)
    assert again.fixed == fixed.fixed


def test_checkpoint_true_is_turned_false_and_false_or_kwargs_are_left_alone():
    source = """
        import torch
        from torch.utils.checkpoint import checkpoint, checkpoint_sequential


        def step(blocks, x: torch.Tensor, opts: dict):  # graphsafe: region
            a = checkpoint(blocks[0], x, use_reentrant=False, preserve_rng_state=True)
            b = checkpoint(blocks[1], x, use_reentrant=False, preserve_rng_state=False)
            c = checkpoint(blocks[2], x, **opts)
            return checkpoint_sequential(blocks, 2, a + b + c, use_reentrant=False)
    """
    source = textwrap.dedent(source)
    assert [(c, line) for c, line, _ in found(source)] == [("GS603", 7), ("GS603", 10)]
    fixed = fix_text(source, "s.py", Settings(), [], unsafe=True).fixed
    assert "use_reentrant=False, preserve_rng_state=False)\n    b =" in fixed
    assert "checkpoint_sequential(blocks, 2, a + b + c, use_reentrant=False, preserve_rng_state=False)" in fixed


def test_checkpoint_fix_keeps_a_multiline_call_layout():
    source = textwrap.dedent("""
        import torch


        def step(blocks, x: torch.Tensor):  # graphsafe: region
            return torch.utils.checkpoint.checkpoint_sequential(
                blocks,
                2,
                x,
            )
    """)
    fixed = fix_text(source, "s.py", Settings(), [], unsafe=True).fixed
    assert fixed == source.replace("        x,\n", "        x,\n        preserve_rng_state=False,\n")
