"""Shapes of the retired tenth set (ner_crf, stylegan_train, medusa_decode) the analyzer
missed, each beside a look-alike that must stay silent:

- `self.model.crf.viterbi_decode(x)`: a method (not `forward`) of a submodule of a submodule,
  each class in another file, is followed through the attribute path;
- `self.D(x)`, `self.G(z)`: a capitalised attribute of `self` (or of a local value) is a module
  instance whose call returns what its forward returns, not a class being constructed;
- a guard clause on a number parameter (`if t == 0.0: return x`) no longer hides the tensor
  conditions after it: GS301 looked ahead at the rest of the block before the walk bound its
  names, and the walk reused those premature (unknown) kinds.
"""

from __future__ import annotations

from pathlib import Path

from tests.helpers import lines_of, project_diagnostics


found = lines_of  # the lines where a code is reported


def project(tmp_path: Path, files: dict[str, str]) -> set[tuple[str, int, str]]:
    return {(Path(d.path).name, d.start.line, d.code) for d in project_diagnostics(tmp_path, files)}


CRF = """\
import torch
from torch import nn


class CRF(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * 2

    def decode(self, x: torch.Tensor) -> int:
        return x.sum().item()

    def scores(self, x: torch.Tensor) -> torch.Tensor:
        return x.softmax(-1)
"""

TAGGER = """\
import torch
from torch import nn
from crf import CRF


class Tagger(nn.Module):
    def __init__(self):
        super().__init__()
        self.crf = CRF()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + 1
"""


def test_method_of_a_nested_submodule_across_files_is_followed(tmp_path):
    got = project(tmp_path, {"crf.py": CRF, "tagger.py": TAGGER, "train.py": """\
        import torch
        from tagger import Tagger


        class Trainer:
            def __init__(self, device):
                self.model = Tagger().to(device)
                self.step_fn = torch.compile(self.step, mode="reduce-overhead")

            def step(self, x: torch.Tensor) -> torch.Tensor:
                y = self.model(x)
                with torch.no_grad():
                    best = self.model.crf.decode(y)
                return y
        """})
    assert ("crf.py", 10, "GS101") in got


def test_hazard_free_method_of_a_nested_submodule_stays_silent(tmp_path):
    got = project(tmp_path, {"crf.py": CRF, "tagger.py": TAGGER, "train.py": """\
        import torch
        from tagger import Tagger


        class Trainer:
            def __init__(self, device):
                self.model = Tagger().to(device)
                self.step_fn = torch.compile(self.step, mode="reduce-overhead")

            def step(self, x: torch.Tensor) -> torch.Tensor:
                return self.model.crf.scores(self.model(x))

            def evaluate(self, x: torch.Tensor) -> int:
                return self.model.crf.decode(x)  # eager only: not reached from the region
        """})
    assert not {d for d in got if d[0] == "crf.py"}


def test_method_three_attributes_deep_across_files_is_followed(tmp_path):
    got = project(tmp_path, {"crf.py": CRF, "tagger.py": TAGGER, "head.py": """\
        from torch import nn
        from tagger import Tagger


        class Head(nn.Module):
            def __init__(self):
                super().__init__()
                self.tagger = Tagger()
        """, "train.py": """\
        import torch
        from head import Head


        class Trainer:
            def __init__(self):
                self.model = Head()
                self.step_fn = torch.compile(self.step, mode="reduce-overhead")

            def step(self, x: torch.Tensor) -> torch.Tensor:
                best = self.model.tagger.crf.decode(x)
                quiet = self.model.tagger.crf.scores(x)
                return quiet
        """})
    assert {d for d in got if d[0] == "crf.py"} == {("crf.py", 10, "GS101")}


NETS = """\
import torch
from torch import nn


class Discriminator(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Linear(4, 1)

    def forward(self, img: torch.Tensor) -> torch.Tensor:
        return self.net(img)


class Meter:
    def __init__(self, name: str):
        self.name = name

    def __format__(self, spec: str) -> str:
        return self.name
"""


def test_capitalised_module_attribute_call_returns_a_tensor(tmp_path):
    got = project(tmp_path, {"nets.py": NETS, "train.py": """\
        import logging

        import torch
        from nets import Discriminator

        logger = logging.getLogger(__name__)


        class GAN:
            def __init__(self, device):
                self.D = Discriminator().to(device)
                self.step_fn = torch.compile(self.step, mode="reduce-overhead")

            def step(self, real: torch.Tensor) -> torch.Tensor:
                real_logits = self.D(real)
                logger.debug(f"D real logits {real_logits.mean():.3f}")
                return real_logits
        """})
    assert ("train.py", 16, "GS104") in got
    assert ("train.py", 16, "GS501") in got


def test_capitalised_class_constructed_and_formatted_stays_silent(tmp_path):
    got = project(tmp_path, {"nets.py": NETS, "train.py": """\
        import torch
        from nets import Discriminator, Meter


        class GAN:
            def __init__(self, device):
                self.D = Discriminator().to(device)
                self.step_fn = torch.compile(self.step, mode="reduce-overhead")

            def step(self, real: torch.Tensor) -> torch.Tensor:
                tag = f"{Meter('d'):>8}"
                return self.D(real) * 2
        """})
    assert not {d for d in got if d[2] == "GS104"}


def test_tensor_condition_after_a_guard_clause_on_a_number_parameter():
    source = """\
        import torch

        @torch.compile(mode="reduce-overhead")
        def accept(x: torch.Tensor, t: float) -> torch.Tensor:
            if t == 0.0:
                return x
            acc = (x > t).long().cumprod(dim=1)
            depth = acc.shape[1]
            while depth > 0 and not acc[:, depth - 1].any():
                depth -= 1
            return acc[:, :depth].sum(dim=1)
    """
    assert found(source, "GS201") == [9]
    assert found(source, "GS301") == [5, 7]


def test_shape_condition_after_a_guard_clause_stays_silent():
    source = """\
        import torch

        @torch.compile(mode="reduce-overhead")
        def accept(x: torch.Tensor, t: float) -> torch.Tensor:
            if t == 0.0:
                return x
            acc = (x > 0).long().cumprod(dim=1)
            depth = acc.shape[1]
            while depth > 0 and acc.shape[0] > 1:
                depth -= 1
            return acc[:, :depth].sum(dim=1)
    """
    assert found(source, "GS201") == []
    assert found(source, "GS301") == [5]


def test_guard_lookahead_keeps_kinds_bound_in_the_guarded_rest():
    source = """\
        import torch

        @torch.compile(mode="reduce-overhead")
        def step(x: torch.Tensor, scale: float) -> torch.Tensor:
            if scale == 1.0:
                return x
            scores = x.softmax(-1)
            if scores.shape[0] > 1:
                print("batched")
            if scores[:, 0].any():
                print("hit")
            return scores
    """
    assert found(source, "GS201") == [10]
