"""GS701: an optimizer stepped inside a region without `capturable=True`."""

from __future__ import annotations

import re
from dataclasses import dataclass

import libcst as cst

from graphsafe.analyzer.nodes import descendants
from graphsafe.model import Applicability, Consequence, Example, Principle
from graphsafe.rewriters.keywords import keyword_fix
from graphsafe.rules.base import Callees, Rule

# Raise "Attempting CUDA graph capture of step() ... but param_groups' capturable is False".
NEEDS_CAPTURABLE = frozenset("Adam AdamW Adamax ASGD NAdam RAdam RMSprop Rprop Adadelta".split())
# Capture without error, but the Python-side step counter never advances on replay.
SILENT = frozenset({"Adagrad"})
_OPTIMIZERS = NEEDS_CAPTURABLE | SILENT | frozenset("SGD LBFGS SparseAdam Adafactor Muon".split())
# torch.optim.Optimizer's check, called first in a step: it raises during capture unless every
# param group is capturable.
_HEALTH_CHECKS = frozenset({"_cuda_graph_capture_health_check", "_accelerator_graph_capture_health_check"})
# `capturable: bool = False`, `capturable=False`, `group.setdefault("capturable", False)`
_DEFAULTS_NOT_CAPTURABLE = re.compile(r"""capturable\s*(?::\s*bool\s*)?=\s*False|["']capturable["']\s*[,:]\s*False""")
# What code names an optimizer: `optimizer`, `opt`, `self.policy_optim`, `self.critic.optimizer`,
# `self.optim_objs[p]`, `ent_coef_optimizer`.
_OPTIMIZER_NAME = re.compile(r"^_?(opt|optim|optimizer|optimiser)(s|_objs?)?$|_(optim|optimizer|optimiser|opt)$|^(optim|optimizer)_")


@dataclass
class _Construction:
    cls: str
    capturable: bool
    call: cst.Call
    statement: cst.CSTNode


@dataclass
class _Step:
    node: cst.Call
    key: tuple[str, str]
    place: object
    other_class: bool = False  # the receiver is an object of a project class, not an optimizer


class OptimizerNotCapturable(Rule):
    """## What it does
    Flags `optimizer.step()` inside a captured region when the optimizer was built without
    `capturable=True` (Adam, AdamW, RMSprop, ...), or is Adagrad, which has no capturable mode.

    ## Why is this bad?
    These optimizers keep their step count on the host unless `capturable=True`. PyTorch
    refuses to capture them ("Attempting CUDA graph capture of step() for an instance of AdamW
    but param_groups' capturable is False"). Adagrad captures, but its step counter is a Python
    value read at capture, so bias correction and decay stop advancing on replay.
    SGD needs nothing.

    ## Example
    ```python
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    ...
    with torch.cuda.graph(g):
        loss = step(x)  # calls opt.step()
    ```

    ## Use instead
    ```python
    opt = torch.optim.AdamW(model.parameters(), lr=torch.tensor(1e-3, device="cuda"), capturable=True)
    ```

    ## Fix safety
    `capturable=True` keeps the step on the device and computes the same update on CUDA, but
    Adam-family optimizers refuse it for CPU parameters, so the fix is unsafe (applied with
    `--unsafe-fixes`).

    ## Precise semantics
    The optimizers that need `capturable=True`: Adam, AdamW, RMSprop, NAdam, RAdam, Adamax,
    ASGD, Rprop, Adadelta. The optimizer is matched by name (`opt`, `self.opt`) to where the
    same file builds it: directly, or through a function of the file that returns it
    (`self.opt = make_optimizer(model)`).

    An optimizer class of the project (`class Lamb(torch.optim.Optimizer)`) whose step calls
    torch's `self._cuda_graph_capture_health_check()` (or `_accelerator_...`) is reported at that
    call where the file defaults `capturable` to False (`capturable: bool = False`,
    `group.setdefault("capturable", False)`): the check raises during capture.

    An optimizer the file steps but never builds (`self.policy.optimizer.step()`,
    `optimizer.step()` on a parameter, `self.optim_objs[p].step()`: a receiver named like one)
    is reported too, as one that may not be capturable: real training builds Adam or AdamW,
    and without `capturable=True`. Not where the file mentions `capturable` at all, nor on a
    receiver of a project class (its own `step` is followed as a call).
    """
    fixable = True

    code = "GS701"
    name = "optimizer-not-capturable"
    principle = Principle.CONFIG
    consequence = Consequence.CAPTURE_FAILS
    summary = "an optimizer stepped in the region without `capturable=True`"
    message = "`{optimizer}` {detail}: {consequence}"
    valid = (
        Example(
            "def make_optimizer(params):\n    opt = torch.optim.AdamW(params, lr=1e-3, capturable=True)\n    return opt\n\n\n"
            "class C:\n    def __init__(self, params):\n        self.opt = make_optimizer(params)\n\n"
            "    def step(self):  # graphsafe: region\n        self.opt.step()",
            module=True,
        ),
        "opt = torch.optim.AdamW([x], lr=1e-3, capturable=True)\nopt.step()",
        "opt = torch.optim.SGD([x], lr=0.1)\nopt.step()",
        Example("class C(torch.optim.Optimizer):\n    def __init__(self, params, lr=1e-4, capturable: bool = True):\n"
                "        super().__init__(params, dict(lr=lr, capturable=capturable))\n\n"
                "    def step(self):  # graphsafe: region\n        self._cuda_graph_capture_health_check()", module=True),
        "opt = torch.optim.Adam([x])",
        # a project's own optimizer-like object: its step is followed as a call
        Example("class Stepper:\n    def step(self):\n        pass\n\n\n"
                "def train(x: torch.Tensor):  # graphsafe: region\n    optimizer = Stepper()\n    optimizer.step()",
                module=True),
    )
    invalid = (
        "self.policy.optimizer.step()",
        "opt = torch.optim.AdamW([x], lr=1e-3)\nopt.step()",
        "opt = torch.optim.Adagrad([x])\nopt.step()",
        Example(
            "def make_optimizer(params):\n    return torch.optim.AdamW(params, lr=1e-3)\n\n\n"
            "class C:\n    def __init__(self, params):\n        self.opt = make_optimizer(params)\n\n"
            "    def step(self):  # graphsafe: region\n        self.opt.step()",
            module=True,
        ),
        Example("class C(torch.optim.Optimizer):\n    def __init__(self, params, lr=1e-4, capturable: bool = False):\n"
                "        super().__init__(params, dict(lr=lr, capturable=capturable))\n\n"
                "    def step(self):  # graphsafe: region\n        self._cuda_graph_capture_health_check()", module=True),
    )

    def __init__(self) -> None:
        self.constructions: dict[tuple[str, str], _Construction] = {}
        self.steps: list[_Step] = []
        self.factories: dict[str, _Construction] = {}  # function of this file → the optimizer it returns
        self.made_by: dict[tuple[str, str], str] = {}  # binding → the function of this file that made it
        self.unseen: list[_Step] = []  # optimizers stepped that this file never builds

    def visit_Assign(self, node: cst.Assign, ctx) -> None:
        value = node.value
        if not isinstance(value, cst.Call):
            return
        built = _construction(value, ctx)
        for target in node.targets:
            key = _binding(target.target, ctx)
            if key is None:
                continue
            if built is not None:
                self.constructions[key] = built
            elif type(value.func) is cst.Name:  # `self.opt = make_optimizer(model)`: decided in end_module
                self.made_by[key] = value.func.value

    def visit_Return(self, node: cst.Return, ctx) -> None:
        # `def make_optimizer(model): return torch.optim.AdamW(...)` (or `opt = ...; return opt`)
        value = node.value
        if type(value) is cst.Call:
            built = _construction(value, ctx)
        elif type(value) is cst.Name:
            built = self.constructions.get(("<global>", value.value))
        else:
            return
        function = ctx.function_node
        if built is not None and function is not None and ctx.class_key is None:
            self.factories[function.name.value] = built

    calls = Callees({"step", *_HEALTH_CHECKS})

    def visit_Call(self, node: cst.Call, ctx) -> None:
        func = node.func
        if isinstance(func, cst.Attribute) and func.attr.value in _HEALTH_CHECKS:
            # an optimizer of the project (`class Lamb(Optimizer)`) asks torch whether its groups are
            # capturable, in a file that defaults them not to be: torch raises during capture
            if ctx.is_self(func.value) and ctx.class_key and _DEFAULTS_NOT_CAPTURABLE.search(ctx.source):
                ctx.report(self, node, optimizer=ctx.class_key.rpartition(".")[2],
                           detail="checks that its param groups are capturable, and this file builds them with "
                                  "capturable=False unless told otherwise")
            return
        if isinstance(func, cst.Attribute) and func.attr.value == "step":
            key = _binding(func.value, ctx)
            if key is not None:
                self.steps.append(_Step(node, key, ctx.here(), _known_other_class(func.value, ctx)))
            elif _named_like_an_optimizer(func.value) and not _known_other_class(func.value, ctx):
                self.unseen.append(_Step(node, ("", ""), ctx.here()))  # `self.policy.optimizer.step()`

    def end_module(self, ctx) -> None:
        for step in self.steps:
            built = self.constructions.get(step.key) or self.constructions.get(("<global>", step.key[1]))
            if built is None:
                maker = self.made_by.get(step.key) or self.made_by.get(("<global>", step.key[1]))
                built = self.factories.get(maker) if maker is not None else None
            if built is None and _named_like_an_optimizer_key(step.key) and not step.other_class:
                self.unseen.append(step)
            if built is None or built.capturable:
                continue
            if built.cls in NEEDS_CAPTURABLE:
                fix = (
                    f"Build `{built.cls}` with `capturable=True` (needs CUDA parameters)",
                    [keyword_fix(ctx, built.call, "capturable", "True", built.statement)],
                    Applicability.UNSAFE,
                    "the optimizer then refuses parameters that are not on a CUDA device",
                )
                ctx.report(self, step.node, at=step.place, fix=fix, optimizer=built.cls,
                           detail="was built without capturable=True")
            elif built.cls in SILENT:
                ctx.report(
                    self, step.node, at=step.place, optimizer=built.cls,
                    detail="has no capturable mode: its step counter is read once at capture",
                    consequence=Consequence.SILENTLY_WRONG.value,
                )

        if "capturable" in ctx.source:
            return  # the file passes `capturable` somewhere: the optimizer may well be one of those
        for step in self.unseen:
            receiver = ctx.code_for(step.node.func.value)
            ctx.report(self, step.node, at=step.place, optimizer=receiver,
                       detail="is built where this file does not show; unless it passes capturable=True "
                              "(or is SGD), an Adam-family optimizer refuses to be captured")


def _named_like_an_optimizer(expr: cst.BaseExpression) -> bool:
    """`optimizer`, `self.critic.optimizer`, `self.policy_optim`, `self.optim_objs[p]`."""
    if isinstance(expr, cst.Subscript):
        expr = expr.value
    name = expr.attr.value if isinstance(expr, cst.Attribute) else expr.value if isinstance(expr, cst.Name) else None
    return name is not None and bool(_OPTIMIZER_NAME.search(name))


def _named_like_an_optimizer_key(key: tuple[str, str]) -> bool:
    return bool(_OPTIMIZER_NAME.search(key[1]))


def _known_other_class(expr: cst.BaseExpression, ctx) -> bool:
    """A receiver of a known class that is no torch optimizer (a project wrapper whose `step`
    the call graph follows into)."""
    kind = ctx.kind(expr)
    return kind.tag in ("object", "modules") and bool(kind.refs) and not any(
        r.startswith("torch.optim.") for r in kind.refs)


def _construction(call: cst.Call, ctx) -> _Construction | None:
    """`torch.optim.AdamW(...)`: which optimizer, and whether it passes `capturable=True`
    (None for any other call, SGD included: it needs nothing)."""
    func = call.func
    tail = func.attr.value if type(func) is cst.Attribute else func.value if type(func) is cst.Name else None
    if tail is None or (tail not in _OPTIMIZERS and not (type(func) is cst.Name and ctx.scope_imports_has(tail))):
        return None  # cheap: most calls are not optimizers (an alias is an imported name)
    name = ctx.resolve(func) or ""
    if not name.startswith("torch.optim."):
        return None
    capturable = any(
        a.keyword is not None and a.keyword.value == "capturable" and not (isinstance(a.value, cst.Name) and a.value.value == "False")
        for a in call.args
    )
    return _Construction(name.rpartition(".")[2], capturable, call, ctx.statement)


def _binding(expr: cst.BaseExpression, ctx) -> tuple[str, str] | None:
    """A stable key for where an optimizer lives: `self.opt` per class, a name per module."""
    if isinstance(expr, cst.Attribute) and ctx.is_self(expr.value) and ctx.class_key:
        return (ctx.class_key, expr.attr.value)
    if isinstance(expr, cst.Name):
        return ("<global>", expr.value)
    return None


# `lr=torch.tensor(1e-3)`: a device learning rate the step reads on the device, not a Python number
_TENSOR_LR = re.compile(r"""\blr\s*=\s*(?:torch\.)?(?:tensor|as_tensor|full)\(""")
_SCALERS = ("torch.amp.GradScaler", "torch.cuda.amp.GradScaler", "torch.amp.grad_scaler.GradScaler")


def stepped_optimizer(node: cst.Call, ctx) -> cst.BaseExpression | None:
    """The optimizer a call steps when it is a torch optimizer's step, whose kernels take the
    learning rate as a Python number from its param groups: `opt.step()` (`opt.step(closure)`)
    on an optimizer built by `torch.optim` or one named like an optimizer that no class of the
    project stands for, and `scaler.step(opt)` of a GradScaler. None for anything else, for a
    project optimizer (its own `group["lr"]` reads are judged where they are), and in a file that
    builds an optimizer with a tensor learning rate (`lr=torch.tensor(...)`)."""
    func = node.func
    if type(func) is not cst.Attribute or func.attr.value != "step" or _TENSOR_LR.search(ctx.source):
        return None
    if len(node.args) == 1 and node.args[0].keyword is None and not node.args[0].star and _is_scaler(func.value, ctx):
        optimizer = node.args[0].value
    elif not node.args or (len(node.args) == 1 and node.args[0].keyword is None and not node.args[0].star):
        optimizer = func.value
    else:
        return None
    kind = ctx.kind(optimizer)
    built_by_torch = kind.tag == "object" and any(
        r.startswith("torch.optim.") and not r.startswith("torch.optim.lr_scheduler.") for r in kind.refs)
    named = _named_like_an_optimizer(optimizer) and not _known_other_class(optimizer, ctx) and not kind.is_tensor
    return optimizer if built_by_torch or named else None


def scheduled_here(ctx) -> frozenset[str]:
    """The optimizers this file builds learning-rate schedulers on, as written (`self.opt` of
    `torch.optim.lr_scheduler.ReduceLROnPlateau(self.opt, ...)`); empty where it builds none."""
    if "lr_scheduler" not in ctx.source:
        return frozenset()
    return frozenset(
        ctx.code_for(_first_argument(node)) for node in descendants(ctx.cst_module)
        if type(node) is cst.Call and _first_argument(node) is not None
        and (ctx.resolve(node.func) or "").startswith("torch.optim.lr_scheduler."))


def _first_argument(call: cst.Call) -> cst.BaseExpression | None:
    """The optimizer a scheduler is built on: its first positional argument or `optimizer=`."""
    for arg in call.args:
        if arg.keyword is None and not arg.star:
            return arg.value
        if arg.keyword is not None and arg.keyword.value == "optimizer":
            return arg.value
    return None


def _is_scaler(expr: cst.BaseExpression, ctx) -> bool:
    """`scaler` in `scaler.step(opt)`: a GradScaler, or named like one where nothing says what it is."""
    kind = ctx.kind(expr)
    if kind.tag == "object" and kind.refs:
        return any(r in _SCALERS for r in kind.refs)
    name = expr.attr.value if type(expr) is cst.Attribute else expr.value if type(expr) is cst.Name else ""
    return name.lower().lstrip("_").endswith("scaler")


RULES = (OptimizerNotCapturable,)
