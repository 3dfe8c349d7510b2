"""What still blocks a split core after the fixes and the callee state (`graphsafe graph`), where a
rewrite of the scratch files settles it:

- GS402 `torch.tensor(self.x, ...)` of a number attribute → `torch.full((), self.x, ...)`
  (rewriters/number_attribute.py);
- GS201 `if ... and <tensor test>: raise E(...)` → `torch._assert_async` (rewriters/device_checks.py);
- an `assert` that callee_state lists as reading a device counter on the host → `torch._assert_async`
  (rewriters/device_checks.py); that refusal is then settled;
- GS109 `assert torch.allclose(a, b, ...)` → `torch._assert_async(torch.isclose(a, b, ...).all(), ...)`
  (rewriters/close_check.py);
- GS107/GS201/GS105 a mixture-of-experts loop over the experts that got tokens → every expert on
  every row with combine weights (rewriters/expert_dispatch.py);
- GS107 `bincount(x, minlength=n)` → a one-hot summed (rewriters/bounded_bincount.py);
- GS105 `n = int(t)` deciding a device counter's `add_` → the test added on the device
  (rewriters/device_threshold_count.py);
- GS108 `t = x[m]` ... `full[m] = out` with row-wise work between → every row, the result and the
  callees' reductions masked (rewriters/masked_rows.py); a refusal is listed with its line. A random
  draw over the selected rows is drawn by the region's wrapper (drawn_rows.py, draw_order.py: the
  region's method becomes `<method>` → `<method>_core`), else refused like the rest.

Reads only the diagnostics, the refusal lines and the scratch files: no torch (the static path)."""

from __future__ import annotations

import ast
import dataclasses
import re
from pathlib import Path

from graphsafe.model import Diagnostic
from graphsafe.rewriters.callee_state import _device_use, _host_read
from graphsafe.rewriters.bounded_bincount import bincount_at_minlength
from graphsafe.rewriters.close_check import allclose_asserts
from graphsafe.rewriters.device_checks import device_checks
from graphsafe.rewriters.device_threshold_count import counted_on_device
from graphsafe.rewriters.expert_dispatch import dense_expert_dispatch
from graphsafe.rewriters.draw_order import wire_draws
from graphsafe.rewriters.masked_rows import masked_rows, masked_rows_and_draws
from graphsafe.rewriters.number_attribute import tensor_of_attribute

# callee_state's refusal for a name bound to a device counter and read on the host
_HOST_READ = re.compile(r"^(?P<path>.+?):(?P<line>\d+): `(?P<name>\w+)` holds \w+\.(?P<attribute>\w+), a device "
                        r"counter now, and is read on the host here")


@dataclasses.dataclass
class Settled:
    changed: list[str] = dataclasses.field(default_factory=list)  # one line per rewrite
    refusals: list[str] = dataclasses.field(default_factory=list)  # callee refusals no longer true
    # (file, line) of `_assert_async(torch.as_tensor(cond))` on a device counter: the GS402 the analyzer
    # reports there (it takes the counter for a number) is settled as callee_state's as_tensor(t) is
    built_on_device: set[tuple[str, int]] = dataclasses.field(default_factory=set)
    refused: list[str] = dataclasses.field(default_factory=list)  # "path:line: why", a rewrite not made
    core: str = ""  # the region's new core method, where a wrapper was made for the draws
    core_parameters: list[str] = dataclasses.field(default_factory=list)


def settle_blockers(diagnostics: list[Diagnostic], refused: list[str], sources,
                    region: tuple[str, str] | None = None) -> Settled:
    """Rewrite, in the scratch files (callee_state.Sources), what the rewriters above settle.
    `region`: (its scratch file, its function), where a wrapper may be made for draws over rows."""
    outcome = Settled()
    drawn: list[tuple] = []  # (path, shown, drawers, (text, lines, refusals) with the draws, refusals without)
    files: dict[str, dict] = {}  # resolved path -> {"shown", "branches", "tensors", "asserts"}

    def entry(path: str) -> dict:
        return files.setdefault(str(sources.resolve(path)), {"shown": path, "branches": set(), "tensors": set(),
                                                            "asserts": {}, "close": set(), "lines": {}})

    for d in diagnostics:
        at = {(u.start.line, u.start.column) for u in (d, *d.also)}
        if d.code in ("GS105", "GS107", "GS108", "GS201"):  # the line-keyed rewrites below
            entry(d.path)["lines"].setdefault(d.code, set()).update(line for line, _ in at)
        if d.code == "GS201":
            entry(d.path)["branches"].update(at)
        elif d.code == "GS402":
            entry(d.path)["tensors"].update(at)
        elif d.code == "GS109":
            entry(d.path)["close"].update(at)
    for refusal in refused:
        found = _HOST_READ.match(refusal)
        if found:
            entry(found.group("path"))["asserts"].setdefault((found.group("name"), found.group("attribute")),
                                                             []).append(refusal)
    for resolved, wanted in sorted(files.items()):
        path = sources.resolve(resolved)
        try:
            text = path.read_bytes().decode("utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        shown = wanted["shown"]
        new, lines = tensor_of_attribute(text, wanted["tensors"]) if wanted["tensors"] else (None, [])
        if new is not None:  # keeps every line where it was: the checks below find theirs
            text = new
            outcome.changed.append(f"{shown}:{', '.join(map(str, lines))}: a number attribute's tensor filled "
                                   "on the device (torch.full)")
        checked, check_lines = device_checks(text, wanted["branches"], set(wanted["asserts"]))
        if checked is not None:
            text = checked
            outcome.changed.append(f"{shown}:{', '.join(map(str, check_lines))}: a check on a tensor kept on the "
                                   "device (torch._assert_async)")
            for (name, attribute), refusals in wanted["asserts"].items():
                if not host_reads_left(text, name, attribute):
                    outcome.refusals += refusals
            if wanted["asserts"]:
                outcome.built_on_device.update((resolved, line) for line in _checks_of_a_condition(text))
        close, close_lines = allclose_asserts(text, wanted["close"]) if wanted["close"] else (None, [])
        if close is not None:
            text = close
            outcome.changed.append(f"{shown}:{', '.join(map(str, close_lines))}: an assert on `allclose` kept on the "
                                   "device (torch._assert_async on isclose(...).all())")
        shapes, shape_notes = _fixed_shapes(text, wanted["lines"])
        if shapes is not None:
            text = shapes
            outcome.changed += [f"{shown}:{note}" for note in shape_notes]
        rows, row_lines, row_refusals, drawers = masked_rows_and_draws(text, wanted["lines"].get("GS108", set()),
                                                                       draws=region is not None)
        if drawers:  # wired after every file is rewritten (draw_order.py); until then, as without them
            with_draws = (rows, row_lines, [f"{shown}:{why}" for why in row_refusals])
            rows, row_lines, row_refusals = masked_rows(text, wanted["lines"].get("GS108", set()))
            drawn.append((path, shown, drawers, with_draws, [f"{shown}:{why}" for why in row_refusals]))
        outcome.refused += [f"{shown}:{why}" for why in row_refusals]
        if rows is not None:
            text, shapes = rows, rows
            outcome.changed.append(f"{shown}:{', '.join(map(str, row_lines))}: a boolean-mask selection of rows "
                                   "run on every row, the result and the reductions over the rows masked")
        if new is not None or checked is not None or close is not None or shapes is not None:
            path.write_bytes(text.encode("utf-8"))
            sources.forget(path)
    if drawn:
        _wire(drawn, region, sources, outcome)
    return outcome


def _wire(drawn: list, region: tuple[str, str], sources, outcome: Settled) -> None:
    """The draws over selected rows made by the region's wrapper, or the refusals kept as they were."""
    texts: dict[str, str] = {}
    for one in sources.paths:
        try:
            texts[str(Path(one).resolve())] = Path(one).read_bytes().decode("utf-8")
        except (OSError, UnicodeDecodeError):
            continue
    if len(drawn) != 1:
        return
    path, shown, drawers, (with_draws, row_lines, refusals), without = drawn[0]
    key = str(Path(path).resolve())
    texts[key] = with_draws
    wired = wire_draws(drawers, texts, str(Path(region[0]).resolve()), region[1])
    if isinstance(wired, str):
        outcome.refused.append(f"{shown}: the random draw over the selected rows is not drawn by the wrapper: "
                               f"{wired}")
        return
    for written, text in wired.texts.items():
        Path(written).write_bytes(text.encode("utf-8"))
    if key not in wired.texts:
        Path(key).write_bytes(with_draws.encode("utf-8"))
    sources.forget(None)
    outcome.refused = [r for r in outcome.refused if r not in without] + refusals
    outcome.changed.append(f"{shown}:{', '.join(map(str, row_lines))}: a boolean-mask selection of rows run on every "
                           "row, the result and the reductions over the rows masked; its random draw over the "
                           "selected rows drawn by the wrapper before the core, in eager's order, into a full-row "
                           f"buffer ({' → '.join(reversed(wired.classes))}: _graphsafe_draws; the region's method "
                           f"split: {region[1]} → {wired.core})")
    outcome.core, outcome.core_parameters = wired.core, wired.parameters


def _fixed_shapes(text: str, lines: dict[str, set[int]]) -> tuple[str | None, list[str]]:
    """Data-dependent shapes and host reads in a callee at fixed shapes on the device (each rewrite
    keeps the line count, so the diagnostics' lines stay right for the next)."""
    notes: list[str] = []
    changed = False
    routing = lines.get("GS107", set()) | lines.get("GS201", set()) | lines.get("GS105", set())
    for rewrite, wanted, note in (
            (dense_expert_dispatch, routing, "a loop over the experts that got tokens run densely over every "
                                             "expert with combine weights"),
            (bincount_at_minlength, lines.get("GS107", set()), "`bincount` counted at its minlength (a one-hot "
                                                               "summed)"),
            (counted_on_device, lines.get("GS105", set()), "a host read deciding a device counter's step: the "
                                                           "test added on the device")):
        if not wanted:
            continue
        new, done = rewrite(text, wanted)
        if new is not None:
            text, changed = new, True
            notes.append(f"{', '.join(map(str, done))}: {note}")
    return (text, notes) if changed else (None, [])


def host_reads_left(text: str, name: str, attribute: str) -> bool:
    """Whether a function that binds `name` from `.attribute` still reads it on the host
    (callee_state's own test: not where a device scalar works as the number did)."""
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return True
    for function in ast.walk(tree):
        if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        binds = any(isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in node.targets)
                    and any(isinstance(a, ast.Attribute) and a.attr == attribute for a in ast.walk(node.value))
                    for node in ast.walk(function))
        if binds and any(isinstance(node, ast.Name) and node.id == name and isinstance(node.ctx, ast.Load) and
                         (not _device_use(tree, node.lineno, node.col_offset) or _host_read(tree, node))
                         for node in ast.walk(function)):
            return True
    return False


def _checks_of_a_condition(text: str) -> list[int]:
    """The lines of `<torch>._assert_async(<torch>.as_tensor(...), ...)` (device_checks' form)."""
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return []
    return [node.lineno for node in ast.walk(tree)
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "_assert_async"
            and node.args and isinstance(node.args[0], ast.Call) and isinstance(node.args[0].func, ast.Attribute)
            and node.args[0].func.attr == "as_tensor"]
