"""Arguments of torch ops that are values baked into the recorded kernel (GS301's sinks, issue 18).

A Python number given to a torch op as a value (the fill of `torch.full(size, t)`, the `min=` of
`clamp`, the start of `arange(t, n)` or of `narrow(d, t, n)`, the `alpha=` of `add`) is read once
when the kernel is recorded. Most such ops are flagged by GS301's general rule (a number argument
of a torch function or a tensor method), which leaves out what usually holds sizes: factories
(`torch.full((n,), ...)`), `fill_value=`, and methods like `narrow`/`new_full`; and it needs a
tensor receiver. This table names, per op, the arguments that are values whatever the others
are, so those are sinks even where sizes sit beside them. Kept as data (Pysa's models): one row
per op, positions counted without the receiver of a method.
"""

from __future__ import annotations

import libcst as cst

# torch function → (positions, keywords) of its value arguments
_FUNCTIONS: dict[str, tuple[tuple[int, ...], tuple[str, ...]]] = {
    "full": ((1,), ("fill_value",)),
    "full_like": ((1,), ("fill_value",)),
    "arange": ((0, 1, 2), ("start", "end", "step")),
    "linspace": ((0, 1), ("start", "end")),
    "logspace": ((0, 1), ("start", "end", "base")),
    "clamp": ((1, 2), ("min", "max")),
    "clip": ((1, 2), ("min", "max")),
    "pow": ((1,), ("exponent",)),
    "where": ((1, 2), ("input", "other")),
    "roll": ((1,), ("shifts",)),
    "narrow": ((2,), ("start",)),
    "masked_fill": ((2,), ("value",)),
    "index_fill": ((3,), ("value",)),
    "lerp": ((2,), ("weight",)),
    "add": ((), ("alpha",)),
    "sub": ((), ("alpha",)),
    "addcmul": ((), ("value",)),
    "addcdiv": ((), ("value",)),
}

# tensor method → (positions, keywords): the same ops called on the tensor (`x.new_full(size, t)`)
_METHODS: dict[str, tuple[tuple[int, ...], tuple[str, ...]]] = {
    "new_full": ((1,), ("fill_value",)),
    "fill_": ((0,), ("value",)),
    "clamp": ((0, 1), ("min", "max")),
    "clip": ((0, 1), ("min", "max")),
    "clamp_min": ((0,), ("min",)),
    "clamp_max": ((0,), ("max",)),
    "pow": ((0,), ("exponent",)),
    "roll": ((0,), ("shifts",)),
    "narrow": ((1,), ("start",)),
    "masked_fill": ((1,), ("value",)),
    "index_fill": ((2,), ("value",)),
    "lerp": ((1,), ("weight",)),
    "add": ((), ("alpha",)),
    "sub": ((), ("alpha",)),
    "addcmul": ((), ("value",)),
    "addcdiv": ((), ("value",)),
}
# in-place forms (`x.clamp_(min=t)`, `x.masked_fill_(m, t)`) take the same arguments
_METHODS.update({f"{name}_": spec for name, spec in list(_METHODS.items()) if not name.endswith("_")})


def function_values(name: str, call: cst.Call) -> list[cst.BaseExpression]:
    """The value arguments of `torch.<name>(...)` (`name` without the module), [] if none."""
    return _picked(_FUNCTIONS.get(name), call)


def method_values(method: str, call: cst.Call) -> list[cst.BaseExpression]:
    """The value arguments of `tensor.<method>(...)`, [] if none."""
    return _picked(_METHODS.get(method), call)


def _picked(spec: tuple[tuple[int, ...], tuple[str, ...]] | None, call: cst.Call) -> list[cst.BaseExpression]:
    if spec is None:
        return []
    positions, keywords = spec
    found: list[cst.BaseExpression] = []
    position = 0
    for arg in call.args:
        if arg.star:
            return found  # `full(*shape, t)`: positions after a spread are unknown
        if arg.keyword is not None:
            if arg.keyword.value in keywords:
                found.append(arg.value)
            continue
        if position in positions:
            found.append(arg.value)
        position += 1
    return found
