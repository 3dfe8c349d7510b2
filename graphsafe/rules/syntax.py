"""Small questions rules ask about call syntax: keyword arguments, positionals, literals."""

from __future__ import annotations

import libcst as cst


def keyword(call: cst.Call, name: str) -> cst.Arg | None:
    """The `name=...` argument of `call`, if any."""
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == name:
            return arg
    return None


def positional(call: cst.Call) -> list[cst.Arg]:
    """The plain positional arguments (no keywords, no `*args`/`**kwargs`)."""
    return [a for a in call.args if a.keyword is None and not a.star]


def string_value(expr: cst.BaseExpression) -> str | None:
    """The value of a plain string literal, else None."""
    if isinstance(expr, cst.SimpleString):
        value = expr.evaluated_value
        return value if isinstance(value, str) else None
    return None


def is_true(expr: cst.BaseExpression) -> bool:
    return isinstance(expr, cst.Name) and expr.value == "True"


def literal(expr: cst.BaseExpression) -> object:
    """The value of a str/int/bool/None literal, or `...` when it is not a literal."""
    if isinstance(expr, cst.SimpleString):
        return expr.evaluated_value
    if isinstance(expr, cst.Integer):
        return int(expr.value, 0)
    if isinstance(expr, cst.Name) and expr.value in ("True", "False", "None"):
        return {"True": True, "False": False, "None": None}[expr.value]
    return ...


def environment_writes(node: cst.CSTNode, ctx) -> list[tuple[cst.BaseExpression, cst.BaseExpression]]:
    """(name, value) expressions an environment setting writes: `os.environ["X"] = v`,
    `os.environ.setdefault("X", v)`, `os.putenv("X", v)`; [] for anything else."""
    if isinstance(node, cst.Assign):
        found = []
        for target in node.targets:
            tgt = target.target
            if isinstance(tgt, cst.Subscript) and ctx.resolve(tgt.value) == "os.environ" and len(tgt.slice) == 1:
                index = tgt.slice[0].slice
                if isinstance(index, cst.Index):
                    found.append((index.value, node.value))
        return found
    if isinstance(node, cst.Call) and ctx.resolve(node.func) in ("os.environ.setdefault", "os.putenv"):
        args = positional(node)
        if len(args) == 2:
            return [(args[0].value, args[1].value)]
    return []
