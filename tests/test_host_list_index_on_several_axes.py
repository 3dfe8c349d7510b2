"""GS402 on a value of unknown kind indexed on several axes with a local list of Python ints
(`outputs["logits"][rows, -1, :]`): only an array takes such an index, so in a region it is a
tensor and the list is copied to the device. One axis alone, or a value known not to be a
tensor, stays quiet."""

from __future__ import annotations

import textwrap

from tests.helpers import diagnostics


def _gs402_lines(body: str) -> list[int]:
    source = "import torch\n\n\ndef step(model, ids, groups: int):  # graphsafe: region\n" + textwrap.indent(
        textwrap.dedent(body), "    ")
    return [d.start.line for d in diagnostics(source) if d.code == "GS402"]


def test_a_list_of_ints_beside_other_axes_of_an_unknown_value_is_a_host_index():
    assert _gs402_lines("rows = list(range(groups))\nout = model(ids)\nreturn out['logits'][rows, -1, :]\n") == [7]


def test_a_list_of_ints_alone_on_an_unknown_value_stays_quiet():
    # `table[rows]` may be a lookup in a mapping (which raises): not evidence of an array
    assert _gs402_lines("rows = list(range(groups))\ntable = model(ids)\nreturn table[rows]\n") == []


def test_a_value_known_not_to_be_a_tensor_stays_quiet():
    assert _gs402_lines("rows = list(range(groups))\npair = (ids, ids)\nreturn pair[rows, 0]\n") == []


def test_an_index_of_unknown_origin_beside_other_axes_stays_quiet():
    assert _gs402_lines("out = model(ids)\nreturn out['logits'][ids.argmax(-1), -1, :]\n") == []
