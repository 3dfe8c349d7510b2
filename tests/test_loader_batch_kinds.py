"""What a data loader yields in a loop region: the parts of an unpacked batch are tensors, and a
batch read by string keys (`batch["labels"]`) is a dict of tensors, so sums over them, counts
accumulated from them and strings formatted from them are judged as tensor work."""

from __future__ import annotations

from tests.helpers import lines_of

DICT_BATCH = """\
import torch


def train(model, dataloader, pbar):
    num_tokens = 0
    for idx, batch in enumerate(dataloader):  # graphsafe: region
        current = (batch["labels"] != -100).sum()
        num_tokens += current
        model(batch)
        pbar.set_description(f"tokens {num_tokens}")
"""

PLAIN_LOOP = DICT_BATCH.replace("enumerate(dataloader)", "enumerate(rows)").replace("dataloader, pbar", "rows, pbar")


def test_a_count_summed_from_a_dict_batch_is_a_tensor_and_formatting_it_reads_the_device():
    assert lines_of(DICT_BATCH, "GS104") == [10]
    assert lines_of(DICT_BATCH, "GS302") == []


def test_what_an_unknown_iterable_yields_stays_unknown():
    assert lines_of(PLAIN_LOOP, "GS104") == []


def test_the_parts_of_an_unpacked_batch_are_tensors():
    source = ("import torch\n\n\ndef train(model, train_loader):\n"
              "    for x, y in train_loader:  # graphsafe: region\n        if (y > 0).any():\n"
              "            model(x)\n")
    assert lines_of(source, "GS201") == [6]
