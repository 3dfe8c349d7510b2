"""The region's wrapper makes the draws over selected rows (drawn_rows.py) in eager's call order
(`graphsafe graph`): from the class whose forward selects the rows (given a `_graphsafe_draws`
method by masked_rows.py) up to the region's class, each class on the way gets
`_graphsafe_draws(<its forward's parameters that carry the mask>)` calling its modules' draws in
the order its forward calls them (`self.moe(...)`, or `for block in self.blocks: block(...)`),
and the region's method becomes a wrapper:

    def forward(self, x, mask=None):              def forward_core(self, x, mask=None):
        ...                                   →        ...   (the graphed core, unchanged)
                                                   def forward(self, x, mask=None):
                                                       self._graphsafe_draws(mask)
                                                       return self.forward_core(x, mask)

Refused (the reason returned) where the order is not proven: a module made in several places,
called under a branch, in another method or twice, a mask argument that is not the caller's own
parameter passed on unchanged, or another random draw in any class the chain makes (dropout,
rand, ...), which would take numbers from the same generator between eager's draws.

Reads only the text: no torch (the static path)."""

from __future__ import annotations

import ast
import dataclasses
from pathlib import Path

from graphsafe.rewriters.drawn_rows import DRAW_ROWS, DRAWS, RANDOM_CALLS, called_name

_RANDOM_MODULES = frozenset({"Dropout", "Dropout1d", "Dropout2d", "Dropout3d", "AlphaDropout", "FeatureAlphaDropout",
                             "RReLU"})


@dataclasses.dataclass
class Wired:
    texts: dict[str, str] = dataclasses.field(default_factory=dict)  # path -> new text
    core: str = ""  # the region's new core method name
    parameters: list[str] = dataclasses.field(default_factory=list)  # the core's parameters
    classes: list[str] = dataclasses.field(default_factory=list)  # each class given _graphsafe_draws


class _Classes:
    def __init__(self, texts: dict[str, str]) -> None:
        self.texts = texts
        self.by_name: dict[str, list[tuple[str, ast.ClassDef]]] = {}
        for path, text in texts.items():
            try:
                tree = ast.parse(text)
            except (SyntaxError, ValueError):
                continue
            for node in tree.body:
                if isinstance(node, ast.ClassDef):
                    self.by_name.setdefault(node.name, []).append((path, node))

    def one(self, name: str) -> tuple[str, ast.ClassDef] | None:
        found = self.by_name.get(name, [])
        return found[0] if len(found) == 1 else None


def wire_draws(drawers: list[tuple[str, list[str]]], texts: dict[str, str], region_path: str,
               region_function: str) -> Wired | str:
    """The files' new texts, or why the draws cannot be wired. `texts`: every scratch file's text
    (the drawers' files as masked_rows rewrote them)."""
    owner, _, method = region_function.rpartition(".")
    if not owner or "." in owner:
        return "the region is not a method of a class: no object to hold the draws"
    classes = _Classes(texts)
    inserts: dict[str, list[tuple[int, str]]] = {}
    wired = Wired()
    if len(drawers) != 1:
        return "draws over selected rows in several classes: their order is not proven"
    name, parameters = drawers[0]
    seen = {name}
    wired.classes.append(name)
    while name != owner:
        callers = [(path, cls) for entries in classes.by_name.values() for path, cls in entries
                   if _made_in(cls, name)]
        if len(callers) != 1:
            return f"`{name}` is made in {len(callers)} classes: the order of its draws is not proven"
        path, caller = callers[0]
        made = _made_in(caller, name)
        found = _draw_calls(caller, made, name, parameters, classes)
        if isinstance(found, str):
            return found
        body, parameters = found
        if caller.name in seen:
            return f"`{caller.name}` makes itself: the order of its draws is not proven"
        seen.add(caller.name)
        inserts.setdefault(path, []).append((caller.end_lineno + 1, _method(DRAWS, parameters, body)))
        wired.classes.append(caller.name)
        name = caller.name
    for cls in seen:
        entry = classes.one(cls)
        why = _random_elsewhere(entry, classes, set()) if entry else f"`{cls}` is defined in several files"
        if why:
            return why
    region = classes.one(owner)
    if region is None or str(Path(region[0])) != str(Path(region_path)):
        return f"`{owner}` is not found once in the region's file"
    function = next((f for f in region[1].body if isinstance(f, ast.FunctionDef) and f.name == method), None)
    if function is None or function.args.vararg or function.args.kwarg or function.args.kwonlyargs \
            or function.args.posonlyargs or function.decorator_list:
        return f"`{region_function}` is not a plain method: its wrapper is not made"
    core = f"{method}_core"
    if any(isinstance(f, ast.FunctionDef) and f.name == core for f in region[1].body):
        return f"`{owner}` already has a `{core}`"
    given = [a.arg for a in function.args.args[1:]]
    if not set(parameters) <= set(given):
        return f"the mask does not come from `{region_function}`'s parameters"
    signature = ast.unparse(function.args)
    call = ", ".join(given)
    wrapper = (f"\n    def {method}({signature}):\n"
               f'        """`graphsafe graph`: the random draws over selected rows made first, as eager makes them, '
               f'outside the graph; then the core."""\n'
               f"        self.{DRAWS}({', '.join(parameters)})\n"
               f"        return self.{core}({call})\n")
    inserts.setdefault(region[0], []).append((function.end_lineno + 1, wrapper))
    for path, added in inserts.items():
        lines = texts[path].splitlines(keepends=True)
        if path == region[0]:
            row = lines[function.lineno - 1]
            lines[function.lineno - 1] = row.replace(f"def {method}(", f"def {core}(", 1)
        for line, text in sorted(added, key=lambda a: -a[0]):
            lines.insert(line - 1, text)
        wired.texts[path] = "".join(lines)
    wired.core, wired.parameters = core, given
    return wired


def _method(name: str, parameters: list[str], body: list[str]) -> str:
    lines = "".join(f"\n        {line}" for line in body)
    return (f"\n    def {name}(self, {', '.join(parameters)}):\n"
            f'        """`graphsafe graph`: its modules\' random draws over selected rows, in the order forward '
            f'calls them."""{lines}\n')


def _made_in(cls: ast.ClassDef, name: str) -> tuple[str, bool] | None:
    """(attribute, listed) where `cls.__init__` makes `name` once: `self.a = Name(...)` or
    `self.a = nn.ModuleList(Name(...) for ...)`."""
    init = next((f for f in cls.body if isinstance(f, ast.FunctionDef) and f.name == "__init__"), None)
    if init is None:
        return None
    found = []
    for node in ast.walk(init):
        if not (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Attribute)
                and isinstance(node.targets[0].value, ast.Name) and node.targets[0].value.id == "self"):
            continue
        value, listed = node.value, False
        if isinstance(value, ast.Call) and _name(value.func) in ("ModuleList", "Sequential") and value.args \
                and isinstance(value.args[0], ast.GeneratorExp):
            value, listed = value.args[0].elt, True
        if isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id == name:
            found.append((node.targets[0].attr, listed))
    makes = [n for n in ast.walk(cls) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == name]
    return found[0] if len(found) == 1 and len(makes) == 1 else None


def _draw_calls(caller: ast.ClassDef, made: tuple[str, bool], callee: str, parameters: list[str], classes):
    """(the body of the caller's draws method, its parameters), or why not."""
    attribute, listed = made
    forward = next((f for f in caller.body if isinstance(f, ast.FunctionDef) and f.name == "forward"), None)
    entry = classes.one(callee)
    callee_forward = next((f for f in entry[1].body if isinstance(f, ast.FunctionDef) and f.name == "forward"),
                          None) if entry else None
    if forward is None or callee_forward is None:
        return f"`{caller.name}.forward` or `{callee}.forward` is not found"
    uses = [n for f in caller.body if isinstance(f, ast.FunctionDef) and f.name != "__init__" for n in ast.walk(f)
            if isinstance(n, ast.Attribute) and n.attr == attribute and isinstance(n.value, ast.Name)
            and n.value.id == "self"]
    if len(uses) != 1 or not any(u is n for n in ast.walk(forward) for u in uses):
        return f"`self.{attribute}` of `{caller.name}` is used {len(uses)} times: the order of its draws is not proven"
    positions = [a.arg for a in callee_forward.args.args[1:]]
    own = [a.arg for a in forward.args.args[1:]]
    rebound = {t.id for n in ast.walk(forward) if isinstance(n, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.For))
               for t in ast.walk(n.targets[0] if isinstance(n, ast.Assign) else n.target) if isinstance(t, ast.Name)}
    for statement in forward.body:
        if not any(u is n for n in ast.walk(statement) for u in uses):
            continue
        if listed:
            if not (isinstance(statement, ast.For) and isinstance(statement.target, ast.Name)
                    and statement.iter is uses[0] and not statement.orelse):
                return f"`self.{attribute}` of `{caller.name}` is not looped over at the top of forward"
            item = statement.target.id
            calls = [n for s in statement.body if isinstance(s, (ast.Assign, ast.Expr)) for n in ast.walk(s)
                     if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == item]
            used = [n for n in ast.walk(statement) if isinstance(n, ast.Name) and n.id == item]
            if len(calls) != 1 or len(used) != 2:
                return f"`{item}` is not called once in the loop over `self.{attribute}`"
            prefix, call = f"for {item} in self.{attribute}:", "    " + item
        else:
            calls = [n for n in ast.walk(statement) if isinstance(n, ast.Call) and n.func is uses[0]]
            if not isinstance(statement, (ast.Assign, ast.Expr, ast.AnnAssign, ast.Return)) or len(calls) != 1:
                return f"`self.{attribute}` of `{caller.name}` is called under a loop or a branch"
            prefix, call = None, f"self.{attribute}"
        call_node = calls[0]
        if call_node.keywords or any(isinstance(a, ast.Starred) for a in call_node.args):
            return f"`self.{attribute}` is called with keywords or `*`: its arguments are not followed"
        arguments = []
        for parameter in parameters:
            index = positions.index(parameter) if parameter in positions else len(call_node.args)
            value = call_node.args[index] if index < len(call_node.args) else None
            if not (isinstance(value, ast.Name) and value.id in own and value.id not in rebound):
                return (f"`{caller.name}.forward` does not pass its own parameter unchanged as `{parameter}` of "
                        f"`{callee}.forward` (line {call_node.lineno})")
            arguments.append(value.id)
        line = f"{call}.{DRAWS}({', '.join(arguments)})"
        body = [prefix, line] if prefix else [line]
        return body, list(dict.fromkeys(arguments))
    return f"`self.{attribute}` is not called in `{caller.name}.forward`"


def _random_elsewhere(entry: tuple[str, ast.ClassDef], classes, visited: set[str]) -> str | None:
    """A random call or module in the class or a class it makes (the drawing classes' own draws aside)."""
    path, cls = entry
    if cls.name in visited:
        return None
    visited.add(cls.name)
    if any(isinstance(f, ast.FunctionDef) and f.name == DRAW_ROWS for f in cls.body):
        return None  # its one draw is proven by drawn_rows.py
    for node in ast.walk(cls):
        if isinstance(node, ast.Call) and called_name(node) in RANDOM_CALLS | _RANDOM_MODULES:
            return (f"{Path(path).name}:{node.lineno}: another random call in `{cls.name}` (`{called_name(node)}`): eager's order of "
                    "draws is not proven")
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            entry = classes.one(node.func.id)
            if entry is not None:
                why = _random_elsewhere(entry, classes, visited)
                if why:
                    return why
    return None


def _name(func: ast.AST) -> str:
    return func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
