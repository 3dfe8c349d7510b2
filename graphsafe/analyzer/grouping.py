"""One diagnostic per hazard: the uses of one per-step value in one function become one.

A rule with `groups_uses` reports each place its hazard is used (GS301 at every read of a
per-step number: `s_churn` read six times in one sampler step is six reports). Reports with
the same code, file, message (it names the value and where it comes from), region and call
chain (so the same function) are one hazard: they are grouped under the first, whose message
lists the other lines and whose `also` keeps each other use, position and fix included.
Everything that applies fixes or matches lines works on `each_use`, so grouping changes what
is shown, never what is fixed or suppressed.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Iterable

from graphsafe.model import Diagnostic


def group_uses(diagnostics: Iterable[Diagnostic]) -> list[Diagnostic]:
    """`diagnostics` (in reporting order) with each hazard's uses grouped at its first use."""
    from graphsafe.rules import BY_CODE  # here: the editor's modules use `uses` without the rules

    groups: dict[tuple, list[Diagnostic]] = {}
    order: list[Diagnostic | tuple] = []
    for d in diagnostics:
        rule = BY_CODE.get(d.code)
        if rule is None or not rule.groups_uses or d.region is None:
            order.append(d)
            continue
        key = (d.code, d.path, d.message, d.region, d.chain)
        if key not in groups:
            groups[key] = []
            order.append(key)
        groups[key].extend(uses(d))
    return [_grouped(groups[item]) if isinstance(item, tuple) else item for item in order]


def _grouped(found: list[Diagnostic]) -> Diagnostic:
    first, others = found[0], tuple(found[1:])
    if not others:
        return first
    lines = sorted({d.start.line for d in others})
    listed = ", ".join(str(line) for line in lines)
    message = f"{first.message} (also used at line{'s' if len(lines) > 1 else ''} {listed})"
    return replace(first, message=message, also=others)


def uses(diagnostic: Diagnostic) -> tuple[Diagnostic, ...]:
    """The uses a diagnostic stands for, each as reported on its own (itself when not grouped)."""
    if not diagnostic.also:
        return (diagnostic,)
    first = replace(diagnostic, message=diagnostic.also[0].message, also=())  # a group shares one message
    return (first, *diagnostic.also)


def each_use(diagnostics: Iterable[Diagnostic]) -> list[Diagnostic]:
    return [use for d in diagnostics for use in uses(d)]
