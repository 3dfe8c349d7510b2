"""Kinds where an `if` without `else` joins the path through its body and the path around it.

The walk binds names in source order, so after

    accept = ratio <= 1          # a bool tensor
    if dt > max_step:
        accept = False           # a Python bool on this path only
    if accept: ...

`accept` would read as a Python bool, though on the path that skips the `if` it is still the
tensor and `if accept:` reads the device there. At the join a name that is a tensor on one path
and a Python value on the other is a tensor (as `m if c else None` is one), with a printable
reason; one that is unknown on one path only because a project call decides it keeps that
pending id, so the project pass can still ask. A body that always leaves (`return`, `raise`,
`break`, `continue`) does not reach the join: after the `if`, names have their kinds from before it.
"""

from __future__ import annotations

import libcst as cst

from graphsafe.analyzer import tensorness as T

_LEAVING = (cst.Return, cst.Raise, cst.Break, cst.Continue)


def leaves(node: cst.If | cst.Else) -> bool:
    """Does the body of `if` (or of its `else`) always leave (its last statement a `return`,
    `raise`, `break` or `continue`)? Then the code after the `if` sees the kinds from before it."""
    body = node.body
    last = body.body[-1] if body.body else None
    if type(body) is cst.IndentedBlock and type(last) is cst.SimpleStatementLine:
        last = last.body[-1] if last.body else None
    return isinstance(last, _LEAVING)


def joined(name: str, around: tuple[T.Kind, str | None], through: tuple[T.Kind, str | None]
           ) -> tuple[T.Kind, str | None] | None:
    """The (kind, pending id) of `name` after the `if`, from its kind on the path around the body
    and through it; None where the walk's own answer (the body's binding) stands."""
    kinds = (around[0], through[0])
    if around[0] == through[0]:
        return None
    tensor = next((k for k in kinds if k.is_tensor), None)
    if tensor is not None and all(k.is_tensor or k.tag == "scalar" for k in kinds):
        why = tensor.why or f"`{name}` is a tensor on one path through the `if` before this"
        return T.Kind(T.TENSOR.tag, why=why), None
    pending = next((state for state in (around, through) if state[0].tag == "unknown" and state[1]), None)
    if pending is not None and all(k.tag in ("unknown", "scalar") for k in kinds):
        return pending
    return None


def joined_sources(paths: list[tuple[dict, bool]]) -> dict:
    """The per-step sources of names after an `if`: [(sources at the end of a path, whether that
    path leaves)]. A name with a source on any path that reaches the join has one after it
    (`lam` drawn on one branch, rebound from a helper on the other, is per-step where it is read);
    where every path leaves, the walk's own order stands (the last path)."""
    reaching = [sources for sources, leaving in paths if not leaving] or [paths[-1][0]]
    found: dict = {}
    for sources in reaching:
        for name, source in sources.items():
            found.setdefault(name, source)
    return found
