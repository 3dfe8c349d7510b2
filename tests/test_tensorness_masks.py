"""Tensor-ness for boolean-mask indexing (GS108), each case beside a look-alike that must stay
silent:

- `x[~m]` with a tensor `m` of unknown dtype reads with a boolean mask, also through a name
  (`keep = ~pad; h[keep]`) or a helper in another file returning `~pad`; `-pad`, `~3` and an
  index tensor returned by a helper are no mask;
- `~` on a tensor known to hold integers (`torch.arange(n)`, `.long()`, `.argmax()`, `.indices`,
  `dtype=torch.long`, a `torch.LongTensor` parameter, a local bound to one) is a bitwise not;
  `~` of a comparison, `isnan`, `.bool()` or a parameter named or annotated as a mask is a mask;
- a helper's mask parameter gets the kind of what its callers pass (`keep > 0`, not `.long()`);
- the same fixture checks that a parameter passed to a torch loss (`F.mse_loss(values, zs)`)
  is a tensor in all of the function, so `if (zs.abs() > 1).any():` above the call branches on
  a tensor (GS201); given only to a project function, or tested with `isinstance`, it stays
  unknown.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers import diagnostics, lines_of, project_diagnostics


found = lines_of  # the lines where a code is reported


# -------------------------- `~` of a tensor, and parameters read by a torch loss

STEP = """
import torch
import torch.nn.functional as F


class Trainer:
    def train_step(self, values, pis, zs, legal: torch.Tensor):  # graphsafe: region
        pis = torch.where(legal > 2, pis, pis * 2)
        {check}
        picked = pis[~legal]
        return {loss} + picked.sum()
"""


def test_a_parameter_a_torch_loss_reads_is_a_tensor_above_that_call():
    source = STEP.format(check="if (zs.abs() > 1).any():\n            raise ValueError(zs)",
                         loss="F.mse_loss(values, zs)")
    assert found(source, "GS201") == [9]


def test_a_parameter_only_a_project_loss_reads_stays_unknown():
    # `my_loss` may take numbers or numpy arrays, and `.any()` is theirs too: nothing says `zs`
    # is a tensor (`.abs()` would: tests/test_tensorness_from_use.py)
    source = STEP.format(check="if (zs > 1).any():\n            raise ValueError(zs)",
                         loss="my_loss(values, zs)")
    assert found(source, "GS201") == []


def test_a_parameter_tested_with_isinstance_stays_unknown():
    source = STEP.format(check="if isinstance(zs, float) or (zs > 1).any():\n            raise ValueError(zs)",
                         loss="F.mse_loss(values, zs)")
    assert found(source, "GS201") == []


def test_an_inverted_tensor_index_is_a_boolean_mask():
    source = STEP.format(check="pass", loss="F.mse_loss(values, zs)")
    assert found(source, "GS108") == [10]


def test_an_inverted_int_index_and_a_masked_fill_are_silent():
    source = STEP.format(check="pis[~legal] = 0.0", loss="F.mse_loss(values, zs)").replace(
        "picked = pis[~legal]", "picked = pis[~3]")
    assert found(source, "GS108") == []


MASK = """\
import torch


def readout(h: torch.Tensor, pad: torch.Tensor):  # graphsafe: region
    keep = {keep}
    node_h = h[keep]
    idx = torch.arange(h.shape[0], device=h.device)[:, None].expand_as(pad)[keep]
    return node_h, idx
"""


def test_an_inverted_tensor_bound_to_a_name_is_a_mask():
    assert found(MASK.format(keep="~pad"), "GS108") == [6, 7]


def test_a_negated_tensor_or_an_inverted_number_is_no_mask():
    assert found(MASK.format(keep="-pad"), "GS108") == []
    assert found(MASK.format(keep="~3"), "GS108") == []


# ------------------------------------------------------------ masks from helpers

HELPERS = """\
import torch


def keep_mask(pad: torch.Tensor):
    return ~pad


def positions(pad: torch.Tensor):
    return torch.arange(pad.shape[-1], device=pad.device)
"""


READOUT = """\
import torch
from helpers import keep_mask, positions


def readout(h: torch.Tensor, pad: torch.Tensor):  # graphsafe: region
    keep = {helper}(pad)
    return h[keep]
"""


def test_a_mask_returned_by_a_helper_in_another_file_is_a_mask(tmp_path):
    got = project_diagnostics(tmp_path, {"helpers.py": HELPERS, "model.py": READOUT.format(helper="keep_mask")})
    assert [(Path(d.path).name, d.start.line) for d in got if d.code == "GS108"] == [("model.py", 7)]


def test_an_index_tensor_returned_by_a_helper_is_no_mask(tmp_path):
    got = project_diagnostics(tmp_path, {"helpers.py": HELPERS, "model.py": READOUT.format(helper="positions")})
    assert [d for d in got if d.code == "GS108"] == []


def test_mask_parameter_of_a_helper_gets_what_callers_pass():
    source = """
    import torch


    def masked_mean(x, mask):
        return x[mask].mean()


    def step(x: torch.Tensor, keep: torch.Tensor):  # graphsafe: region
        return masked_mean(x * 2, keep > 0)
    """
    assert found(source, "GS108") == [6]
    assert found(source.replace("keep > 0", "keep.long()"), "GS108") == []


ROWS = """
import torch


def replace(table, samples, batch_mask):
    for {target} in {loop}:
        table[mask] = row * 2.0


def step(table: torch.Tensor, x: torch.Tensor, sizes: torch.Tensor):  # graphsafe: region
    replace(table, x, batch_mask={passed})
"""


@pytest.mark.parametrize("target, loop", [
    ("row, mask", "zip(samples, batch_mask)"),
    ("i, (row, mask)", "enumerate(zip(samples, batch_mask))"),
])
def test_rows_of_a_mask_parameter_are_masks_where_callers_pass_one(target, loop):
    source = ROWS.format(target=target, loop=loop, passed="sizes < 2")
    assert found(source, "GS108") == [7]
    # the rows of an integer tensor index by position
    assert found(source.replace("sizes < 2", "sizes.long()"), "GS108") == []


# --------------------------------------------------------------- `~` on integers

INVERT = """\
import torch


def pick(x: torch.Tensor, scores: torch.Tensor, ids: torch.LongTensor, mask: torch.Tensor,
         pad: "torch.Tensor", n: int):  # graphsafe: region
    idx = torch.arange(n, device=x.device)
    {line}
    return out
"""


@pytest.mark.parametrize("line", [
    "out = x[~idx]",
    "out = x[~scores.argmax(-1)]",
    "out = x[~scores.long()]",
    "out = x[~scores.topk(3).indices]",
    "out = x[~ids]",
    "out = x[~torch.zeros(n, dtype=torch.long)]",
    "out = x[~scores.to(torch.int64)]",
    "inv = ~idx\n    out = x[inv]",
    "pos = torch.argsort(scores)\n    out = x[~pos]",
])
def test_bitwise_not_of_an_integer_tensor_is_not_a_mask(line):
    assert found(INVERT.format(line=line), "GS108") == []


@pytest.mark.parametrize("line", [
    "out = x[~(scores > 0)]",
    "out = x[~torch.isnan(scores)]",
    "out = x[~scores.bool()]",
    "out = x[~mask]",
    "out = x[~pad]",  # a tensor of unknown dtype: `~` says it is a mask
    "keep = ~mask\n    out = x[keep]",
    "idx = scores > 0\n    out = x[~idx]",  # the name rebound to a comparison is a mask again
])
def test_bitwise_not_of_a_mask_is_still_a_mask(line):
    assert found(INVERT.format(line=line), "GS108") == [7 + line.count("\n")]  # the indexing line


# ------------------------------------------------ a mask of no known kind, read by its name

NAMED = """\
import torch
import torch.nn.functional as F


class Quantizer(torch.nn.Module):
    def forward(self, x, target, {param}=None):  # graphsafe: region
        loss = F.mse_loss(x, target, reduction="none")
        if {param} is not None:
            loss = loss[{index}]
        return loss.mean()
"""


@pytest.mark.parametrize("param, index", [("mask", "mask"), ("loss_mask", "loss_mask"), ("seq_mask", "seq_mask[0]")])
def test_an_unannotated_index_named_a_mask_reads_with_a_boolean_mask(param, index):
    got = [d for d in diagnostics(NAMED.format(param=param, index=index)) if d.code == "GS108"]
    assert [d.start.line for d in got] == [9]
    assert f"(`{param}` taken for one by its name)" in got[0].message


@pytest.mark.parametrize("param, index", [("ids", "ids"), ("masking", "masking"), ("mask", "mask.long()")])
def test_an_index_not_named_a_mask_or_known_to_hold_integers_is_no_mask(param, index):
    assert found(NAMED.format(param=param, index=index), "GS108") == []


def test_a_mask_name_bound_to_nonzero_as_tuple_is_no_mask():
    source = NAMED.format(param="mask", index="mask").replace(
        "loss = loss[mask]", "mask = mask.nonzero(as_tuple=True)\n            loss = loss[mask]")
    assert found(source, "GS108") == []


def test_a_mask_name_indexing_a_value_of_no_known_kind_is_silent():
    # `self.rows` may be a numpy array: a host read, no device wait
    source = NAMED.format(param="mask", index="mask").replace("loss = loss[mask]", "loss = self.rows[mask]")
    assert found(source, "GS108") == []


def test_a_mask_name_bound_here_to_a_tensor_of_no_known_dtype_reads_with_a_boolean_mask():
    source = NAMED.format(param="mask", index="loss_mask").replace(
        "loss = loss[loss_mask]", "loss_mask = mask.expand_as(loss)\n            loss = loss[loss_mask]")
    assert found(source, "GS108") == [10]
    assert found(source.replace("mask.expand_as(loss)", "mask.expand_as(loss).long()"), "GS108") == []
