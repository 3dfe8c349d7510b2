"""Per-step state in the callees of a split core (`graphsafe graph`, after the core's fixes):

- a Python counter of another object the core calls (`KVCache.pos`, `RunningNorm.count`, a
  scheduler's `step_index`; GS302) → a device counter (rewriters/device_counter.py); a KV
  cache's position that bounds prefix slices first makes the cache static
  (rewriters/static_kv_cache.py);
- `torch.tensor([t] * n)` from a per-step number the core now takes as a device scalar
  (graphed numbers=) → `torch.as_tensor(t).repeat(n)` (rewriters/number_tensor.py);
- a callee's GS301 on a parameter that the call chain fills with such a carried number is
  settled: at run time it is a device scalar (`fed_by_carried`); where it indexes a tensor table
  or picks an arm (`alphas[t]`, `a if t >= 0 else b`), the read becomes a gather and the choice
  a `torch.where` first (rewriters/number_gather.py).

Reads only the diagnostics and the scratch files: no torch (the static path)."""

from __future__ import annotations

import ast
import dataclasses
import re
from pathlib import Path

from graphsafe.model import Diagnostic
from graphsafe.rewriters.device_counter import device_counter
from graphsafe.rewriters.number_gather import gather_by_number
from graphsafe.rewriters.number_tensor import tensor_from_number
from graphsafe.rewriters.static_kv_cache import static_kv_cache

_COUNTER = re.compile(r"^`self\.(\w+)` is a Python counter")
_PARAMETER = re.compile(r"^parameter `(\w+)`")


@dataclasses.dataclass
class CalleeState:
    changed: list[str] = dataclasses.field(default_factory=list)  # what was rewritten, one line each
    refused: list[str] = dataclasses.field(default_factory=list)  # "path:line: why"
    built_on_device: set[tuple[str, int]] = dataclasses.field(default_factory=set)  # (file, line) of as_tensor(t)

    def settles(self, d: Diagnostic) -> bool:
        """The GS402 the analyzer still reports on a `torch.as_tensor(t, ...)` written here: `t`
        is a device scalar on replay, so there is no host data to copy."""
        return d.code == "GS402" and (str(Sources.resolve(d.path)), d.start.line) in self.built_on_device


class Sources:
    """The scratch files' text and functions, read once: {display name: its parameters}."""

    def __init__(self, paths: list[Path]) -> None:
        self.paths = paths
        self._trees: dict[str, ast.Module | None] = {}
        self._functions: dict[str, list[list[str]]] | None = None

    @staticmethod
    def resolve(path) -> Path:
        """A diagnostic's path (as the engine shows it: relative to the cwd) as an absolute file."""
        return Path(path).absolute()

    def tree(self, path) -> ast.Module | None:
        key = str(self.resolve(path))
        if key not in self._trees:
            try:
                self._trees[key] = ast.parse(Path(key).read_bytes().decode("utf-8"))
            except (OSError, SyntaxError, UnicodeDecodeError, ValueError):
                self._trees[key] = None
        return self._trees[key]

    def forget(self, path) -> None:
        self._trees.clear()  # one file reached by two spellings (`../x.py` and its real path): drop both
        self._functions = None

    def parameters(self, display: str) -> list[str] | None:
        """The parameters a call passes arguments to (`self` of a method left out); None when no
        or several functions have that name."""
        if self._functions is None:
            self._functions = {}
            for path in self.paths:
                tree = self.tree(path)
                for node in (tree.body if tree else ()):
                    if isinstance(node, ast.ClassDef):
                        for item in node.body:
                            if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                                names = [a.arg for a in item.args.posonlyargs + item.args.args]
                                self._functions.setdefault(f"{node.name}.{item.name}", []).append(names[1:])
                    elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                        self._functions.setdefault(node.name, []).append(
                            [a.arg for a in node.args.posonlyargs + node.args.args])
        found = self._functions.get(display, [])
        return found[0] if len(found) == 1 else None

    def class_at(self, path, line: int) -> str | None:
        tree = self.tree(path)
        for node in (tree.body if tree else ()):
            if isinstance(node, ast.ClassDef) and node.lineno <= line <= (node.end_lineno or node.lineno):
                return node.name
        return None


def settled_by_carried(d: Diagnostic, carried: set[str], sources: Sources) -> bool:
    """A callee's GS301 fed by a carried number (`fed_by_carried`) whose every use works on a
    device scalar as it did on the number: arithmetic and tensor calls, not an index or slice
    bound (a 0-dim tensor index is read on the host), a branch test or a host call."""
    if not fed_by_carried(d, carried, sources):
        return False
    tree = sources.tree(d.path)
    return tree is not None and all(_device_use(tree, u.start.line, u.start.column) for u in (d, *d.also))


_HOST_CALLS = frozenset({"int", "float", "bool", "range", "len", "round", "str", "print"})


def _device_use(tree: ast.Module, line: int, column: int) -> bool:
    """Whether the name used at (line, column) sits where a 0-dim device tensor behaves like
    the number it replaces (columns count from 0, as ast's do)."""
    parents: dict[int, ast.AST] = {}
    target = None
    for node in ast.walk(tree):
        for child in ast.iter_child_nodes(node):
            parents[id(child)] = node
        if isinstance(node, ast.Name) and node.lineno == line and node.col_offset == column:
            target = node
    if target is None:
        return False
    node = target
    while id(node) in parents:
        parent = parents[id(node)]
        if isinstance(parent, ast.Subscript) and node is parent.slice:
            return False
        if isinstance(parent, (ast.If, ast.While, ast.IfExp, ast.Assert)) and node is parent.test:
            return False
        if isinstance(parent, ast.Call) and isinstance(parent.func, ast.Name) and parent.func.id in _HOST_CALLS:
            return False
        if isinstance(parent, ast.stmt):
            return True
        node = parent
    return True


def fed_by_carried(d: Diagnostic, carried: set[str], sources: Sources) -> bool:
    """Whether a GS301 on a callee's parameter is fed, call after call, by a number the core
    takes as a device scalar: `sample_next(logits, temperature)` from a core carrying
    `temperature`."""
    found = _PARAMETER.match(d.message) if d.code == "GS301" else None
    if not found or len(d.chain) < 2 or len(d.call_sites) < len(d.chain) - 1:
        return False
    name = found.group(1)
    for hop in range(len(d.chain) - 2, -1, -1):
        site = d.call_sites[hop]
        parameters = sources.parameters(d.chain[hop + 1])
        tree = sources.tree(site.path)
        if parameters is None or tree is None or name not in parameters:
            return False
        passed = _argument_at(tree, site.line, name, parameters.index(name))
        if passed is None:
            return False
        name = passed
    return name in carried


def fed_parameters(diagnostics: list[Diagnostic], parameters: list[str], sources: Sources) -> list[int]:
    """The positions of the core's parameters that feed a callee's per-step number (GS301): on a
    GPU they are carried by device scalars (graphed numbers=)."""
    return [i for i, p in enumerate(parameters) if any(fed_by_carried(d, {p}, sources) for d in diagnostics)]


def _argument_at(tree: ast.Module, line: int, parameter: str, index: int) -> str | None:
    """The name passed for `parameter` (keyword, or position `index`) by the one call on `line`
    that passes a plain name there."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and node.lineno == line:
            value = next((k.value for k in node.keywords if k.arg == parameter), None)
            if value is None and index < len(node.args) and \
                    not any(isinstance(a, ast.Starred) for a in node.args[:index + 1]):
                value = node.args[index]
            if isinstance(value, ast.Name):
                names.add(value.id)
    return names.pop() if len(names) == 1 else None


def rewrite_callee_state(diagnostics: list[Diagnostic], carried: set[str], skip_class: tuple[str, str],
                         sources: Sources) -> CalleeState:
    """Rewrite, in the scratch files, the callee counters and number tensors the diagnostics
    name; `skip_class` (path, class): the region's own class, whose state the split handles."""
    outcome = CalleeState()
    _gather_by_carried(diagnostics, carried, sources, outcome)  # first: it finds its uses by column
    counters, converted = {}, set()
    host_reads = _outside_reads(diagnostics, sources, outcome)  # before the counters: it finds uses by column
    for d in diagnostics:
        found = _COUNTER.match(d.message) if d.code == "GS302" else None
        owner = sources.class_at(d.path, d.start.line) if found else None
        if owner and (str(sources.resolve(d.path).resolve()), owner) != skip_class:
            counters.setdefault((d.path, owner, found.group(1)), d.start.line)
    for (path, owner, attribute), line in sorted(counters.items()):
        text = _read(sources.resolve(path))
        result = device_counter(text, owner, attribute) if text is not None else None
        if result is None:
            outcome.refused.append(f"{path}:{line}: not UTF-8 text")
            continue
        if result.source is None and "bounds a slice" in (result.refusal or ""):
            cache = _static_cache(path, owner, attribute, sources)  # a KV cache's position: the static cache
            if cache.sources is None:
                outcome.refused.append(f"{path}:{line}: {owner}.{attribute} not made a static KV cache: "
                                       f"{cache.refusal}")
                continue
            for changed_path, source in cache.sources.items():
                _write(Path(changed_path), source, sources)
            outcome.changed.append(f"{path}: {owner}.{cache.method} writes its fixed-size buffers at a device position "
                                   "(index_copy_) and its callers mask the positions not yet filled")
            result = device_counter(_read(sources.resolve(path)), owner, attribute)
        if result.source is None:
            outcome.refused.append(f"{path}:{line}: {owner}.{attribute} not made a device counter: {result.refusal}")
            continue
        _write(sources.resolve(path), result.source, sources)
        reads = f" (read on the host at line {', '.join(map(str, result.host_reads))})" if result.host_reads else ""
        outcome.changed.append(f"{path}: {owner}.{attribute} is a device counter advanced in place{reads}")
        converted.add((owner, attribute))
    for (owner, attribute), refusals in host_reads.items():
        if (owner, attribute) in converted:
            outcome.refused += refusals
    fed = {}
    for d in diagnostics:
        if d.code == "GS301" and fed_by_carried(d, carried, sources):
            fed.setdefault((d.path, d.start.line), set()).add(_PARAMETER.match(d.message).group(1))
    for d in diagnostics:
        numbers = fed.get((d.path, d.start.line))
        if d.code != "GS402" or not numbers:
            continue
        text = _read(sources.resolve(d.path))
        source, why = tensor_from_number(text, d.start.line, numbers) if text is not None else (None, "not UTF-8 text")
        if source is None:
            outcome.refused.append(f"{d.path}:{d.start.line}: {why}")
            continue
        _write(sources.resolve(d.path), source, sources)
        outcome.built_on_device.add((str(sources.resolve(d.path)), d.start.line))
        outcome.changed.append(f"{d.path}:{d.start.line}: the tensor of {', '.join(sorted(numbers))} built on the device")
    return outcome


def _gather_by_carried(diagnostics: list[Diagnostic], carried: set[str], sources: Sources,
                       outcome: CalleeState) -> None:
    """A carried number's uses that a device scalar cannot take as they are (an index into a
    table, an `... if t >= 0 else ...` test): read on the device (rewriters/number_gather.py)."""
    uses: dict[str, set[tuple[int, int]]] = {}
    for d in diagnostics:
        if d.code == "GS301" and fed_by_carried(d, carried, sources) and not settled_by_carried(d, carried, sources):
            uses.setdefault(d.path, set()).update((u.start.line, u.start.column) for u in (d, *d.also))
    for path, at in sorted(uses.items()):
        text = _read(sources.resolve(path))
        result = gather_by_number(text, at) if text is not None else None
        if result is None:
            outcome.refused.append(f"{path}: not UTF-8 text")
            continue
        outcome.refused += [f"{path}: {why}" for why in result.refused]
        if result.source is None:
            continue
        _write(sources.resolve(path), result.source, sources)
        outcome.built_on_device.update((str(sources.resolve(path)), line) for line in result.lines)
        outcome.changed.append(f"{path}:{', '.join(map(str, result.lines))}: a table read or choice by a "
                               "carried number done on the device (index_select, torch.where)")


def _outside_reads(diagnostics: list[Diagnostic], sources: Sources,
                   outcome: CalleeState) -> dict[tuple[str, str], list[str]]:
    """The reads of a callee's counter by code outside its class (`start = caches[0].pos` in
    another module, GS301 "attribute `pos` of KVCache"): a table read, a choice or
    `arange(start, start + n)` by it is rewritten (rewriters/number_gather.py; equal for a Python
    number too); a name bound to it that is read on the host (an `assert`, an `if`, `int()`, a
    factory's size) is returned per (class, attribute) with its line: once the counter is a
    device counter the analyzer no longer sees a number there, and capture would fail."""
    advanced = {found.group(1) for d in diagnostics if d.code == "GS302" and (found := _COUNTER.match(d.message))}
    uses: dict[str, dict[tuple[int, int], tuple[str, str]]] = {}  # path -> use -> (class, attribute)
    for d in diagnostics:
        found = _ATTRIBUTE.match(d.message) if d.code == "GS301" else None
        if found and found.group(1) in advanced:
            for u in (d, *d.also):
                uses.setdefault(d.path, {})[(u.start.line, u.start.column)] = (found.group(2), found.group(1))
    reads: dict[tuple[str, str], list[str]] = {}
    for path, at in sorted(uses.items()):
        before = sources.tree(path) or ast.Module([], [])
        found = [n for n in ast.walk(before) if isinstance(n, ast.Name) and (n.lineno, n.col_offset) in at]
        roots = {id(n) for n in found if _reads_attribute(before, n, at[(n.lineno, n.col_offset)][1])}
        # a name bound to the counter (`start`): all its reads; a chain (`caches[0].pos`): that read
        names = {(n.id, _enclosing(before, n.lineno), at[(n.lineno, n.col_offset)]) for n in found
                 if id(n) not in roots}
        chains = [n for n in found if id(n) in roots and
                  (not _device_use(before, n.lineno, n.col_offset) or _host_read(before, n))]
        text = _read(sources.resolve(path))
        result = gather_by_number(text, set(at)) if text is not None else None
        if result is not None and result.source is not None:
            _write(sources.resolve(path), result.source, sources)
            outcome.built_on_device.update((str(sources.resolve(path)), line) for line in result.lines)
            outcome.changed.append(f"{path}:{', '.join(map(str, result.lines))}: a read of a counter done on "
                                   "the device")
        outcome.refused += [f"{path}: {why}" for why in (result.refused if result is not None else ["not UTF-8"])]
        for node in chains:
            if result is None or node.lineno not in result.lines:
                reads.setdefault(at[(node.lineno, node.col_offset)], []).append(
                    f"{path}:{node.lineno}: {'.'.join(at[(node.lineno, node.col_offset)])}, a device counter now, is "
                    "read on the host here (capture fails): a hand edit")
        after = sources.tree(path) or ast.Module([], [])
        for name, function, counter in sorted(names, key=lambda n: (n[0], n[1] or (0, 0))):
            for node in ast.walk(after):
                if isinstance(node, ast.Name) and node.id == name and isinstance(node.ctx, ast.Load) and \
                        function is not None and function[0] <= node.lineno <= function[1] and \
                        (not _device_use(after, node.lineno, node.col_offset) or _host_read(after, node)):
                    reads.setdefault(counter, []).append(
                        f"{path}:{node.lineno}: `{name}` holds {'.'.join(counter)}, a device counter now, and is "
                        "read on the host here (capture fails): a hand edit")
    return reads


_ATTRIBUTE = re.compile(r"^attribute `(\w+)` of (\w+) is a Python number")
_FACTORIES = frozenset("arange zeros ones empty full rand randn randint linspace".split())
_HOST_METHODS = frozenset("item tolist numpy cpu".split())


def _enclosing(tree: ast.Module | None, line: int) -> tuple[int, int] | None:
    """The line range of the innermost function holding `line`."""
    best = None
    for node in ast.walk(tree or ast.Module([], [])):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and \
                node.lineno <= line <= (node.end_lineno or node.lineno):
            if best is None or node.lineno >= best[0]:
                best = (node.lineno, node.end_lineno or node.lineno)
    return best


def _host_read(tree: ast.Module, name: ast.Name) -> bool:
    """`torch.zeros(n)`, `torch.arange(start, ...)` (a size or bound the factory reads on the
    host), `start.item()`, `start.tolist()`: reads `_device_use` does not see."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in _FACTORIES:
            if any(n is name for arg in node.args for n in ast.walk(arg)):
                return True
        if isinstance(node, ast.Attribute) and node.value is name and node.attr in _HOST_METHODS:
            return True
    return False


def _reads_attribute(tree: ast.Module, name: ast.Name, attribute: str) -> bool:
    """Whether `name` starts a chain that reads `.attribute` (`caches[0].pos`)."""
    return any(isinstance(node, ast.Attribute) and node.attr == attribute and
               any(n is name for n in ast.walk(node.value)) and
               node.value.lineno == name.lineno and node.value.col_offset == name.col_offset
               for node in ast.walk(tree))


def _static_cache(path, owner: str, attribute: str, sources: Sources):
    """rewriters/static_kv_cache.py over every scratch file."""
    files = {}
    for p in sources.paths:
        text = _read(sources.resolve(p))
        if text is not None:
            files[str(sources.resolve(p).resolve())] = text
    return static_kv_cache(files, str(sources.resolve(path).resolve()), owner, attribute)


def _read(path: Path) -> str | None:
    """The text with its own line endings (libcst keeps them; `read_text` would turn CRLF into LF)."""
    try:
        return path.read_bytes().decode("utf-8")
    except (OSError, UnicodeDecodeError):
        return None


def _write(path: Path, source: str, sources: Sources) -> None:
    path.write_bytes(source.encode("utf-8"))
    sources.forget(path)
