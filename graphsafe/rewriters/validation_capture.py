"""Argument validation off while the core is captured, on in every eager call:

    def step_core(self, x):                     def step_core(self, x):
        <body>                         →            with _ValidationOffWhileCapturing():
                                                        <body>

torch.distributions validate their arguments and samples with `if not valid.all(): raise` (a
host read: capture fails, GS111), in code the core reaches through objects the call graph does
not see (a model a `step` calls, a distribution built by the caller). Packages built on them
keep switches of their own with the same job (`enable_validation(flag)` beside
`is_validation_enabled()`, pyro's shape; its checks `warn_if_nan` on the host). The helper
class written after the core turns torch's default (`Distribution.set_default_validate_args`)
and each such switch of the package off only while a CUDA graph is being captured
(`torch.cuda.is_current_stream_capturing()`), and puts them back after the core: eager calls
(graphed()'s warm-up, which runs before capture, and every CPU run) validate as before;
replays run without the checks. graph prints this as a note; a user who would rather keep
validation deletes the `with` line (capture then fails at the first check).

Applied when an analysed file uses torch.distributions. Reads and writes text: no torch."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import libcst as cst

HELPER = "_ValidationOffWhileCapturing"
_USES_DISTRIBUTIONS = re.compile(r"\btorch\.distributions\b|\bfrom torch import[^\n]*\bdistributions\b")
SWITCH = ("enable_validation", "is_validation_enabled")  # a package's own switch: setter(flag), getter()
NOTE = ("argument validation (torch.distributions{switches}) is off while the core is captured: eager calls, "
        "graphed()'s warm-up included, still validate; replays do not (delete the `with {helper}():` line "
        "to keep it, and capture fails at the first check)")


def uses_distributions(paths: list[Path]) -> bool:
    return any(_USES_DISTRIBUTIONS.search(_text(p) or "") for p in paths)


def validation_switches(paths: list[Path]) -> list[str]:
    """The modules (dotted, as imported) that define both functions of SWITCH at their top level."""
    found = []
    for path in paths:
        text = _text(path)
        if not text or SWITCH[1] not in text:
            continue
        try:
            tree = ast.parse(text)
        except (SyntaxError, ValueError):
            continue
        defined = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}
        setter, getter = defined.get(SWITCH[0]), defined.get(SWITCH[1])
        if setter and getter and len(setter.args.args) == 1 and not getter.args.args:
            module = _module_name(Path(path))
            if module:
                found.append(module)
    return sorted(found)


def _module_name(path: Path) -> str | None:
    """`pyro.infer.util` for pyro/infer/util.py: up through the directories that hold an `__init__.py`."""
    parts = [] if path.stem == "__init__" else [path.stem]
    folder = path.resolve().parent
    while (folder / "__init__.py").is_file():
        parts.insert(0, folder.name)
        folder = folder.parent
    return ".".join(parts) if parts and all(p.isidentifier() for p in parts) else None


def validation_off_while_capturing(source: str, core: str, switches: list[str]) -> tuple[str | None, str]:
    """(new source, note) with the body of `core` ("f" or "Class.method") run under the helper,
    or (None, why not)."""
    try:
        module = cst.parse_module(source)
    except cst.ParserSyntaxError as error:
        return None, f"cannot parse: {error.message}"
    if HELPER in source:
        return None, "already done"
    owner, _, name = core.rpartition(".")
    wrapper = _Wrap(owner, name)
    new = module.visit(wrapper)
    if wrapper.refusal or not wrapper.done:
        return None, wrapper.refusal or f"no function {core} at the top level of its file or of a class"
    helper = list(cst.parse_module(_helper_code(switches)).body)
    helper[0] = helper[0].with_changes(leading_lines=[cst.EmptyLine(), cst.EmptyLine()])
    note = NOTE.format(switches="".join(f", {s}.{SWITCH[0]}" for s in switches), helper=HELPER)
    return new.with_changes(body=[*new.body, *helper]).code, note


class _Wrap(cst.CSTTransformer):
    def __init__(self, owner: str, name: str) -> None:
        self.owner, self.name = owner, name
        self.classes: list[str] = []
        self.depth = 0
        self.done = False
        self.refusal = ""

    def visit_ClassDef(self, node: cst.ClassDef) -> bool:
        self.classes.append(node.name.value)
        return True

    def leave_ClassDef(self, original, updated):
        self.classes.pop()
        return updated

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        self.depth += 1
        return self.depth == 1  # nested functions are not the core

    def leave_FunctionDef(self, original: cst.FunctionDef, updated: cst.FunctionDef):
        self.depth -= 1
        if self.depth or original.name.value != self.name or ".".join(self.classes) != self.owner:
            return updated
        if any(isinstance(n, (cst.Yield, cst.Await)) for n in _walk(original.body)) or original.asynchronous:
            self.refusal = f"{self.name} is a generator or async: its body cannot run under one `with`"
            return updated
        if not isinstance(updated.body, cst.IndentedBlock):
            self.refusal = f"{self.name} is written on one line"
            return updated
        statements = list(updated.body.body)
        keep = 1 if statements and _is_docstring(statements[0]) else 0
        rest = statements[keep:]
        if not rest:
            return updated
        lead = rest[0].leading_lines  # comments above the first statement stay above the `with`
        rest[0] = rest[0].with_changes(leading_lines=())
        wrapped = cst.With(items=[cst.WithItem(cst.Call(cst.Name(HELPER)))], body=cst.IndentedBlock(body=rest),
                           leading_lines=lead)
        self.done = True
        return updated.with_changes(body=updated.body.with_changes(body=[*statements[:keep], wrapped]))


def _walk(node: cst.CSTNode):
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        if not isinstance(current, (cst.FunctionDef, cst.ClassDef, cst.Lambda)) or current is node:
            stack.extend(current.children)


def _is_docstring(statement) -> bool:
    return (isinstance(statement, cst.SimpleStatementLine) and len(statement.body) == 1
            and isinstance(statement.body[0], cst.Expr) and isinstance(statement.body[0].value, cst.SimpleString))


def _helper_code(switches: list[str]) -> str:
    imports = "".join(f"        import {module} as switch_{i}\n" for i, module in enumerate(switches))
    pairs = "".join(f"            (switch_{i}.{SWITCH[0]}, switch_{i}.{SWITCH[1]}()),\n" for i in range(len(switches)))
    return f'''class {HELPER}:
    """Written by `graphsafe graph`: argument validation reads tensors on the host, which CUDA
    graph capture cannot do. Off while a graph is being captured; eager calls (graphed()'s
    warm-up, CPU runs) validate as before, replays do not."""

    def __enter__(self):
        import torch
{imports}
        self.switches = [
            (torch.distributions.Distribution.set_default_validate_args,
             torch.distributions.Distribution._validate_args),
{pairs}        ]
        if torch.cuda.is_available() and torch.cuda.is_current_stream_capturing():
            for turn, _ in self.switches:
                turn(False)

    def __exit__(self, *exc):
        for turn, was in self.switches:
            turn(was)
        return False
'''


def _text(path) -> str | None:
    try:
        return Path(path).read_bytes().decode("utf-8")
    except (OSError, UnicodeDecodeError):
        return None


def wrap_core_file(path: Path, core: str, paths: list[Path]) -> str | None:
    """Run the core in `path` under the helper when one of `paths` (the analysed files, where
    they are imported from: module names come from their folders) uses torch.distributions;
    the note to print, or None when nothing was done."""
    text = _text(path)
    if text is None or not uses_distributions(paths):
        return None
    new, note = validation_off_while_capturing(text, core, validation_switches(paths))
    if new is None:
        return None
    Path(path).write_bytes(new.encode("utf-8"))
    return note


def settled_by_validation_off(d) -> bool:
    """A torch.distributions argument or sample check (GS111, rules/sync.py), which the helper
    turns off while capturing."""
    return d.code == "GS111"
