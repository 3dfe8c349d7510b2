"""A number drawn on the host (`np.random.beta(a, a)`, `random.uniform(...)`, `time.time()`) is
new on every step: inside a region the draw runs once, at capture (GS502 reports it), and where
the number enters device work it is a per-step number frozen there (GS301), also through a
helper's return and a tuple of them (nested ones too), and through numpy's functions
(`np.clip(cy - h // 2, 0, h)`). An array of draws (`size=`, `np.random.rand(8)`) is no number,
but each of its elements is (`lam = lam_batch[i]`); `size=count` of a parameter defaulting to
None draws one number as written. A branch on a drawn number is the draw's consequence, left to
GS502."""

from __future__ import annotations

from tests.helpers import diagnostics, lines_of

MIXUP = '''\
import numpy as np
import torch


class Mixup:
    def __init__(self, alpha: float):
        self.alpha = alpha

    def _params(self):
        lam = 1.0
        use_cutmix = np.random.rand() < 0.5
        if np.random.rand() < 0.8:
            lam = float(np.random.beta(self.alpha, self.alpha))
        return lam, use_cutmix

    def __call__(self, x: torch.Tensor):  # graphsafe: region
        lam, use_cutmix = self._params()
        x_flipped = x.flip(0).mul_(1.0 - lam)
        return x.mul_(lam).add_(x_flipped)
'''


def test_a_number_drawn_on_the_host_is_per_step_where_it_enters_device_work():
    assert lines_of(MIXUP, "GS301") == [18, 19]  # one value, its every use
    message = next(d.message for d in diagnostics(MIXUP) if d.code == "GS301")
    assert "`np.random.beta(self.alpha, self.alpha)` (a host draw, new on every step)" in message
    assert lines_of(MIXUP, "GS502") == [11, 12, 13]


def test_an_array_of_draws_is_no_number():
    source = ("import numpy as np\nimport torch\n\n\ndef step(x: torch.Tensor, table):  # graphsafe: region\n"
              "    rows = np.random.randint(0, 8, size=4)\n    picked = table[rows]\n"
              "    noise = np.random.rand(4)\n    return x + torch.as_tensor(picked) + torch.as_tensor(noise)\n")
    assert lines_of(source, "GS301") == []


def test_a_branch_on_a_drawn_number_is_left_to_the_draw():
    source = ("import random\nimport torch\n\n\ndef step(x: torch.Tensor):  # graphsafe: region\n"
              "    p = random.random()\n    if p < 0.5:\n        x = x.flip(0)\n    return x\n")
    assert lines_of(source, "GS301") == [] and lines_of(source, "GS502") == [6]


CUTMIX = """\
import numpy as np
import torch


def rand_bbox(img_shape, lam, count=None):
    img_h = img_shape[-2]
    cy = np.random.randint(0, img_h, size=count)
    yl = np.clip(cy - 3, 0, img_h)
    yh = np.clip(cy + 3, 0, img_h)
    return yl, yh


def cutmix_box(img_shape, lam):
    yl, yh = rand_bbox(img_shape, lam)
    return (yl, yh), lam


class Mixup:
    def _params_per_elem(self, n):
        lam = np.where(np.random.rand(n) < 0.5, np.random.beta(1.0, 1.0, size=n).astype(np.float32), 1.0)
        return lam, np.random.rand(n) < 0.5

    def mix_elem(self, x: torch.Tensor):  # graphsafe: region
        lam_batch, use_cutmix = self._params_per_elem(len(x))
        for i in range(len(x)):
            lam = lam_batch[i]
            x[i] = x[i] * lam
        return torch.tensor(lam_batch, device=x.device)

    def mix_batch(self, x: torch.Tensor):  # graphsafe: region
        (yl, yh), lam = cutmix_box(x.shape, 0.5)
        x[:, :, yl:yh] = x.flip(0)[:, :, yl:yh]
        return x
"""


def test_an_element_of_an_array_of_draws_is_a_per_step_number():
    assert 27 in lines_of(CUTMIX, "GS301")
    message = next(d.message for d in diagnostics(CUTMIX) if d.code == "GS301" and d.start.line == 27)
    assert "an element of `np.random.beta(1.0, 1.0, size=n)` (a host draw" in message


def test_the_array_itself_as_tensor_data_is_left_to_gs402():
    assert 28 not in lines_of(CUTMIX, "GS301") and 28 in lines_of(CUTMIX, "GS402")


def test_drawn_slice_bounds_through_nested_tuple_returns_are_per_step_numbers():
    assert 32 in lines_of(CUTMIX, "GS301")


def test_a_sample_of_draws_as_tensor_data_is_left_to_gs402():
    source = ("import random\nimport torch\n\n\ndef step(x: torch.Tensor, items: list):  # graphsafe: region\n"
              "    picks = random.sample(items, 4)\n    return x + torch.tensor(picks, device=x.device)\n")
    assert lines_of(source, "GS301") == [] and lines_of(source, "GS402") == [7]


DRAWN_LATER = '''\
from typing import Optional

import numpy as np
import torch


def mixup_batch(x: torch.Tensor, mixing: Optional[float] = None):  # graphsafe: region
    if mixing is None:
        mixing = _gen_mixing_coef(0.2)
    return (1 - mixing) * x + mixing * x.flip(0)


def _gen_mixing_coef(alpha: float) -> float:
    lam = np.random.beta(alpha, alpha)
    return min(lam, 1.0 - lam)


def _gen_width(alpha: float) -> float:
    return alpha * 2.0


def scaled(x: torch.Tensor):  # graphsafe: region
    return x * _gen_width(0.5)
'''


def test_a_helper_defined_further_down_that_draws_a_number_gives_a_new_number_every_step():
    found = [(d.code, d.start.line) for d in diagnostics(DRAWN_LATER) if d.code == "GS301"]
    assert ("GS301", 10) in found
    assert not any(line == 24 for _, line in found)  # a helper of settings only
