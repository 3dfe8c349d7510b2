"""Host values that reach a region's device work or keep host state, each case beside a look-alike
that must stay silent:

- GS402: `self.table[ids.cpu()].to(ids.device)` picks rows with a host index (on the host, or
  the index is copied over for a device table), also through a local bound to the host copy;
  a device index, rows left on the host, or a dtype move are silent; `x.new_tensor([...])`
  copies host data (`new_zeros` does not);
- GS408: a list parameter rebound to a comprehension over itself (`targets = [aug(t) for t in
  targets]`) is still the call's list, so a shape from its length varies per batch; a list the
  call does not receive has a fixed length;
- GS506: `t.data_ptr()` kept in a local before it is used as a key;
- GS501: a module-level logger named like `_LOG` logs.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers import lines_of, project_findings


found = lines_of  # the lines where a code is reported
project = project_findings  # (file name, line, code) of each diagnostic of a small program


# ------------------------------------------------------------------------- GS402

CACHE = """\
import torch


class FeatureCache:
    def __init__(self, host_feats: torch.Tensor, device):
        self.host_feats = host_feats
        self.device = device

    def gather(self, ids: torch.Tensor):  # graphsafe: region
        index = ids.argmax(-1)
        rows = {expr}
        return rows
"""


@pytest.mark.parametrize("expr", [
    "self.host_feats[ids.cpu()].to(ids.device)",
    "self.host_feats[ids.to('cpu')].to(self.device)",
    "self.host_feats[ids.cpu()].cuda()",
    "self.host_feats[index.cpu(), :].to(device=ids.device)",
])
def test_rows_picked_with_a_host_index_and_moved_to_the_gpu(expr):
    assert found(CACHE.format(expr=expr), "GS402") == [11]


@pytest.mark.parametrize("expr", [
    "self.host_feats[ids].to(ids.device)",  # a device index: a device table's rows
    "self.host_feats[index].cuda()",
    "self.host_feats[ids.cpu()]",  # gathered on the host and kept there (GS103 reports the copy)
    "self.host_feats[ids.cpu()].to(torch.float16)",  # a dtype, not a device
])
def test_rows_picked_with_a_device_index_or_left_on_the_host_are_silent(expr):
    assert found(CACHE.format(expr=expr), "GS402") == []


LOCAL_INDEX = """\
import torch


class FeatureCache:
    def __init__(self, host_feats: torch.Tensor):
        self.host_feats = host_feats

    def gather(self, ids: torch.Tensor):  # graphsafe: region
        picked = ids.cpu()
        {rebind}
        return self.host_feats[picked].to(ids.device)
"""


def test_rows_picked_with_a_local_bound_to_a_host_copy():
    assert found(LOCAL_INDEX.format(rebind="pass"), "GS402") == [11]


def test_a_local_rebound_to_a_device_tensor_before_the_gather_is_silent():
    assert found(LOCAL_INDEX.format(rebind="picked = ids.argmax(-1)"), "GS402") == []


def test_new_tensor_copies_host_data():
    source = """
    import torch


    def step(x: torch.Tensor):  # graphsafe: region
        w = x.new_tensor([0.5, 2.0])
        v = x.new_tensor(x)
        z = x.new_zeros(2)
        return w + v + z
    """
    assert found(source, "GS402") == [6]


# ------------------------------------------------------------------------- GS408

REBOUND = """\
import random

import torch


class Trainer:
    def step(self, images: torch.Tensor, targets: list[dict], names: list[str]):  # graphsafe: region
        if random.random() < 0.5:
            targets = [dict(t, boxes=t["boxes"].flip(-1)) for t in targets]
        longest = max(len(t["boxes"]) for t in targets)
        valid = torch.zeros(len(targets), longest, device=images.device)
        names = [n for n in self.fixed_names]
        mask = torch.ones(len(names), device=images.device)
        return valid, mask
"""


def test_list_parameter_rebound_to_a_comprehension_over_itself(tmp_path: Path) -> None:
    found = project(tmp_path, {"trainer.py": REBOUND})
    assert ("trainer.py", 11, "GS408") in found
    # the look-alike: rebound to a list the call does not receive, a fixed length
    assert ("trainer.py", 13, "GS408") not in found


# --------------------------------------------------------------- GS506 and GS501

DATA_PTR = """
import torch


class Cache:
    def __init__(self):
        self.cache = {}
        self.seen = set()

    def lookup(self, x: torch.Tensor):  # graphsafe: region
        key = (x.data_ptr(), x.shape)
        hit = self.cache.get(key)
        ptr = x.data_ptr()
        if ptr in self.seen:
            pass
        aligned = ptr % 16 == 0
        shape_key = (x.shape[0], x.dtype)
        other = self.cache.get(shape_key)
        return hit
"""


def test_data_ptr_kept_in_a_local_then_used_as_a_key():
    assert found(DATA_PTR, "GS506") == [12, 14]


def test_module_level_logger_named_LOG():
    source = """
    from mylib.logs import _LOG, _LOGGING_LEVELS


    def step(x):  # graphsafe: region
        _LOG.info("step")
        _LOGGING_LEVELS.get("info")
        return x
    """
    assert found(source, "GS501") == [6]
