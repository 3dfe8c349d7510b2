"""Call graph through templates built from mixins: a base written generic (`SGDUpdate[TExp]`) or
taken in through a star import is the class it names, and a mixin's `self._after_step()`, declared
without a body in its protocol (`...`), runs the method a class combining it inherits from another
base (`class Naive(SGDUpdate[T], BaseTemplate[T])`)."""

from __future__ import annotations

from tests.helpers import project_diagnostics

PROTOCOL = """
from typing import Generic, Protocol, TypeVar

T = TypeVar("T")


class StepProtocol(Protocol[T]):
    def _after_step(self): ...
"""

UPDATE = """
from pkg.protocol import StepProtocol, T


class SGDUpdate(StepProtocol[T]):
    def training_epoch(self, x):
        y = self.model(x)
        self._after_step()
        return y
"""

TEMPLATE = """
from typing import Generic

from pkg.protocol import T


class BaseTemplate(Generic[T]):
    def _after_step(self):
        print("step done")
"""

INIT = """
from pkg.update import *
"""

STRATEGY = """
from pkg import *
from pkg.template import BaseTemplate
from pkg.protocol import T


class Naive(SGDUpdate[T], BaseTemplate[T]):
    pass
"""


def located(found):
    return {(d.path.rpartition("/")[2], d.start.line, d.code) for d in found}


def test_a_mixins_bodiless_method_runs_what_the_class_combining_it_inherits_from_another_base(tmp_path):
    files = {"pkg/__init__.py": INIT, "pkg/protocol.py": PROTOCOL, "pkg/update.py": UPDATE,
             "pkg/template.py": TEMPLATE, "pkg/strategy.py": STRATEGY}
    found = located(project_diagnostics(tmp_path, files, regions=("SGDUpdate.training_epoch",)))
    assert ("template.py", 9, "GS501") in found


def test_without_a_class_combining_them_the_bodiless_method_runs_nothing(tmp_path):
    files = {"pkg/__init__.py": INIT, "pkg/protocol.py": PROTOCOL, "pkg/update.py": UPDATE,
             "pkg/template.py": TEMPLATE}
    found = located(project_diagnostics(tmp_path, files, regions=("SGDUpdate.training_epoch",)))
    assert not any(name == "template.py" for name, _, _ in found)
