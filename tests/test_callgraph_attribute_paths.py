"""Call graph: calls followed through what attributes hold, each case beside a look-alike that
must stay silent:

- `self.model.crf.decode(x)`: a method (not `forward`) of a submodule of a submodule, each class
  in another file, is followed through the attribute path (also three attributes deep);
- `self.D(x)`: a capitalised attribute of `self` holding a module instance is a call of that
  instance (returning what its forward returns), not a class being constructed;
- `self.student, self.teacher = build(cfg)` with `def build(cfg) -> tuple[Student, Teacher]`:
  the annotation names each element's class, so each attribute runs its own class.
"""

from __future__ import annotations

from tests.helpers import project_findings


project = project_findings  # (file name, line, code) of each diagnostic of a small program


# ------------------------------------------------------ submodules of submodules

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


# ------------------------------------------------- capitalised module attributes

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


# --------------------------------- attributes unpacked from an annotated factory

MODELS = """\
import torch.nn as nn


class Syncing(nn.Module):
    def forward(self, x):
        return x.sum().item()


class Quiet(nn.Module):
    def forward(self, x):
        return x * 2


def build_pair(cfg) -> tuple[Syncing, Quiet]:
    student = Syncing()
    teacher = Quiet()
    return student, teacher
"""


def test_tuple_annotated_factory_is_followed_per_element(tmp_path):
    got = project(tmp_path, {"models.py": MODELS, "train.py": """\
        from models import build_pair


        class Trainer:
            def __init__(self, cfg):
                self.student, self.teacher = build_pair(cfg)

            def step(self, x):  # graphsafe: region
                return self.student(x)
        """})
    assert ("models.py", 6, "GS101") in got


def test_tuple_annotated_factory_quiet_element_stays_silent(tmp_path):
    got = project(tmp_path, {"models.py": MODELS, "train.py": """\
        from models import build_pair


        class Trainer:
            def __init__(self, cfg):
                self.student, self.teacher = build_pair(cfg)

            def step(self, x):  # graphsafe: region
                return self.teacher(x)
        """})
    assert not any(code == "GS101" for _, _, code in got)
