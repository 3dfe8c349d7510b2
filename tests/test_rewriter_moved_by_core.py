"""Host values the core moves to the device itself (rewriters/moved_by_core.py): the maker of a
CPU value goes to the wrapper with the host copy, the core keeps its `.to` (graphed() fills that
buffer: runtime/host_arguments.py), and the split program computes what the original did, call
after call with the tokens changing (on CPU)."""
from __future__ import annotations

import textwrap

import torch

from graphsafe.rewriters.boundary import split_region
from graphsafe.rewriters.host_inputs import host_inputs
from graphsafe.rewriters.moved_by_core import device_move_note, host_values_moved_by_core

DECODER = textwrap.dedent('''\
    import torch


    class Decoder:
        def __init__(self, device="cpu"):
            gen = torch.Generator().manual_seed(0)
            self.emb = torch.randn(16, 4, generator=gen)  # on the CPU by the library's design
            self.layers = [torch.randn(4, 4, generator=gen).to(device) for _ in range(2)]
            self.devices = [device, device]

        def forward(self, tokens, state):
            with torch.no_grad():
                x = self.emb[tokens[-1]]
                for i in range(2):
                    x = x.to(dtype=torch.float32, device=self.devices[i])
                    x = torch.tanh(x @ self.layers[i]) + state[i]
                    state[i].copy_(x)
                return x
''')
MAKER, COPY = 13, 15  # `x = self.emb[...]`, `x = x.to(...)` (GS402: observed at run time on a GPU)


def _plan(source: str, own: dict[int, set[str]]):
    host_lines = {line: set(codes) for line, codes in own.items()}
    makers, moves = host_values_moved_by_core(source, "Decoder.forward", host_lines)
    for line, codes in makers.items():
        host_lines.setdefault(line, set()).update(codes)
    for line, _, _ in moves:
        host_lines[line] = host_lines[line] - {"GS402"}
    hosted = host_inputs(source, "Decoder.forward", host_lines, {})
    for line, codes in hosted.producers.items():
        host_lines.setdefault(line, set()).update(codes)
    split = split_region(hosted.source, "Decoder.forward", host_lines, {}, {}, hosted.producers)
    return makers, moves, hosted, split


def test_the_maker_of_a_host_value_the_core_moves_goes_to_the_wrapper_and_the_copy_stays():
    makers, moves, hosted, split = _plan(DECODER, {COPY: {"GS402"}})
    assert makers == {MAKER: {"GS402"}} and moves == [(COPY, MAKER, "x")]
    assert hosted.refused == []  # the loop's copy is no longer a producer refused in the loop
    wrapper, core = split.source.split("def forward_core")
    assert "x = self.emb[tokens[-1]]" in wrapper and "self.forward_core(state, x)" in wrapper
    assert "x = x.to(dtype=torch.float32, device=self.devices[i])" in core and "self.emb" not in core
    assert split.prologue_lines == [MAKER]
    assert "graphed() fills the device buffer of this `.to`" in device_move_note(COPY, MAKER, "x", True)


def test_the_split_program_decodes_what_the_original_did_call_after_call():
    _, _, _, split = _plan(DECODER, {COPY: {"GS402"}})
    outputs = []
    for source in (DECODER, split.source):
        namespace: dict = {}
        exec(compile(source, "<decoder>", "exec"), namespace)
        decoder, state = namespace["Decoder"](), [torch.zeros(4), torch.zeros(4)]
        outputs.append([decoder.forward([t % 16, (7 * t) % 16], state).clone() for t in range(5)] + state)
    assert all(torch.equal(a, b) for a, b in zip(*outputs))


def test_without_a_host_copy_on_the_to_nothing_moves():
    makers, moves, _, split = _plan(DECODER, {})
    assert makers == {} and moves == []


def test_a_host_value_read_before_the_core_moves_it_is_left_in_place():
    source = DECODER.replace("            for i in range(2):\n",
                             "            n = x.sum()\n            for i in range(2):\n")
    makers, moves, _, _ = _plan(source, {COPY + 1: {"GS402"}})
    assert makers == {} and moves == []  # `x.sum()` on the CPU would run only at capture


def test_a_copy_of_another_name_or_a_maker_with_tensor_hazards_is_not_attributed():
    other = DECODER.replace("x = x.to(dtype", "y = x.to(dtype")
    assert host_values_moved_by_core(other, "Decoder.forward", {COPY: {"GS402"}}) == ({}, [])
    assert host_values_moved_by_core(DECODER, "Decoder.forward", {COPY: {"GS402"}, MAKER: {"GS101"}}) == ({}, [])
