"""Call graph: a function or method defined twice under one name in one file, in the branches of
an `if` (or a `try`), as code chooses an implementation by a flag or a version. Either may run,
so a call reaches what both bodies hold; a name defined once stays one function.
"""

from __future__ import annotations

from tests.helpers import project_findings

VARIANTS = """\
import os
import torch


class Model(torch.nn.Module):
    if os.environ.get("FAST") == "1":
        def forward_one(self, x):
            return x.sum().item()
    else:
        def forward_one(self, x):
            print(x)
            return x

    def forward(self, x):  # graphsafe: region
        return self.forward_one(x)


if torch.cuda.is_available():
    def helper(x):
        return x.tolist()
else:
    def helper(x):
        return x


def step(x: torch.Tensor):  # graphsafe: region
    return helper(x)
"""


def test_both_definitions_of_a_method_or_function_chosen_by_a_flag_are_reached(tmp_path):
    assert project_findings(tmp_path, {"model.py": VARIANTS}) == {
        ("model.py", 8, "GS101"), ("model.py", 11, "GS501"), ("model.py", 20, "GS102")}


def test_a_quiet_second_definition_adds_nothing(tmp_path):
    source = VARIANTS.replace("            print(x)\n", "")
    assert project_findings(tmp_path, {"model.py": source}) == {("model.py", 8, "GS101"), ("model.py", 19, "GS102")}
