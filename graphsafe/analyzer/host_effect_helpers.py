"""Calls of a helper whose work is host bookkeeping (GS501/GS503 at the call site).

`self.track_data("Loss / Policy loss", loss)` with `def track_data(self, tag, value):
self.tracking_data[tag].append(value)` in a base class of another module: the helper's own
line is reported where it appends, but the helper is right outside a region; what runs once at
capture, and never on replay, is each call the region makes, and the call is what the region's
author moves out of the step. The walker sees only a call made for its effect (a bare call
statement) of a project function; it reports it on a condition the project pass decides
(`holds`): a function the call resolves to (one call deep) does host work of the rule's kind
(the first unconditional report in its own body is that rule's; one behind a default guard, such
as a debug flag, is not) and nothing else the rules always report but host effects.
"""

from __future__ import annotations

import libcst as cst

from graphsafe.analyzer.facts import CallRef

# Hit condition: (HOST_EFFECT_HELPER, rule code, class of the calling code, "kind|target" call refs...)
HOST_EFFECT_HELPER = "host-effect-helper"
# what a helper may report and still be only host bookkeeping: logging, containers kept, files, progress bars
HOST_EFFECT_CODES = frozenset({"GS501", "GS503", "GS504", "GS505"})


class _Candidates(dict):
    """id of a bare call statement → its "kind|target" refs (None: no candidate), asked by two
    rules (GS501, GS503) of the same statement: worked out once per file."""


def condition(statement: cst.Expr, code: str, ctx) -> tuple[str, ...] | None:
    """The condition under which the bare call `statement` does host work of rule `code`
    through a helper of the project, or None where it is no candidate."""
    known = ctx.file_state(_Candidates)
    if id(statement) not in known:
        known[id(statement)] = _helper_refs(statement, ctx)
    refs = known[id(statement)]
    return (HOST_EFFECT_HELPER, code, ctx.class_key or "", *refs) if refs else None


def _helper_refs(statement: cst.Expr, ctx) -> tuple[str, ...] | None:
    """The project functions ("kind|target") the bare call `statement` may run, or None where it
    is no candidate (a library's function, another package's)."""
    call = statement.value
    if type(call) is not cst.Call or type(call.func) not in (cst.Name, cst.Attribute):
        return None
    resolved = ctx.resolve(call.func)
    head = call.func
    while type(head) is cst.Attribute:
        head = head.value
    imported = type(head) is cst.Name and ctx.scope.imports.is_imported(head.value)
    if imported and resolved is not None and resolved.partition(".")[0] != ctx.module.partition(".")[0]:
        return None  # another package's function: torch's, logging's (`wandb.log(...)`: GS501's own)
    return tuple(dict.fromkeys(f"{ref.kind}|{ref.target}" for ref in ctx.call_refs(call.func))) or None


def holds(project, condition: tuple[str, ...]) -> bool:
    """Is the first unconditional report in the body of a function the call resolves to one of
    rule `condition[1]`, with no other unconditional report but host effects?"""
    code, class_key = condition[1], condition[2] or None
    for raw in condition[3:]:
        for key in project.callees(CallRef(*raw.split("|", 1)), class_key):
            hits = [hit for hit in project.units[key].unit.hits if hit.condition is None and not hit.guard]
            # one report per call: the rule of the first thing the helper does; a helper that
            # always does device work a rule reports (a sync, a copy) is left to its own lines
            if (hits and all(hit.code in HOST_EFFECT_CODES for hit in hits)
                    and min(hits, key=lambda hit: (hit.start.line, hit.start.column)).code == code):
                return True
    return False
