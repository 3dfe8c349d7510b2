"""A data loader's batch (host memory) handed to a helper that moves it, or its entries, to the
GPU: the helper's move and the call are host-to-device copies in the region (GS402), decided
where the project shows the callers (analyzer/host_batches.py); beside look-alikes that stay
silent: a helper every reached caller gives device tensors, and a library call."""

from __future__ import annotations

from tests.helpers import project_findings

HELPER = """\
import torch


def batch_to_device(batch: dict, device: torch.device) -> None:
    for k, v in batch.items():
        if isinstance(v, dict):
            batch_to_device(v, device)
        elif isinstance(v, torch.Tensor):
            batch[k] = v.to(device)
"""

RECIPE = """\
import torch
import device as utils


class Recipe:
    def train(self):
        for idx, batch in enumerate(self._dataloader):  # graphsafe: region
            {call}
            loss = self._model(**batch).sum()
            loss.backward()

    def evaluate(self, x: torch.Tensor):
        out = {{"x": x.cuda()}}
        utils.batch_to_device(out, self._device)
"""


def moves(tmp_path, call="utils.batch_to_device(batch, self._device)", recipe=RECIPE):
    files = {"device.py": HELPER, "recipe.py": recipe.format(call=call)}
    return project_findings(tmp_path, files, "GS402")


def test_a_loaders_batch_handed_to_a_moving_helper_is_reported_at_the_call_and_the_move(tmp_path):
    assert moves(tmp_path) == {("recipe.py", 8, "GS402"), ("device.py", 9, "GS402")}


def test_a_helper_given_device_tensors_by_the_region_moves_nothing(tmp_path):
    recipe = RECIPE.replace("# graphsafe: region", "").replace(
        "def evaluate(self, x: torch.Tensor):", "def evaluate(self, x: torch.Tensor):  # graphsafe: region")
    assert moves(tmp_path, recipe=recipe) == set()


def test_a_loaders_batch_handed_to_a_library_function_is_not_this_rules(tmp_path):
    assert moves(tmp_path, call="batch = torch.utils.data.default_collate(batch)") == set()


def test_a_region_root_its_training_loop_hands_a_loaders_batch_moves_host_data(tmp_path):
    trainer = ("class Trainer:\n    def preprocess_batch(self, batch):  # graphsafe: region\n"
               "        for k, v in batch.items():\n            batch[k] = v.to(self.device, non_blocking=True)\n"
               "        return batch\n\n    def train(self):\n        for batch in self.train_loader:\n"
               "            batch = self.preprocess_batch(batch)\n")
    assert project_findings(tmp_path, {"trainer.py": trainer}, "GS402") == {("trainer.py", 4, "GS402")}


def test_a_loader_behind_progress_bars_and_enumerate_still_yields_host_batches(tmp_path):
    trainer = ("class Trainer:\n    def preprocess_batch(self, batch):  # graphsafe: region\n"
               "        for k, v in batch.items():\n            batch[k] = v.to(self.device, non_blocking=True)\n"
               "        return batch\n\n    def train(self):\n        pbar = enumerate(self.train_loader)\n"
               "        pbar = TQDM(pbar, total=len(self.train_loader))\n        for i, batch in pbar:\n"
               "            batch = self.preprocess_batch(batch)\n")
    assert project_findings(tmp_path, {"trainer.py": trainer}, "GS402") == {("trainer.py", 4, "GS402")}


def test_a_progress_bar_over_a_loader_in_the_loop_header_yields_host_batches(tmp_path):
    step = ("from tqdm import tqdm\n\n\ndef evaluate(model, val_loader):\n"
            "    for x, y in tqdm(val_loader, desc='eval'):  # graphsafe: region\n        out = model(x.to('cuda'))\n")
    assert project_findings(tmp_path, {"step.py": step}, "GS402") == {("step.py", 6, "GS402")}
