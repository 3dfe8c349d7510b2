"""`graphsafe graph PATHS --region REGION`: make one region capturable, in one command.

1. analyse the region (with run-time facts where there are some);
2. split it at the capture boundary (rewriters/boundary.py): host work stays in the region's
   function, which now calls `<region>_core`, the tensor work that gets graphed;
3. apply every fix (unsafe ones included) reachable from the core, and only from it: the
   wrapper's logging and bookkeeping are kept, not deleted;
4. write the files (or with `--diff` print the patch and write nothing), then say what still
   blocks capture, line by line, and how to wire the core to `graphsafe.runtime.graphed`.

All of it happens in a scratch copy of the analysed files first: the user's files are written
only at the end, each only if it changed, with fix's guarantees (writing.write_fixed).
"""

from __future__ import annotations

import ast
import dataclasses
import difflib
import os
import re
import shutil
import sys
import tempfile
from collections import Counter
from pathlib import Path

from graphsafe.analyzer.engine import check_paths, discover_files
from graphsafe.analyzer.grouping import each_use
from graphsafe.config import Settings
from graphsafe.core_facts import facts_for_core
from graphsafe.fixer import fix_paths, read_text
from graphsafe.graph_loop import exit_loop_in, marked_loop_in, plan_callee_loop, plan_loop_body
from graphsafe.model import Diagnostic, RegionKind
from graphsafe.rewriters.boundary import SplitResult, convert_fixed_values, split_region
from graphsafe.rewriters.branch_select import select_left_branches
from graphsafe.rewriters.compiled_region import uncompiled_region
from graphsafe.rewriters.data_tail import data_dependent_tail
from graphsafe.rewriters.host_callees import host_callee_lines
from graphsafe.rewriters.host_inputs import host_inputs
from graphsafe.rewriters.moved_by_core import device_move_note, host_values_moved_by_core
from graphsafe.rewriters.left_blockers import settle_blockers
from graphsafe.rewriters.fixed_histogram import fixed_histogram
from graphsafe.rewriters.grad_zero import gradients_zeroed_in_place
from graphsafe.rewriters.nonzero_rows import writes_by_mask
from graphsafe.rewriters.rename_rebound import rename_rebound
from graphsafe.rewriters.replayed_appends import replayed_append_note, settled_by_replayed_append
from graphsafe.rewriters.smaller_region import smaller_region_advice
from graphsafe.rewriters.timing_events import timing_event_lines
from graphsafe.rewriters.trimmed_inputs import TRIMMED_SHAPES, TrimmedInputs, trim_in_wrapper
from graphsafe.rewriters.callee_state import Sources, fed_parameters, rewrite_callee_state, settled_by_carried
from graphsafe.rewriters.validation_capture import settled_by_validation_off, wrap_core_file
from graphsafe.rewriters.tensor_condition import assert_notes
from graphsafe.rewriters.warn_repair import unconditional_repairs
from graphsafe.rules.scalars import reads_scheduled_lr
from graphsafe.writing import SourceEncoding

EXIT_CLEAN, EXIT_FINDINGS = 0, 1
NOT_FIXED_HERE = ("GS701",)  # settled at run time by graphed(train=True), see plan()


class GraphError(Exception):
    """A reason the command cannot go on (printed as a usage error)."""


@dataclasses.dataclass
class GraphPlan:
    region: str
    region_path: str
    split: SplitResult
    core: str  # the pattern of the function that gets graphed
    changed: dict[str, tuple[bytes, bytes]]  # path -> (original, new)
    fixes: Counter
    blocking: list[Diagnostic]
    wiring: str
    wire: dict  # where graphed() goes: {"module", "owner" (a class, or "" for the module), "name"}
    callee_changes: list[str] = dataclasses.field(default_factory=list)  # callee state rewritten
    callee_refusals: list[str] = dataclasses.field(default_factory=list)  # and what could not be, with the line
    notes: list[str] = dataclasses.field(default_factory=list)  # checks made eager-only or device-side
    host_inputs: list[str] = dataclasses.field(default_factory=list)  # inputs made on the host: moved or why not
    shapes_vary: bool = False  # an input trimmed on the host: graphed(pad=False, shapes=N), a graph per length
    shared: bool = False  # graph_method(..., shared=True): the region builds its object per call (graph_loop.py)


def plan(paths: list[Path], settings: Settings, pattern: str, *, use_cache: bool = True,
         callee_loops: bool = True) -> GraphPlan:
    region_settings = dataclasses.replace(settings, regions=(pattern,), pattern_regions_only=True)
    project = check_paths(paths, region_settings, use_cache=use_cache)
    regions = [r for r in project.regions if r.kind is RegionKind.PATTERN]
    if not regions:
        raise GraphError(f"no function matches --region {pattern}")
    if len({(r.path, r.display) for r in regions}) > 1:
        names = ", ".join(sorted(f"{r.display} ({r.path}:{r.line})" for r in regions)[:6])
        raise GraphError(f"--region {pattern} names {len(regions)} functions ({names}): name one")
    region = regions[0]
    files = discover_files(paths, settings)
    root = _above_packages(Path(os.path.commonpath([str(_abs(f).parent) for f in files] +
                                                   [str(_abs(region.path).parent)])))
    # a loop that exits on device data (`if done.all(): break`), or one marked as the region: its body is
    # graphed instead (graph_loop.py)
    loop = exit_loop_in(project, region, _defined_as(project, region)) or marked_loop_in(region, _defined_as(project, region))
    loop_note = ""
    if loop is not None:
        staged, loop_note = plan_loop_body(plan, paths, settings, project, region, _defined_as(project, region), loop,
                                           files, root, _facts_file(settings))
        if staged is not None:
            return staged
    elif callee_loops:  # the loop is in what it calls (a solver's step loop): the method its body calls
        staged, loop_note = plan_callee_loop(plan, paths, settings, project, region, root, use_cache)
        if staged is not None:
            return staged
    with tempfile.TemporaryDirectory(prefix="graphsafe-graph-") as scratch:
        copies = _copy_tree(files, root, Path(scratch))
        region_copy = copies[str(_abs(region.path))]
        read = read_text(region_copy)  # the file's own encoding and line endings, kept when written back
        if isinstance(read, str):
            raise GraphError(f"{_shown(region.path)}: cannot read: {read}")
        original_bytes, text = read
        host_lines: dict[int, set[str]] = {}
        per_step: dict[int, set[str]] = {}
        reached: dict[int, set[str]] = {}  # a line of the region → hazards in what its calls reach
        for d in each_use(project.diagnostics):
            if _abs(d.path) == _abs(region.path):
                host_lines.setdefault(d.start.line, set()).add(d.code)
                number = per_step_number(d)
                if number:
                    per_step.setdefault(d.start.line, set()).add(number)
            if len(d.chain) > 1 and d.call_sites and _abs(d.call_sites[0].path) == _abs(region.path):
                reached.setdefault(d.call_sites[0].line, set()).add(d.code)
        defined = _defined_as(project, region)  # `Base.forward` for a pattern naming `Sub.forward`
        # a bare call whose callee only logs or prints is host work too (rewriters/host_callees.py)
        for line, codes in host_callee_lines(project.diagnostics, region.display, defined, region.path, text).items():
            host_lines.setdefault(line, set()).update(codes)
        text = _fixed_shapes(text, project.diagnostics, region.path, region_copy, original_bytes)
        text = _renamed(text, defined, host_lines, region_copy, original_bytes)
        # a host value the core moves to the device itself: its maker goes to the wrapper (moved_by_core.py)
        makers, device_moves = host_values_moved_by_core(text, defined, host_lines)
        for line, codes in makers.items():
            host_lines.setdefault(line, set()).update(codes)
        for line, _, _ in device_moves:
            host_lines[line] = host_lines[line] - {"GS402"}
        # host work that makes a core input (a sampler, numpy → tensor): to the wrapper, loops hoisted
        hosted = host_inputs(text, defined, host_lines, reached)
        text, host_lines, per_step, reached = (hosted.source, *map(hosted.remap, (host_lines, per_step, reached)))
        for line, codes in hosted.producers.items():
            host_lines.setdefault(line, set()).update(codes)
        text, compile_note = uncompiled_region(text, defined)  # graphed() graphs the core, not torch.compile
        # timing events and a data-dependent tail (decoded lists, masked selections): wrapper work
        for line, codes in timing_event_lines(text, defined).items():
            host_lines.setdefault(line, set()).update(codes)
        split_lines = {**host_lines, **data_dependent_tail(text, defined, host_lines, reached)}
        split = hosted.in_original_lines(split_region(text, defined, split_lines, per_step, reached, hosted.producers))
        core = defined
        if split.source is not None:
            try:
                region_copy.write_bytes(SourceEncoding.of(original_bytes).encode(split.source))
            except UnicodeEncodeError as error:
                raise GraphError(f"{_shown(region.path)}: the split cannot be encoded like the file: {error}")
            owner = defined.rpartition(".")[0]
            core = f"{owner}.{split.core_name}" if owner else split.core_name
        rel = region_copy.relative_to(scratch).as_posix()
        # GS701's `capturable=True` is left out: graphed(train=True) turns it on at capture, where the
        # parameters are on the GPU, so the same code still steps on the CPU
        core_pattern = _receiver_pattern(project, region, copies, Path(scratch), core) or f"{rel}::{core}"
        given = facts = _facts_file(settings)
        if split.source is not None:  # the region's recorded calls, given to the core (core_facts.py)
            facts = facts_for_core(given, str(_abs(region.path)), defined, core, split.source, Path(scratch))
        core_facts = facts if facts != given else None

        def check_core():
            """The core's check; its facts follow the region file's later edits (its source hash)."""
            now = read_text(region_copy) if core_facts is not None else None
            if now is not None and not isinstance(now, str):
                facts_for_core(given, str(_abs(region.path)), defined, core, now[1], Path(scratch))
            return check_paths(scratch_paths, core_settings, use_cache=False)

        core_settings = dataclasses.replace(settings, regions=(core_pattern,), pattern_regions_only=True,
                                            root=Path(scratch), facts_file=facts,
                                            unfixable=tuple(settings.unfixable) + NOT_FIXED_HERE)

        scratch_paths = [copies[str(_abs(f))] for f in files]
        result = fix_paths(scratch_paths, core_settings, unsafe=True, write=True, use_cache=False)
        errors = [f"{o.path}: {o.error}" for o in result.outcomes if o.error]
        if errors:
            raise GraphError("fixing the core failed: " + "; ".join(errors))
        converted = _convert_for_the_wrapper(split, defined, region_copy, result.applied)
        final = check_core()
        # the callees' counters and number tensors (rewriters/callee_state.py), then checked again
        sources = Sources(scratch_paths)
        fed = fed_parameters(final.diagnostics, split.core_parameters, sources) if split.source is not None else []
        split = dataclasses.replace(split, numbers=sorted(set(split.numbers) | set(fed)))
        carried = {split.core_parameters[i] for i in split.numbers}
        callee = rewrite_callee_state(final.diagnostics, carried, (str(region_copy.resolve()),
                                                                   core.rpartition(".")[0]), sources)
        if callee.changed:
            final = check_core()
        # what still blocks that a rewrite settles: number attributes' tensors, checks on tensors
        late = settle_blockers(final.diagnostics, callee.refused, sources,
                               (str(region_copy), defined) if split.source is None else None)
        if late.core:  # a wrapper made for draws over selected rows (draw_order.py): its core is graphed
            owner = defined.rpartition(".")[0]
            core = f"{owner}.{late.core}"
            core_pattern = _receiver_pattern(project, region, copies, Path(scratch), core) or f"{rel}::{core}"
            core_settings = dataclasses.replace(core_settings, regions=(core_pattern,))
            wired = read_text(region_copy)
            split = dataclasses.replace(split, core_name=late.core, core_parameters=late.core_parameters,
                                        source=wired[1] if not isinstance(wired, str) else None, refusal=None)
        if late.changed:
            callee.changed += late.changed
            callee.refused = [r for r in callee.refused if r not in late.refusals]
            callee.built_on_device |= late.built_on_device
            final = check_core()
        callee.refused += late.refused
        # branches on tensors whose arms only assign: selections of both outcomes (rewriters/branch_select.py)
        backward = backward_in_reach(final)  # the rewrites below neither add nor remove a backward call
        selects, unselected = select_left_branches(final.diagnostics, sources, differentiable=backward is not None)
        if selects:
            callee.changed += selects
            final = check_core()
        # checks that only warn or validate: eager-only (rewriters/warn_repair.py, validation_capture.py)
        repairs = unconditional_repairs(final.diagnostics, scratch_paths)
        validation = wrap_core_file(region_copy, core, [_abs(f) for f in files])  # module names: the user's tree
        if repairs.changed or validation:
            final = check_core()
            sources.forget(None)
        # a gradient reset by a fresh tensor: zeroed in place where it exists (rewriters/grad_zero.py)
        zeroed = gradients_zeroed_in_place(final.diagnostics, scratch_paths)
        if zeroed.changed:
            final = check_core()
            sources.forget(None)
        # a host size read that trims a step input (`x[:, :int(n.max())]` in a callee): to the wrapper
        trims = trim_in_wrapper(final.diagnostics, core, region_copy, defined, split.core_name) \
            if split.source is not None else TrimmedInputs()
        if trims.trims:
            final = check_core()
            sources.forget(None)
        back = {os.path.realpath(copy): original for original, copy in copies.items()}
        callee_notes = ([_scratch_shown(c, back) for c in callee.changed],
                        [_scratch_shown(r, back) for r in callee.refused])
        notes = [_scratch_shown(c, back) for c in repairs.changed + repairs.refused + unselected
                 + zeroed.changed + zeroed.refused] \
            + [validation] * bool(validation)
        notes += [t.note for t in trims.trims] + [compile_note] * bool(compile_note and split.source is not None)
        if backward:
            split = dataclasses.replace(split, backward_in=_shown(back.get(os.path.realpath(backward[0]), backward[0]))
                                        + f":{backward[1]}")
        changed = {}
        for original, copy in copies.items():
            old, new = Path(original).read_bytes(), copy.read_bytes()
            if old != new:
                changed[original] = (old, new)
        after = read_text(region_copy)  # as fixed: the final check's lines
        region_lines = after[1].splitlines() if not isinstance(after, str) else []
        blocking, left = [], []
        # graphed(train=True) reads the groups' learning rate from a device tensor it refreshes
        trains = wiring_options(split, []).get("train", False)
        for d in final.diagnostics:
            original = back.get(os.path.realpath(d.path), d.path)
            in_region_file = _abs(original) == _abs(region.path)
            if d.code in NOT_FIXED_HERE or (trains and reads_scheduled_lr(d)) \
                    or (in_region_file and _settled_by_numbers(d, carried, region_lines)) \
                    or settled_by_carried(d, carried, sources) or callee.settles(d) or repairs.settles(d) \
                    or zeroed.settles(d) or (validation and settled_by_validation_off(d)) \
                    or trims.settles(d.path, d.start.line, d.code):
                continue
            if settled_by_replayed_append(d, sources):  # graphed() appends again after each replay
                notes.append(_scratch_shown(replayed_append_note(d), back))
                continue
            blocking.append(dataclasses.replace(d, path=_shown(original)))
            left.append(d)
        # data-dependent shapes left: which part of the core a graph can take (rewriters/smaller_region.py)
        advice = smaller_region_advice(left, core, str(region_copy), "\n".join(region_lines), _shown(region.path),
                                       lambda path: _shown(back.get(os.path.realpath(path), path)))
        notes += [advice] * bool(advice)
    fixes = Counter(d.code for d in result.applied)
    wire = _wire_target(project, region, core)
    if split.closure:  # the core hangs on the closure the factory returns: graphed where it is held
        wire = {"module": wire["module"], "owner": "", "closure": defined, "name": split.core_name}
    if converted:
        split = dataclasses.replace(split, converted=converted)
    notes += assert_notes(result.applied, lambda path: _shown(back.get(os.path.realpath(path), path)))
    notes += [loop_note] * bool(loop_note)
    inputs = [f"{_shown(region.path)}:{line}: {note}"
              for line, note in (hosted.moved if split.source is not None else []) + hosted.refused]
    inputs += [f"{_shown(region.path)}:{copy}: " + device_move_note(copy, maker, name, maker in split.prologue_lines)
               for copy, maker, name in device_moves]
    shapes_vary = bool(trims.trims)
    return GraphPlan(region.display, region.path, split, core, changed, fixes, blocking,
                     _wiring(region.display, split, blocking, shapes_vary), wire, *callee_notes, notes,
                     host_inputs=inputs, shapes_vary=shapes_vary)


def _renamed(text: str, defined: str, host_lines, region_copy: Path, original_bytes: bytes) -> str:
    """A name host work reads and later tensor work rebinds, renamed from the rebinding on, so that
    the host work can move after the core (rewriters/rename_rebound.py; the line count is kept)."""
    new = rename_rebound(text, defined, host_lines)
    return text if new is None else _kept_in_copy(text, new, region_copy, original_bytes)


def _kept_in_copy(text: str, new: str, region_copy: Path, original_bytes: bytes) -> str:
    """`new` written to the region's scratch copy in the file's encoding; `text` where it cannot be."""
    try:
        region_copy.write_bytes(SourceEncoding.of(original_bytes).encode(new))
    except UnicodeEncodeError:
        return text
    return new


def _fixed_shapes(text: str, diagnostics, region_path, region_copy: Path, original_bytes: bytes) -> str:
    """Data-dependent shapes in the region at a fixed size, in its file before the split (the line
    count is kept: the split's lines stay right): GS107 `rows = mask.nonzero(...)[0]` only written
    into (rewriters/nonzero_rows.py), GS108 filters feeding a GS107 `bincount`
    (rewriters/fixed_histogram.py)."""
    mine = [d for d in diagnostics if _abs(d.path) == _abs(region_path)]
    data_shaped = {(d.start.line, d.start.column) for d in mine if d.code == "GS107"}
    if not data_shaped:
        return text
    numbers_at = {(u.start.line, u.start.column) for d in mine if d.code == "GS301" for u in (d, *d.also)}
    new = writes_by_mask(text, data_shaped, numbers_at).source or text
    filters = {(u.start.line, u.start.column) for d in mine if d.code == "GS108" for u in (d, *d.also)}
    new = fixed_histogram(new, data_shaped, filters)[0] or new
    return text if new == text else _kept_in_copy(text, new, region_copy, original_bytes)


def _convert_for_the_wrapper(split: SplitResult, defined: str, region_copy: Path, applied) -> list[str]:
    """GS101 fixes in the core keep values tensors; the ones the core hands to the wrapper's host
    work are converted back there, after the core (rewriters/boundary.convert_fixed_values)."""
    lines = {d.start.line for d in applied if d.code == "GS101" and _abs(d.path) == _abs(region_copy)}
    if split.source is None or not lines:
        return []
    read = read_text(region_copy)
    if isinstance(read, str):
        return []
    raw, text = read
    new_text, names = convert_fixed_values(text, defined, split.core_name, lines)
    if names:
        region_copy.write_bytes(SourceEncoding.of(raw).encode(new_text))
    return names


_PER_STEP = re.compile(r"^(?:parameter `(\w+)`|attribute `(self\.\w+)`)")


def _defined_as(project, region) -> str:
    """The region's function as its file defines it: a pattern may name it through a subclass
    that inherits it (`RandomAffine.forward` runs `_AugmentationBase.forward`)."""
    if region.receiver is None:
        return region.display
    for facts in project.facts:
        for unit in facts.units:
            if unit.key == region.function:
                return unit.display
    return region.display


def _receiver_pattern(project, region, copies: dict[str, Path], scratch: Path, core: str) -> str | None:
    """The core's region through the class the pattern named when it inherits the method
    (`affine.py::RandomAffine.forward_core`): `self` calls then go to that class's overrides, as
    in the region's own check, not to every subclass of the base that defines it."""
    if region.receiver is None:
        return None
    for facts in project.facts:
        for info in facts.classes:
            copy = copies.get(str(_abs(facts.path)))
            if info.key == region.receiver and copy is not None and info.key.startswith(facts.module + "."):
                named = info.key[len(facts.module) + 1:]
                return f"{copy.relative_to(scratch).as_posix()}::{named}.{core.rpartition('.')[2]}"
    return None


def _wire_target(project, region, core: str) -> dict:
    """The module and class (or module function) whose `core` graphed() replaces: the class the
    region names (a subclass that inherits the method gets its own graphed core)."""
    owner_key = region.receiver
    owner_display, _, name = core.rpartition(".")
    for facts in project.facts:
        for info in facts.classes:
            if owner_key is not None and info.key == owner_key:
                return {"module": facts.module, "owner": info.key[len(facts.module) + 1:], "name": name}
        if owner_key is None and _abs(facts.path) == _abs(region.path):
            return {"module": facts.module, "owner": owner_display, "name": name}
    return {"module": None, "owner": owner_display, "name": name}


def per_step_number(d: Diagnostic) -> str | None:
    """The per-step number a GS301 names: a parameter `t` or an attribute `self.cur_len`."""
    if d.code != "GS301":
        return None
    found = _PER_STEP.match(d.message)
    return (found.group(1) or found.group(2)) if found else None


def _settled_by_numbers(d: Diagnostic, carried: set[str], lines: list[str]) -> bool:
    """A hazard of a per-step number the core now takes as a device scalar (graphed numbers=):
    its GS301, and the GS402 of `torch.as_tensor(n ...)` (no host data once n is on the device)."""
    if per_step_number(d) in carried:
        return True
    if d.code == "GS402" and 0 < d.start.line <= len(lines):
        text = lines[d.start.line - 1][d.start.column:].lstrip()  # columns count from 0
        return any(re.match(rf"torch\.as_tensor\(\(?{re.escape(n)}\b", text) for n in carried)
    return False


def _scratch_shown(line: str, back: dict[str, str]) -> str:
    """A callee note about a scratch file, with the user's path instead."""
    path, _, rest = line.partition(":")
    return f"{_shown(back.get(os.path.realpath(path), path))}:{rest}"


def _abs(path) -> Path:
    """Absolute and normalised (`..` removed), links kept: the key of a file in the scratch copy."""
    return Path(os.path.abspath(path))


def _facts_file(settings: Settings) -> Path | None:
    if settings.facts_file is not None:
        return _abs(settings.facts_file)
    default = settings.root / ".graphsafe" / "facts.json"
    return _abs(default) if default.is_file() else None


def _above_packages(root: Path) -> Path:
    """The directory above the package `root` is in: the scratch copy keeps the package's own
    directory, so its modules keep their names (`stable_baselines3.common.buffers`, which the
    package's absolute imports name) and the core's check resolves its callees."""
    while (root / "__init__.py").is_file() and root != root.parent:
        root = root.parent
    return root


def _copy_tree(files: list[Path], root: Path, scratch: Path) -> dict[str, Path]:
    copies = {}
    for f in files:
        source = _abs(f)
        target = scratch / source.relative_to(root)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, target)
        copies[str(source)] = target
    return copies


def _shown(path: str) -> str:
    try:
        return os.path.relpath(path)
    except ValueError:
        return path


def backward_in_reach(result) -> tuple[str, int] | None:
    """(path, line) of a `.backward(` call in a function the core region reaches (a callee that
    computes the loss and its gradients), or None."""
    from graphsafe.analyzer.callgraph import Project

    project = Project(result.facts)
    reach = project.reach([r for r in result.regions if r.kind is RegionKind.PATTERN])
    functions: dict[str, dict] = {}  # path → display name → ast node
    for key in reach.order:
        located = project.units.get(key)
        if located is None or not located.unit.is_function:
            continue
        if located.path not in functions:
            functions[located.path] = _functions_by_name(located.path)
        node = functions[located.path].get(located.unit.display)
        for call in _walk(node) if node is not None else ():
            if isinstance(call, ast.Call) and getattr(call.func, "attr", getattr(call.func, "id", None)) == "backward":
                return located.path, call.lineno
    return None


def _functions_by_name(path: str) -> dict:
    """`f`, `Class.method`, `factory.inner` → its ast node, for one file ({} when unreadable)."""
    try:
        tree = ast.parse(Path(path).read_text(encoding="utf-8"))
    except (OSError, SyntaxError, UnicodeDecodeError, ValueError):
        return {}
    found: dict = {}
    stack = [(node, "") for node in tree.body]
    while stack:
        node, prefix = stack.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            name = prefix + node.name
            if not isinstance(node, ast.ClassDef):
                found.setdefault(name, node)
            stack += [(child, name + ".") for child in node.body]
    return found


def _walk(function):
    """The nodes of a function's own body (not of the functions and classes it defines)."""
    stack = list(function.body)
    while stack:
        node = stack.pop()
        yield node
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            stack.extend(ast.iter_child_nodes(node))


def wiring_options(split: SplitResult, blocking: list[Diagnostic], shapes_vary: bool = False) -> dict:
    """The `graphed(...)` options the core needs: train=True when it runs a backward (its own or a
    callee's), numbers= for its per-step number parameters, pad=False and shapes= when the wrapper
    trims an input to a size read on the host (each trimmed length gets a graph of its own, up to
    TRIMMED_SHAPES; a further one runs eagerly, not an error)."""
    options: dict = {}
    if ".backward(" in (split.source or "") or split.backward_in:
        options["train"] = True
    numbers = list(split.numbers) or [i for i, p in enumerate(split.core_parameters)
                                      if any(per_step_number(d) == p for d in blocking)]
    if numbers:
        options["numbers"] = numbers  # per-step Python numbers: device scalars filled per call
    if shapes_vary:
        if not options.get("train"):  # training never pads: pad=False already
            options["pad"] = False
        options["shapes"] = TRIMMED_SHAPES
    return options


def _wiring(region: str, split: SplitResult, blocking: list[Diagnostic], shapes_vary: bool = False) -> str:
    owner, _, name = region.rpartition(".")
    core = split.core_name or name
    target = f"fn.{core}" if split.closure else f"obj.{core}" if owner else f"module.{core}"
    options = wiring_options(split, blocking, shapes_vary)
    line = f"{target} = graphed({target}{''.join(f', {k}={v!r}' for k, v in options.items())})"
    who = (f"fn: the {name} function {owner}() returns" if split.closure else
           f"obj: the {owner} whose {name} your loop calls" if owner else "module: the module that defines it")
    return (f"from graphsafe.runtime import graphed\n{line}   # once, after building it ({who}); "
            f"keep calling {name}() as before")


def as_json(result: GraphPlan) -> dict:
    split = result.split
    return {"region": result.region, "path": _shown(result.region_path), "core": result.core, "wire": result.wire,
            "split": split.source is not None, "refusal": split.refusal,
            "core_parameters": split.core_parameters, "prologue_lines": split.prologue_lines,
            "epilogue_lines": split.epilogue_lines, "kept_host_lines": split.kept_host_lines,
            "host_return": split.host_return, "converted": split.converted, "backward_in": split.backward_in,
            "options": dict(wiring_options(split, result.blocking, result.shapes_vary),
                            **({"shared": True} if result.shared else {})), "fixes": dict(result.fixes),
            "callee_changes": result.callee_changes, "callee_refusals": result.callee_refusals, "notes": result.notes,
            "host_inputs": result.host_inputs,
            "changed": sorted(_shown(p) for p in result.changed),
            "blocking": [{"path": d.path, "line": d.start.line, "code": d.code, "message": d.message}
                         for d in sorted(result.blocking, key=lambda d: d.sort_key)]}


# --- the command ---------------------------------------------------------------------------------


def run_graph(args, settings: Settings, paths: list[Path]) -> int:
    if len(args.region) != 1:
        raise GraphError("name the one region to graph: --region Class.method (or path.py::Class.method)")
    result = plan(paths, settings, args.region[0], use_cache=not args.no_cache)
    out = sys.stdout
    if args.diff:
        for path, (old, new) in sorted(result.changed.items()):
            out.write(_patch(_shown(path), old, new))
    else:
        from graphsafe.writing import write_fixed

        for path, (old, new) in sorted(result.changed.items()):
            error = write_fixed(Path(path), new, old)
            if error:
                sys.stderr.write(f"graphsafe: {_shown(path)}: {error}\n")
    report = sys.stderr if args.diff else out
    if getattr(args, "json", False):
        import json

        report.write(json.dumps(as_json(result), indent=1) + "\n")
    else:
        report.write(summary(result, wrote=not args.diff))
    return EXIT_FINDINGS if result.blocking else EXIT_CLEAN


def _patch(path: str, old: bytes, new: bytes) -> str:
    a = old.decode("utf-8", "surrogateescape").splitlines(keepends=True)
    b = new.decode("utf-8", "surrogateescape").splitlines(keepends=True)
    return "".join(difflib.unified_diff(a, b, f"a/{path}", f"b/{path}"))


def summary(result: GraphPlan, wrote: bool) -> str:
    split = result.split
    lines = [f"graphsafe graph: {result.region} ({_shown(result.region_path)})"]
    if split.source is None:
        lines.append(f"  not split: {split.refusal}")
    else:
        moved = []
        if split.prologue_lines:
            moved.append(f"before it: line {', '.join(map(str, split.prologue_lines))}")
        if split.epilogue_lines:
            moved.append(f"after it: line {', '.join(map(str, split.epilogue_lines))}")
        if moved:
            lines.append(f"  split: the tensor work is now {result.core}({', '.join(split.core_parameters)}); "
                         f"{result.region} keeps the host work ({'; '.join(moved)})")
        else:
            lines.append(f"  split: {result.region} now calls {result.core}({', '.join(split.core_parameters)}), "
                         "what gets graphed" + ("; its return is evaluated around it" if split.host_return else
                                                " (nothing to move: callers that imported it reach the graph)"))
        if split.converted:
            lines.append(f"  values a fix made tensors, converted back after the core for the host work: "
                         f"{', '.join(split.converted)}")
        if split.numbers:
            carried = ", ".join(split.core_parameters[i] for i in split.numbers)
            lines.append(f"  per-step numbers now core parameters, carried by device scalars (numbers=): {carried}"
                         + (f"; {split.number_indexes} index(es) by them read as one-element index tensors"
                            if split.number_indexes else ""))
        if split.kept_host_lines:
            lines.append(f"  host work left in the core (its results feed the tensor work): line "
                         f"{', '.join(map(str, split.kept_host_lines))}")
    for change in result.callee_changes:
        lines.append(f"  callee state: {change}")
    for refusal in result.callee_refusals:
        lines.append(f"  callee state not rewritten: {refusal}")
    for note in result.notes:
        lines.append(f"  note: {note}")
    for note in result.host_inputs:
        lines.append(f"  host input: {note}")
    if result.fixes:
        lines.append("  fixes applied in the core's reach: " +
                     ", ".join(f"{code} ×{n}" for code, n in sorted(result.fixes.items())))
    verb = "changed" if wrote else "would change"
    lines.append(f"  files {verb}: {len(result.changed)}")
    if result.blocking:
        lines.append(f"  still blocking capture ({len(result.blocking)}): fix these by hand, "
                     "`graphsafe rule CODE` says how")
        for d in sorted(result.blocking, key=lambda d: d.sort_key)[:30]:
            lines.append(f"    {d.path}:{d.start.line}:{d.start.column}: {d.code} {d.message}")
        if len(result.blocking) > 30:
            lines.append(f"    ... and {len(result.blocking) - 30} more (graphsafe check --region '{result.core}')")
    else:
        lines.append("  nothing static blocks capture any more")
    lines.append("  wire it:")
    lines += ["    " + l for l in result.wiring.splitlines()]
    lines.append("  then prove it on a GPU: graphsafe capture MODULE:FACTORY (replay compared with eager)")
    return "\n".join(lines) + "\n"
