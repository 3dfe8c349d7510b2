"""`isinstance` narrows a name of no known kind to the classes it names (analyzer/narrowing.py):
inside `if isinstance(loss, ELBO):` and after `if not isinstance(optim, Optim): raise ...`,
calls on it and attributes bound to it run those classes' methods; a method only subclasses
define runs the overrides of the subclasses the code constructs."""

from __future__ import annotations

from tests.helpers import project_findings

SVI = """\
    import torch
    from infer import ELBO, Optim


    class SVI:
        def __init__(self, model, loss, optim):
            self.model = model
            if not isinstance(optim, Optim):
                raise ValueError("optim must be an Optim")
            self.optim = optim
            if isinstance(loss, ELBO):
                self.loss_and_grads = loss.loss_and_grads
            else:
                self.loss_and_grads = loss

        def step(self, x):  # graphsafe: region
            loss = self.loss_and_grads(self.model, x)
            self.optim([])
            return loss

        def evaluate(self, loss, x):  # graphsafe: region
            if isinstance(loss, ELBO):
                return loss.loss(self.model, x)
            return x
"""

INFER = """\
    class ELBO:
        def loss(self, model, x):
            print("evaluating")
            return model(x)


    class TraceELBO(ELBO):
        def loss_and_grads(self, model, x):
            print("tracing")
            return model(x)


    class Optim:
        def __call__(self, params):
            print("optimizing")


    DEFAULT_LOSS = TraceELBO()
"""

# other classes with methods of the same names: the names alone say nothing
OTHERS = "".join(f"""
class Other{i}:
    def loss(self, model, x):
        print("other loss {i}")

    def loss_and_grads(self, model, x):
        print("other loss and grads {i}")

    def __call__(self, params):
        print("other call {i}")
""" for i in range(4))


def test_a_constructor_argument_checked_by_a_raising_isinstance_is_an_object_of_that_class(tmp_path):
    found = project_findings(tmp_path, {"svi.py": SVI, "infer.py": INFER, "others.py": OTHERS}, code="GS501")
    assert ("infer.py", 15, "GS501") in found


def test_a_method_bound_inside_an_isinstance_branch_runs_the_constructed_subclass_override(tmp_path):
    found = project_findings(tmp_path, {"svi.py": SVI, "infer.py": INFER, "others.py": OTHERS}, code="GS501")
    assert ("infer.py", 9, "GS501") in found


def test_a_call_inside_an_isinstance_branch_runs_that_class_method(tmp_path):
    found = project_findings(tmp_path, {"svi.py": SVI, "infer.py": INFER, "others.py": OTHERS}, code="GS501")
    assert ("infer.py", 3, "GS501") in found


def test_isinstance_of_a_library_class_narrows_nothing():
    from graphsafe.analyzer import narrowing
    from graphsafe.analyzer import tensorness as T
    import libcst as cst
    test = cst.parse_expression("isinstance(x, torch.nn.Module)")
    assert narrowing.narrowed(test, lambda e: T.instance_of("torch.nn.Module")) is None
    assert narrowing.narrowed(cst.parse_expression("not isinstance(x, (A, B))"),
                              lambda e: T.instance_of(f"pkg.{e.value}")) == ("x", T.instance_of("pkg.A", "pkg.B"), True)


def test_other_classes_with_methods_of_the_same_names_do_not_run(tmp_path):
    found = project_findings(tmp_path, {"svi.py": SVI, "infer.py": INFER, "others.py": OTHERS})
    assert not any(name == "others.py" for name, _, _ in found)
