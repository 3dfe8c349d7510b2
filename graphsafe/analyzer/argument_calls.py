"""Library methods that run a method of an object they are given, which the call graph follows.

torch is vocabulary, not code the call graph walks (libraries.py), so what its methods do with
their arguments is written here as data: `scaler.step(optimizer)` on a GradScaler runs
`optimizer.step()` (after unscaling, unless a gradient is inf/NaN), so a region that steps
through a scaler reaches the optimizer's own `step` (a project optimizer's per-step hazards).
A receiver counts when its class is named like the torch class (ports such as an NPU
GradScaler keep the contract).
"""

from __future__ import annotations

import libcst as cst

GRAD_SCALERS = frozenset(
    """torch.amp.GradScaler torch.cuda.amp.GradScaler torch.amp.grad_scaler.GradScaler
    torch.cuda.amp.grad_scaler.GradScaler""".split()
)

# (class name, method) → (position, keyword) of the argument, and the method run on it
RUNS_ON_ARGUMENT: dict[tuple[str, str], tuple[int, str, str]] = {
    ("GradScaler", "step"): (0, "optimizer", "step"),
}
METHODS = frozenset(method for _, method in RUNS_ON_ARGUMENT)


def method_run_on_argument(call: cst.Call, receiver_classes: tuple[str, ...]) -> tuple[cst.BaseExpression, str] | None:
    """(argument, method) that `call`, a method call on an instance of `receiver_classes`,
    runs on one of its arguments; None when it runs none (or the argument is not given)."""
    if type(call.func) is not cst.Attribute:
        return None
    method = call.func.attr.value
    for cls in receiver_classes:
        rule = RUNS_ON_ARGUMENT.get((cls.rpartition(".")[2], method))
        if rule is None:
            continue
        position, keyword, runs = rule
        positional = [a for a in call.args if a.keyword is None and not a.star]
        if len(positional) > position:
            return positional[position].value, runs
        named = next((a for a in call.args if a.keyword is not None and a.keyword.value == keyword), None)
        if named is not None:
            return named.value, runs
    return None
