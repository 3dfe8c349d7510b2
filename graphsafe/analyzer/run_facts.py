"""Run-time facts (`graphsafe trace --save-facts`) read back by the static side.

Static inference leaves an unannotated parameter Unknown; a traced step saw what it was. The
facts file is plain JSON (version 1), keyed by file (relative to the project root), function
qualified name and value name, each function with a hash of its source text:

    {"version": 1, "files": {"train.py": {"functions": {"Trainer.step": {
        "source_hash": "...", "values": {"lr": {"kind": "number", "changed": true,
        "values": ["0.0003", "3e-05"]}, "sched": {"kind": "tensor", ...}}}}}}}

A function edited since the run (its hash differs) loses its facts; the others keep theirs.
The facts of a file's unchanged functions are attached to its FileFacts (`observed`), after
the walk: the walk and its cache do not depend on them. They settle Unknowns through the
project pass (analyzer/returns.py gives an observed tensor parameter the tensor kind, which
walks the file again under a key that holds it; analyzer/callgraph.py takes a number observed
to change as per step), and each diagnostic they decide says so ("observed at run time: ...").

No torch here: the writer (graphsafe/runtime/facts_writer.py) and this reader share only the
format and `function_hashes`.
"""

from __future__ import annotations

import ast
import hashlib
import json
import os
import sys
import textwrap
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Callable, Iterable

import libcst as cst

VERSION = 1
DEFAULT_PATH = Path(".graphsafe") / "facts.json"  # under the project root
CALL_PREFIX = "->"  # an Observed whose name is `->relpath::qualname`: a call the run made
BRANCH_PREFIX = "branch@"  # an Observed whose name is `branch@line:column:end`: a hazard the run saw there
BRANCH_CODE = "GS201"  # tensor-branch (rules/branch.py)
HOST_COPY_CODE = "GS402"  # host-data-tensor (rules/static_inputs.py): a copy of host memory to the device
# what check reports from a facts file's per-function records: {facts key: (code, what the run saw)}
OBSERVED_HAZARDS = {
    "branches": (BRANCH_CODE, "a branch on a tensor value (on this line, or inside a call it makes) needs it on the "
                              "host and records one branch: capture fails (observed at run time: a branch on a tensor "
                              "here{seen})"),
    "host_copies": (HOST_COPY_CODE, "a tensor is copied from host memory to the device (on this line, or inside a "
                                    "call it makes): the copy is not allowed during capture, and replay would reuse "
                                    "the captured data (observed at run time: a host-to-device copy here{seen})"),
}
KINDS = ("tensor", "number", "bool", "none", "other", "mixed")
# marker keys a re-walk is given beside the pending ids' kinds (see analyzer/returns.py): the
# walker looks up only ids it made, so these never answer a kind question
OBSERVED_PARAM = "observed:"  # observed:<function key>:<parameter>: its tensor kind came from a run
OBSERVED_ATTR = "observed-attr:"  # observed-attr:<class key>:<attribute>: a number that changed per step


@dataclass(frozen=True)
class Observed:
    """One value a traced function read: a parameter (`lr`), `self.attr` or a dict entry."""

    function: str  # unit key: module-qualified (`pkg.train.Trainer.step`)
    name: str  # `lr`, `self.lr`, `cfg['lr']`
    kind: str  # one of KINDS
    changed: bool = False  # a number's value, a tensor's storage or shape differed between steps
    values: tuple[str, ...] = ()  # a number's first two distinct values, as the run printed them

    def note(self) -> str:
        """What the run saw, for a diagnostic's message."""
        if self.kind in ("number", "bool") and self.changed and len(self.values) >= 2:
            return f"observed at run time: {self.name} changed {self.values[0]} → {self.values[1]}"
        if self.kind in ("number", "bool") and self.changed:
            return f"observed at run time: {self.name} changed between steps"
        article = "an" if self.kind[:1] in "aeiou" else "a"
        return f"observed at run time: `{self.name}` is {article} {self.kind}"


class FactsError(Exception):
    """A facts file that cannot be used: the analysis goes on without it."""


# --- the source hash both sides agree on --------------------------------------------------------


def function_hashes(text: str) -> dict[str, set[str]]:
    """Qualified name (`Class.method`, `outer.inner`) → hashes of the source of each def of that
    name (a name defined twice has two). The hash covers the def's own lines, dedented, so
    edits elsewhere in the file that move it do not change it."""
    found: dict[str, set[str]] = {}
    for (qualname, _), digest in def_hashes(text).items():
        found.setdefault(qualname, set()).add(digest)
    return found


def def_hashes(text: str) -> dict[tuple[str, int], str]:
    """(qualified name, first line: its first decorator's, as `co_firstlineno`) → source hash."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return {}
    lines = text.splitlines()
    found: dict[tuple[str, int], str] = {}

    def visit(body: Iterable[ast.stmt], prefix: str) -> None:
        for node in body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                qualname = prefix + node.name
                first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
                found[(qualname, first)] = source_hash(lines, node)
                visit(node.body, qualname + ".")
            elif isinstance(node, ast.ClassDef):
                visit(node.body, prefix + node.name + ".")
            elif isinstance(node, (ast.If, ast.Try, ast.With)):  # defs under `if TYPE_CHECKING:` and the like
                for block in ("body", "orelse", "finalbody", "handlers"):
                    for part in getattr(node, block, ()) or ():
                        visit(part.body if isinstance(part, ast.ExceptHandler) else [part], prefix)

    visit(tree.body, "")
    return found


def source_hash(lines: list[str], node: ast.AST) -> str:
    """Hash of a def's lines (decorators included), dedented."""
    first = min([node.lineno, *(d.lineno for d in getattr(node, "decorator_list", ()))])
    body = textwrap.dedent("\n".join(lines[first - 1: node.end_lineno]))
    return hashlib.blake2b(body.encode("utf-8", "surrogateescape"), digest_size=12).hexdigest()


# --- reading the file ---------------------------------------------------------------------------


@dataclass(frozen=True)
class RunFacts:
    """A loaded facts file: relative path → qualname → (source hash, {name: entry})."""

    root: Path
    files: dict

    def for_file(self, path: str, module: str, text: str) -> tuple[Observed, ...]:
        """The observed values of the functions of `path` whose source is unchanged."""
        functions = self._functions_of(path)
        if not functions:
            return ()
        defs = def_hashes(text)
        hashes: dict[str, set[str]] = {}
        for (qualname, _), digest in defs.items():
            hashes.setdefault(qualname, set()).add(digest)
        lines = text.splitlines()
        found = []
        for qualname, entry in functions.items():
            if entry.get("source_hash") not in hashes.get(qualname, ()):
                continue  # edited (or gone) since the run: its facts may no longer hold
            key = f"{module}.{qualname}" if module else qualname
            for name, value in entry.get("values", {}).items():
                found.append(Observed(key, name, value.get("kind", "other"), bool(value.get("changed")),
                                      tuple(str(v) for v in value.get("values", ())[:2])))
            for callee in entry.get("calls", ()):
                if isinstance(callee, str) and "::" in callee:  # `pkg/loss.py::SigLipLoss.forward`
                    found.append(Observed(key, CALL_PREFIX + callee, "call"))
            found.extend(_branches(key, qualname, entry, defs, lines))
        return tuple(found)

    def _functions_of(self, path: str) -> dict:
        resolved = Path(path).resolve()
        try:
            rel = Path(os.path.relpath(resolved, self.root.resolve())).as_posix()
        except ValueError:  # another drive
            rel = ""
        if rel in self.files:
            return self.files[rel].get("functions", {})
        # Another checkout of the same code (traced in CI, checked in the editor's clone): the
        # longest recorded path that ends the file's path; each function's source hash still
        # decides whether its facts hold.
        posix = resolved.as_posix()
        matches = [key for key in self.files if posix.endswith("/" + key)]
        return self.files[max(matches, key=len)].get("functions", {}) if matches else {}

    def has_file(self, path: str) -> bool:
        return bool(self._functions_of(path))

    def invalidated(self, path: str, before: str, after: str) -> list[str]:
        """Qualified names of `path`'s functions whose facts held for the text `before` and do not
        for `after` (an edit, e.g. `fix`'s, changed them since the run)."""
        functions = self._functions_of(path)
        if not functions:
            return []
        old, new = function_hashes(before), function_hashes(after)
        return sorted(name for name, entry in functions.items()
                      if entry.get("source_hash") in old.get(name, ()) and entry.get("source_hash") not in new.get(name, ()))


def _branches(key: str, qualname: str, entry: dict, defs: dict, lines: list[str]) -> list[Observed]:
    """The hazards the run saw in one unchanged function (branches on tensors, host-to-device
    copies: OBSERVED_HAZARDS), each at its line in the text as it is now: the function may have
    moved (its source hash is the same), so a hazard keeps its distance from its first line."""
    now = [first for (name, first), digest in defs.items() if name == qualname and digest == entry["source_hash"]]
    then = entry.get("line")
    if len(now) != 1 or not isinstance(then, int):
        return []
    found = []
    for field, (code, _) in OBSERVED_HAZARDS.items():
        for seen in entry.get(field, ()):
            if not isinstance(seen, dict) or seen.get("code") != code or not isinstance(seen.get("line"), int):
                continue
            line = seen["line"]
            if not 0 < line - then + now[0] <= len(lines):
                continue
            line += now[0] - then
            text = lines[line - 1]
            column = len(text) - len(text.lstrip())
            details = tuple(str(d) for d in seen.get("details", ()) if isinstance(d, str))[:1]
            found.append(Observed(key, f"{BRANCH_PREFIX}{line}:{column}:{len(text.rstrip())}", "branch",
                                  values=(code, *details)))
    return found


_loaded: dict[tuple, RunFacts | None] = {}  # (path, mtime, size) → what it held (a warning once)


def facts_path(settings) -> Path | None:
    """`--facts FILE`, else `<project root>/.graphsafe/facts.json` when there is one."""
    explicit = getattr(settings, "facts_file", None)
    if explicit is not None:
        return Path(explicit)
    default = Path(settings.root) / DEFAULT_PATH
    return default if default.is_file() else None


def file_stamp(settings) -> tuple | None:
    """What tells that the facts file the settings name was written since it was last read
    (`trace --save-facts` run again): its path, mtime and size; None without one."""
    path = facts_path(settings)
    if path is None:
        return None
    try:
        stat = path.stat()
    except OSError:
        return (str(path), None, None)
    return (str(path), stat.st_mtime_ns, stat.st_size)


def for_settings(settings, warn: Callable[[str], None] | None = None) -> RunFacts | None:
    """The facts the settings name, loaded once per version of the file; None without one (a
    bad file is said once on stderr, and the analysis runs as without it)."""
    path = facts_path(settings)
    if path is None:
        return None
    try:
        stat = path.stat()
        key = (str(path.resolve()), stat.st_mtime_ns, stat.st_size)
    except OSError as error:
        key = (str(path), None, None)
        if key not in _loaded:
            _loaded[key] = None
            _warn(warn, f"cannot read facts file {path}: {error.strerror or error}; analysing without run-time facts")
        return None
    if key not in _loaded:
        try:
            _loaded[key] = load(path)
        except FactsError as error:
            _loaded[key] = None
            _warn(warn, f"{error}; analysing without run-time facts")
    return _loaded[key]


def _warn(warn: Callable[[str], None] | None, message: str) -> None:
    if warn is not None:
        warn(message)
    else:
        sys.stderr.write(f"graphsafe: warning: {message}\n")


def load(path: Path) -> RunFacts:
    """Read and validate a facts file; FactsError says what is wrong with it."""
    try:
        data = json.loads(path.read_bytes())
    except OSError as error:
        raise FactsError(f"cannot read facts file {path}: {error.strerror or error}") from None
    except (ValueError, UnicodeDecodeError, RecursionError) as error:
        raise FactsError(f"facts file {path} is not valid JSON ({error})") from None
    if not isinstance(data, dict) or "version" not in data:
        raise FactsError(f"facts file {path} has no version: not written by `graphsafe trace --save-facts`")
    if data["version"] != VERSION:
        raise FactsError(f"facts file {path} has version {data['version']!r}, this graphsafe reads version {VERSION}: "
                         "run `graphsafe trace --save-facts` again")
    files = data.get("files")
    if not isinstance(files, dict) or not all(_valid_file(v) for v in files.values()):
        raise FactsError(f"facts file {path} is malformed (expected files → functions → values)")
    # `root` is relative to the file's folder (`..` for <root>/.graphsafe/facts.json)
    where = path.resolve().parent
    root = (where / data["root"]).resolve() if isinstance(data.get("root"), str) else where.parent
    return RunFacts(root, files)


def _valid_file(entry) -> bool:
    functions = entry.get("functions") if isinstance(entry, dict) else None
    if not isinstance(functions, dict):
        return False
    for function in functions.values():
        if not isinstance(function, dict) or not isinstance(function.get("source_hash"), str):
            return False
        values = function.get("values", {})
        if not isinstance(values, dict) or not all(isinstance(v, dict) and v.get("kind") in KINDS
                                                   and isinstance(v.get("values", []), list) for v in values.values()):
            return False
    return True


# --- attaching and answering --------------------------------------------------------------------


def attach(files: list, run: RunFacts | None, text_of: Callable[[str], str | None]) -> list:
    """Each FileFacts with `observed` set from `run` (only files the run traced are read)."""
    if run is None:
        return files
    attached = []
    for facts in files:
        if run.has_file(facts.path):
            text = text_of(facts.path)
            observed = run.for_file(facts.path, facts.module, text) if text is not None else ()
            facts = replace(facts, observed=observed)
        attached.append(facts)
    return attached


class ObservedIndex:
    """The project's observed values, by what the call graph asks about."""

    def __init__(self, files: Iterable) -> None:
        self.params: dict[tuple[str, str], Observed] = {}
        self.attrs: dict[tuple[str, str], Observed] = {}
        self._calls: dict[str, list[str]] = {}  # caller unit key → callees as `relpath::qualname`
        self._calls_resolved: dict[str, list[str]] = {}
        self._branches: dict[str, list[Observed]] = {}  # unit key → branches on tensors the run took
        files = list(files)
        self._modules = [(Path(f.path).resolve().as_posix(), f.module) for f in files]
        class_of = {}
        for facts in files:
            observed = getattr(facts, "observed", ())
            if not observed:
                continue
            class_of.update({u.key: u.class_key for u in facts.units})
            for value in observed:
                if value.kind == "call":
                    self._calls.setdefault(value.function, []).append(value.name[len(CALL_PREFIX):])
                elif value.kind == "branch":
                    self._branches.setdefault(value.function, []).append(value)
                elif value.name.startswith("self.") and "[" not in value.name:
                    class_key = class_of.get(value.function)
                    if class_key is not None and value.changed:
                        self.attrs.setdefault((class_key, value.name[5:]), value)
                elif value.name.isidentifier():
                    self.params[(value.function, value.name)] = value

    def __bool__(self) -> bool:
        return bool(self.params or self.attrs or self._calls or self._branches)

    def branch_hits(self, function: str, hits: tuple) -> tuple:
        """Hits for the hazards the run saw in `function` (a branch on a tensor: GS201; a copy of
        host memory to the device: GS402) where its walk found none of that code on that line:
        what static inference left Unknown (an unannotated parameter, a value a callable parameter
        returned, where a tensor lives), and the run saw."""
        observed = self._branches.get(function)
        if not observed:
            return ()
        from graphsafe.model import Hit, Position

        messages = dict(OBSERVED_HAZARDS.values())
        reported = {(hit.code, hit.start.line) for hit in hits}
        found = []
        for value in observed:
            line, column, end = (int(part) for part in value.name[len(BRANCH_PREFIX):].split(":"))
            code, details = (value.values[0], value.values[1:]) if value.values and value.values[0] in messages \
                else (BRANCH_CODE, value.values)
            if (code, line) in reported:
                continue
            reported.add((code, line))
            seen = f" ({details[0]})" if details else ""
            found.append(Hit(code, messages[code].format(seen=seen), Position(line, column), Position(line, end)))
        return tuple(found)

    def branch_lines(self, function: str) -> set[int]:
        """Lines where the run saw `function` read a tensor as a Python value (a branch, a loop's test)."""
        return {int(value.name[len(BRANCH_PREFIX):].split(":")[0]) for value in self._branches.get(function, ())}

    def calls_from(self, function: str) -> list[str]:
        """Unit keys the run saw `function` call (through `self.layers[i](x)`, a loss passed in,
        a callback: calls nothing static resolves), for the call graph."""
        if function not in self._calls:
            return []
        found = self._calls_resolved.get(function)
        if found is None:
            found = []
            for callee in self._calls[function]:
                rel, _, qualname = callee.partition("::")
                module = next((m for path, m in self._modules if path.endswith("/" + rel)), None)
                if module is not None:
                    found.append(f"{module}.{qualname}" if module else qualname)
            self._calls_resolved[function] = found
        return found

    def changed_number(self, function: str, name: str) -> Observed | None:
        value = self.params.get((function, name))
        return value if value is not None and value.changed and value.kind in ("number", "bool") else None

    def changed_attr(self, class_key: str | None, attr: str) -> Observed | None:
        value = self.attrs.get((class_key or "", attr))
        return value if value is not None and value.kind in ("number", "bool") else None

    def tensor_param(self, function: str, name: str) -> bool:
        value = self.params.get((function, name))
        return value is not None and value.kind == "tensor"

    def note_for(self, condition: tuple[str, ...] | None) -> str:
        """The run-time fact that decides a Hit's condition, as a message suffix ("" if none)."""
        if not condition:
            return ""
        found = None
        if condition[0] == "param" and len(condition) >= 3:
            found = self.changed_number(condition[1], condition[2])
        elif len(condition) == 2 and not condition[0].startswith("@"):
            found = self.changed_attr(condition[0], condition[1])
        return f" ({found.note()})" if found is not None else ""


def markers(facts, wanted_kinds: dict) -> dict:
    """What a re-walk of `facts` is given from the run: an observed tensor parameter's pending
    id (when a rule asked and the project left it Unknown) with a marker for its note, and a
    marker per `self.attr` number observed to change."""
    from graphsafe.analyzer import tensorness as T
    from graphsafe.analyzer.returns import ARG_PID

    given: dict = {}
    class_of = {u.key: u.class_key for u in facts.units}
    wanted: dict[str, list[str]] = {}  # `arg:f:x`, and `arg:f:x#0` for `x[0]`: a row of a tensor is one
    for pid in facts.wanted:
        wanted.setdefault(pid.partition("#")[0], []).append(pid)
    for value in getattr(facts, "observed", ()):
        if value.kind == "tensor" and value.name.isidentifier():
            asked = [p for p in wanted.get(f"{ARG_PID}{value.function}:{value.name}", ()) if p not in wanted_kinds]
            given.update((pid, T.TENSOR) for pid in asked)
            if asked:
                given[f"{OBSERVED_PARAM}{value.function}:{value.name}"] = T.TENSOR
        elif value.changed and value.kind in ("number", "bool") and value.name.startswith("self."):
            class_key = class_of.get(value.function)
            if class_key is not None and value.name[5:].isidentifier():
                given[f"{OBSERVED_ATTR}{class_key}:{value.name[5:]}"] = T.SCALAR
    return given


def mentioned_observed(node: cst.CSTNode, function_key: str | None, external: dict) -> str:
    """For a report at `node` in a re-walk: the note of the first name it reads whose tensor
    kind came from the run ("" when none). An `if`/`while` is judged by its test."""
    if not function_key or not external or not any(k.startswith(OBSERVED_PARAM) for k in external):
        return ""
    node = getattr(node, "test", None) if isinstance(node, (cst.If, cst.While)) else node
    stack = [node] if node is not None else []
    while stack:
        current = stack.pop()
        if isinstance(current, cst.Name):
            if f"{OBSERVED_PARAM}{function_key}:{current.value}" in external:
                return f" (observed at run time: `{current.value}` is a tensor)"
            continue
        if isinstance(current, (cst.FunctionDef, cst.Lambda, cst.ClassDef)):
            continue
        if isinstance(current, cst.Attribute):
            stack.append(current.value)  # `x.lr`: `lr` is not a name read here
            continue
        stack.extend(reversed(current.children))
    return ""
