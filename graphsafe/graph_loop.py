"""`graph` on a region whose loop exits on device data: the loop body is graphed instead.

Where the loop is in a function the region calls (odeint() → solver.integrate() → `while t > t1:
self.state = self._step(self.state)`), the method the body calls is graphed, on its class: the
region, the loop and the rest of its body stay eager (plan_callee_loop).

The region's file is staged with the body moved into its own function (rewriters/loop_body.py),
in a copy of the analysed tree; `graph`'s plan then runs on that function as the region, and its
result is mapped back onto the user's files: the region's file gets both the extraction and what
the plan did to the body. Reads and writes text only: no torch."""

from __future__ import annotations

import dataclasses
import os
import tempfile
from pathlib import Path

from graphsafe.analyzer.grouping import each_use
from graphsafe.fixer import read_text
from graphsafe.rewriters.loop_body import exit_loops, extract_loop_body, loop_body_lines, marked_loops
from graphsafe.writing import SourceEncoding


def exit_loop_in(project, region, defined: str) -> tuple[int, int] | None:
    """(the loop's line, the first line of its exit that has a diagnostic) for a top-level loop
    of the region whose exit (the trailing `if ...: break`) has a hazard, or None."""
    read = read_text(region.path)
    if isinstance(read, str):
        return None
    from graphsafe.graph_command import _abs

    lines = {d.start.line for d in each_use(project.diagnostics) if _abs(d.path) == _abs(region.path)}
    for loop_line, tail in exit_loops(read[1], defined):
        hit = sorted(lines & set(tail))
        if hit:
            return loop_line, hit[0]
    return None


def marked_loop_in(region, defined: str) -> tuple[int, int] | None:
    """(the loop's line, the same line) for a top-level loop of the region marked as the region
    itself (`for ...:  # graphsafe: region`: its body is the step, analyzer/step_loops.py)."""
    read = read_text(region.path)
    if isinstance(read, str):
        return None
    found = marked_loops(read[1], defined)
    return (found[0], found[0]) if found else None


def plan_loop_body(plan, paths: list[Path], settings, project, region, defined: str, loop: tuple[int, int],
                   files, root: Path, facts_file):
    """The plan of the loop body as the region, on the user's paths; None where it cannot be moved
    (the caller plans the region as it is; the reason is in the returned note)."""
    from graphsafe.graph_command import _abs, _copy_tree, _receiver_pattern, _shown

    original_bytes, text = read_text(region.path)
    body, why = extract_loop_body(text, defined, loop[0])
    why_loop = (f"the loop is marked as the region" if loop[1] == loop[0]
                else f"the loop's exit reads the device (line {loop[1]})")
    if body is None:
        return None, f"{_shown(region.path)}:{loop[0]}: {why_loop} but its body cannot be graphed alone: {why}"
    with tempfile.TemporaryDirectory(prefix="graphsafe-loop-") as stage:
        stage_root = Path(stage)
        copies = _copy_tree(files, root, stage_root)
        region_copy = copies[str(_abs(region.path))]
        try:
            staged = SourceEncoding.of(original_bytes).encode(body.source)
        except UnicodeEncodeError as error:
            return None, f"{_shown(region.path)}: the loop body cannot be written like the file: {error}"
        region_copy.write_bytes(staged)
        staged_paths = [stage_root / _abs(p).relative_to(root) for p in paths]
        # through the class the user named when it inherits the region (its overrides, not every subclass's)
        pattern = (_receiver_pattern(project, region, copies, stage_root, body.body_name)
                   or f"{region_copy.relative_to(stage_root).as_posix()}::{body.body_name}")
        inner_settings = dataclasses.replace(settings, root=stage_root, facts_file=facts_file)
        inner = plan(staged_paths, inner_settings, pattern, use_cache=False)
        back = {os.path.realpath(copy): original for original, copy in copies.items()}
        shown_stage, shown_root = _shown(str(stage_root)), _shown(str(root))

        def mapped(note: str) -> str:
            return note.replace(str(stage_root), str(root)).replace(shown_stage + os.sep, shown_root + os.sep)

        changed = {}
        for path, (_, new) in inner.changed.items():
            original = back.get(os.path.realpath(path), path)
            changed[original] = (Path(original).read_bytes(), new)
        changed.setdefault(str(_abs(region.path)), (original_bytes, staged))
        blocking = [dataclasses.replace(d, path=_shown(back.get(os.path.realpath(d.path), d.path)))
                    for d in inner.blocking]
        note = (f"{_shown(region.path)}:{loop[0]}: {why_loop}: its body "
                f"moved into `{body.body_name}`, which is graphed; the loop, its exit and the rest of "
                f"{region.display} run eagerly around it")
        result = dataclasses.replace(
            inner, region=region.display, region_path=region.path, changed=changed, blocking=blocking,
            callee_changes=[mapped(n) for n in inner.callee_changes],
            callee_refusals=[mapped(n) for n in inner.callee_refusals],
            notes=[note] + [mapped(n) for n in inner.notes], host_inputs=[mapped(n) for n in inner.host_inputs])
    return result, ""



@dataclasses.dataclass(frozen=True)
class CalleeLoop:
    """A loop that exits on device data in a function the region calls, and what its body calls."""

    holder: str  # the function holding the loop (`RKAdaptiveStepsizeODESolver._advance`)
    holder_path: str
    loop_line: int
    exit_line: int  # the first line of its exit with a diagnostic
    body_lines: tuple[int, ...]  # the body before its exit: stays eager
    method: str  # the one function its body calls (`RKAdaptiveStepsizeODESolver._adaptive_step`)
    method_path: str
    seen: bool  # a traced run saw the loop's exit read the device (--facts)


def loop_in_callee(project, region) -> tuple[CalleeLoop | None, str]:
    """The loop exiting on device data in what the region calls, or (None, why not; "" where there is
    none). Several such loops (a solver class picked at run time from a dict): the one a traced run
    saw exit on the device; still several, or none seen, a refusal naming them."""
    from graphsafe.analyzer.callgraph import Project
    from graphsafe.graph_command import _abs, _shown

    graph = Project(project.facts)
    reach = graph.reach([region])
    hazard_lines: dict[Path, set[int]] = {}
    for d in each_use(project.diagnostics):
        hazard_lines.setdefault(_abs(d.path), set()).add(d.start.line)
    texts: dict[Path, str | None] = {}
    found = []  # (unit key, located, loop line, exit line, seen)
    for key in reach.order:
        located = graph.units.get(key)
        if key == region.function or located is None or not located.unit.is_function:
            continue
        path = _abs(located.path)
        if not hazard_lines.get(path):
            continue
        if path not in texts:
            read = read_text(path)
            texts[path] = None if isinstance(read, str) else read[1]
        if texts[path] is None:
            continue
        for loop_line, tail in exit_loops(texts[path], located.unit.display):
            hit = sorted(hazard_lines[path] & set(tail))
            if hit:
                found.append((key, located, loop_line, hit[0], bool(graph.observed.branch_lines(key) & set(tail))))
    if not found:
        return None, ""
    seen = [f for f in found if f[4]]
    chosen = seen or found
    if len(chosen) > 1:
        named = ", ".join(f"{f[1].unit.display} ({_shown(f[1].path)}:{f[2]})" for f in chosen[:6])
        how = ("the traced run saw each of them" if seen else
               "which one runs is decided at run time: give the run-time facts (--facts FILE from "
               "`graphsafe trace --save-facts`) to name the one the step runs" if not graph.observed else
               "the traced run saw none of them")
        return None, (f"{region.display} reaches {len(chosen)} loops that exit on device data ({named}): "
                      f"not graphed through one of them, {how}; or give --region the method a loop body calls")
    key, located, loop_line, exit_line, was_seen = chosen[0]
    path = _abs(located.path)
    where = f"{_shown(located.path)}:{loop_line}"
    body = loop_body_lines(texts[path], located.unit.display, loop_line)
    if not body:
        return None, f"{where}: the loop in {located.unit.display} exits on device data but has no body before its exit"
    unit, seen_calls = located.unit, frozenset(graph.observed.calls_from(key)) or None
    called = []
    for ref, line in zip(unit.calls, unit.call_lines or (0,) * len(unit.calls)):
        if line in body:
            called += [c for c, _ in graph.callees_on(ref, unit.class_key, None, seen_calls)
                       if c in graph.units and graph.units[c].unit.is_function and c not in called]
    if len(called) != 1:
        names = ", ".join(graph.units[c].unit.display for c in called[:6]) or "nothing of the project"
        return None, (f"{where}: the loop in {located.unit.display} exits on device data (line {exit_line}); its "
                      f"body calls {names}, not one function to graph: give --region that loop's function or "
                      "the method its body calls")
    method = graph.units[called[0]]
    return CalleeLoop(unit.display, located.path, loop_line, exit_line, tuple(body), method.unit.display,
                      method.path, was_seen), ""


def plan_callee_loop(plan, paths: list[Path], settings, project, region, root: Path, use_cache: bool):
    """The plan of the method a callee's device-exit loop body calls, wired on its class with
    graph_method (the region builds its instances, one per call: they share a graph per state
    layout); (None, why) where there is no such loop or it cannot be used."""
    from graphsafe.graph_command import GraphError, _abs, _shown, wiring_options

    loop, why = loop_in_callee(project, region)
    if loop is None:
        return None, why
    pattern = f"{_abs(loop.method_path).relative_to(root).as_posix()}::{loop.method}"
    try:
        inner = plan(paths, settings, pattern, use_cache=use_cache, callee_loops=False)
    except GraphError as error:
        return None, f"{_shown(loop.holder_path)}:{loop.loop_line}: {loop.method}, which the loop body calls, " \
                     f"cannot be planned: {error}"
    seen = "; the traced run saw it exit on the device" if loop.seen else ""
    eager = ", ".join(map(str, sorted(set(loop.body_lines))))
    note = (f"{_shown(loop.holder_path)}:{loop.loop_line}: {region.display} reaches a loop in {loop.holder} that "
            f"exits on device data (line {loop.exit_line}){seen}: no one graph replays a data-dependent number of "
            f"steps, so {loop.method}, which its body calls, is graphed; {region.display}, the loop and the rest of "
            f"its body (line {eager}) run eagerly around it")
    options = dict(wiring_options(inner.split, inner.blocking, inner.shapes_vary), shared=True)
    return dataclasses.replace(inner, notes=[note] + inner.notes, shared=True,
                               wiring=method_wiring(inner.wire, options, region.display)), ""


def method_wiring(wire: dict, options: dict, region: str) -> str:
    """graph_method on the core's class (or module): the region builds the objects per call, so no
    caller holds one to wire; every instance gets the graphed core."""
    owner = wire.get("owner") or wire.get("module") or "module"
    given = "".join(f", {k}={v!r}" for k, v in options.items())
    return (f"from graphsafe.runtime.graphed import graph_method\n"
            f"graph_method({owner}, {wire['name']!r}{given})   # once, after importing {wire.get('module') or 'it'}: "
            f"every {owner} that {region}() builds runs the graphed {wire['name']} (instances whose state has one "
            f"layout share one graph); keep calling {region}() as before")
