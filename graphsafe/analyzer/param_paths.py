"""The path of a per-step number parameter from its source, for the report (issue 18, point 1).

A callee's number parameter is per step because some caller passes it one: a loop counter of
the loop that drives the steps, or its own per-step parameter, passed on through any number of
calls. The project pass decides that (Project.param_is_varying); this module retraces one such
path, source first, so that the message says where the value comes from:
"(path: `step` is the loop counter of `for step in range(...)` in `Searcher.forward` at
beam.py:25 → `Searcher.search_step` passes its `step` at beam.py:19)".
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from graphsafe.analyzer import step_loops
from graphsafe.analyzer.facts import GROUP_KEY, HELD_COUNTER, LOOP

if TYPE_CHECKING:
    from graphsafe.analyzer.callgraph import Project

_MAX_HOPS = 8


def path_note(project: Project, condition: tuple[str, ...] | None, roots: frozenset) -> str:
    """The message suffix naming where a parameter's per-step value comes from ("" if none is
    shown: not a parameter's condition, or a root's own parameter no caller explains). Where the
    path starts at a region root's parameter that no visible call fills, the value may vary:
    said first, as for the root's own uses (Project.may_vary_note), to keep it apart."""
    if not condition or condition[0] != "param" or len(condition) < 3:
        return ""
    hops: list[str] = []
    start = _hops(project, condition[1], condition[2], roots, len(condition) == 4, set(), hops)
    if not hops:
        return ""
    path = f"path: {' → '.join(reversed(hops))}"
    if start is not None and start[0] in roots and project.root_param_varies(*start, roots) is None:
        return f" (may vary: no call of `{project.units[start[0]].unit.display}` shows what it is passed; {path})"
    return f" ({path})"


def _hops(project: Project, function: str, name: str, roots: frozenset, callers_only: bool, seen: set,
          hops: list[str]) -> tuple[str, str] | None:
    """Adds one phrase per call, from the parameter up to the source; returns the (function,
    parameter) that starts the path where no caller of it shows more (None: the path starts at
    a loop or another source)."""
    if (function, name) in seen or len(seen) >= _MAX_HOPS:
        return None
    seen.add((function, name))
    slots = project._param_slots(function, name)
    # the caller on the report's own call chain first (the one the region reached it through),
    # so that the path is the region's, not another region's that calls the same helper
    through = project._reachable.get(function)
    callers = sorted(project._scalar_callers().get(function, ()), key=lambda c: (c[0] != through, c[0]))
    for caller, slot_conditions in callers:
        for slot, cond in slot_conditions:
            if slot not in slots or (callers_only and cond == (LOOP,)):
                continue
            if not project.argument_holds(cond, caller, function, roots):
                continue
            shown = f"`{project.units[caller].unit.display}`"
            at = _call_site(project, caller, function)
            if cond and cond[0] == LOOP and len(cond) >= 3:
                hops.append(f"{cond[2]} in {shown} at {at}")
                return None
            if cond and cond[0] == "param" and len(cond) >= 3:
                hops.append(f"{shown} passes its `{cond[2]}` at {at}")
                before = len(hops)
                start = _hops(project, cond[1], cond[2], roots, len(cond) == 4, seen, hops)
                return start if len(hops) > before else (cond[1], cond[2])
            hops.append(f"{shown} passes {_value(cond)} at {at}")
            return None
    return None


def _value(condition: tuple[str, ...]) -> str:
    """What an argument of this condition is, in words."""
    if condition == (LOOP,):
        return "a value computed from its loop variable"
    if len(condition) == 2 and condition[0] == GROUP_KEY:
        return f'param-group entry `["{condition[1]}"]`'
    if len(condition) == 2 and condition[0] == HELD_COUNTER:
        return f"`{condition[1]}`"
    if len(condition) == 2 and condition[0] == step_loops.STEP_LOOP:
        return "a number its loop region counts with, new on every pass"
    if len(condition) == 2 and not condition[0].startswith(("@", "host-")):
        return f"attribute `{condition[1]}` of {condition[0].rpartition('.')[2]}"
    return "a per-step number"


def _call_site(project: Project, caller: str, callee: str) -> str:
    """`path:line` of the caller's call of `callee` (the path alone where the line is not known)."""
    located = project.units[caller]
    unit = located.unit
    for index, ref in enumerate(unit.calls):
        if callee in project.callees(ref, unit.class_key):
            line = unit.call_lines[index] if index < len(unit.call_lines) else 0
            return f"{located.path}:{line}" if line else located.path
    return located.path
