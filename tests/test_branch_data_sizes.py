"""Branches and loops on data-dependent sizes (GS201): the length of `x[mask]`, `x.nonzero()`,
`torch.where(c)` or `x.unique()` is tensor data, so `if not x.shape[0]:`, `n = x.shape[0]; if not
n:`, `while order.numel() > 0:` (with `order = rest[iou <= t]` in the loop) and `for i in idx:`
decide the path from data. Each beside a look-alike that stays silent: sizes of tensors whose
shape is fixed, and a name rebound at the top level to such a tensor.
"""

from __future__ import annotations

from tests.helpers import diagnostics, lines_of


MASKED = """
import torch


def keep_boxes(boxes, scores, limit: int):  # graphsafe: region
    boxes = torch.as_tensor(boxes)
    picked = boxes[scores > 0.5]
    if not picked.shape[0]:
        return boxes
    count = picked.shape[0]
    if count > limit:
        picked = picked[:limit]
    if boxes.shape[0] > limit:
        return picked
    return picked
"""


def test_branch_on_the_row_count_of_a_masked_tensor_is_reported():
    assert lines_of(MASKED, "GS201") == [8, 11]


def test_size_branch_message_says_which_selection_made_the_size_data_dependent():
    messages = [d.message for d in diagnostics(MASKED) if d.code == "GS201" and d.start.line == 11]
    assert messages and "a number that depends on tensor data" in messages[0]
    assert "`count = picked.shape[0]`" in messages[0] and "boolean mask" in messages[0]


LOOP = """
import torch


def suppress(order, boxes, threshold: float):  # graphsafe: region
    order = torch.argsort(boxes[:, 0])
    while order.numel() > 0:
        if order.numel() == 1:
            break
        rest = order[1:]
        overlap = boxes[rest, 1] - boxes[order[0], 1]
        order = rest[overlap <= threshold]
    fixed = torch.argsort(boxes[:, 0])
    while fixed.numel() > 3:
        fixed = fixed[1:]
    return order
"""


def test_loop_test_on_a_tensor_the_loop_body_masks_is_reported():
    # the second loop only slices a tensor of fixed length: its trip count is known at capture
    assert lines_of(LOOP, "GS201") == [7, 8]


NONZERO = """
import torch


def finished(tokens, eos: int):  # graphsafe: region
    (ended,) = torch.nonzero(tokens == eos, as_tuple=True)
    for index in ended:
        tokens[index] = 0
    positions = (tokens == eos).nonzero()
    if len(positions) > 0:
        tokens = tokens + 1
    everything = torch.arange(tokens.shape[0])
    for index in everything:
        tokens[index] = 1
    if len(everything) > 0:
        return tokens
    return tokens
"""


def test_loop_over_nonzero_and_len_of_nonzero_are_reported_but_not_arange():
    assert lines_of(NONZERO, "GS201") == [7, 10]


REBOUND = """
import torch


def pad(x, mask):  # graphsafe: region
    x = x[mask > 0]
    x = torch.zeros(4, 3)
    if x.shape[0] > 2:
        return x
    return x
"""


def test_a_name_rebound_at_the_top_level_forgets_its_data_dependent_size():
    assert lines_of(REBOUND, "GS201") == []


def test_a_branch_on_a_number_read_from_the_device_is_reported_besides_the_read():
    source = ("import torch\n\n\ndef step(counts: torch.Tensor, bank: torch.Tensor):  # graphsafe: region\n"
              "    num_dead = (counts < 1).sum().item()\n    if num_dead > 4:\n        bank.zero_()\n")
    found = diagnostics(source)
    assert [(d.start.line, d.code) for d in found] == [(5, "GS101"), (6, "GS201")]
    assert "`(counts < 1).sum().item()` reads a tensor's value on the host" in found[1].message


def test_a_loop_test_on_a_count_the_body_accumulates_from_device_reads_is_reported():
    source = ("import torch\n\n\ndef masks(size: int, wanted: int, device=None):  # graphsafe: region\n"
              "    mask = torch.zeros(size, dtype=torch.bool, device=device)\n    count = 0\n"
              "    while count < wanted:\n        block = torch.rand(size, device=device) > 0.5\n"
              "        count += (block & ~mask).sum().item()\n        mask |= block\n    return mask\n")
    assert [d.start.line for d in diagnostics(source) if d.code == "GS201"] == [7]


def test_a_number_read_from_host_data_is_no_device_read():
    source = ("import torch\n\n\ndef step(x: torch.Tensor, n: int):  # graphsafe: region\n"
              "    k = int(n * 2)\n    if k > 4:\n        x.zero_()\n")
    assert [d.code for d in diagnostics(source)] == []
