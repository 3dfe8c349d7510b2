"""`graph` on a region whose loop exits on device data: the loop body is graphed instead.

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
from graphsafe.rewriters.loop_body import exit_loops, extract_loop_body
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


def plan_loop_body(plan, paths: list[Path], settings, project, region, defined: str, loop: tuple[int, int],
                   files, root: Path, facts_file):
    """The plan of the loop body as the region, on the user's paths; None where it cannot be moved
    (the caller plans the region as it is; the reason is in the returned note)."""
    from graphsafe.graph_command import _abs, _copy_tree, _receiver_pattern, _shown

    original_bytes, text = read_text(region.path)
    body, why = extract_loop_body(text, defined, loop[0])
    if body is None:
        return None, f"{_shown(region.path)}:{loop[0]}: the loop's exit reads the device (line {loop[1]}) but its " \
                     f"body cannot be graphed alone: {why}"
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
        note = (f"{_shown(region.path)}:{loop[0]}: the loop's exit reads the device (line {loop[1]}): its body "
                f"moved into `{body.body_name}`, which is graphed; the loop, its exit and the rest of "
                f"{region.display} run eagerly around it")
        result = dataclasses.replace(
            inner, region=region.display, region_path=region.path, changed=changed, blocking=blocking,
            callee_changes=[mapped(n) for n in inner.callee_changes],
            callee_refusals=[mapped(n) for n in inner.callee_refusals],
            notes=[note] + [mapped(n) for n in inner.notes], host_inputs=[mapped(n) for n in inner.host_inputs])
    return result, ""

