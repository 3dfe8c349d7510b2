"""Per-step values: which Python numbers a class or an optimizer step changes between steps.

Read from the syntax of one class or one function, without kinds, so that the walker can ask
before it walks (`scalar_source`). Three sources, each a pattern of real training and sampling code:

- a class's *step-like* methods advance a counter (`self._window += 1`) or call a method of the
  class that does; what they advance or recompute from numbers (`self.n_samples += 1`,
  `self.step_size = math.exp(log_step)`) changes every step, whatever it started as;
- an optimizer step reads `group["lr"]` from its param groups: a scheduler or a warm-up
  rewrites it between steps (a Python float baked into the captured kernels);
- an optimizer step reads a number its own state advances, `state["step"] += 1` on
  `state = self.state[p]` (initialised `state["step"] = 0`): a host counter, not a tensor.

Per-run settings (constructor arguments stored once: `self.eta = eta`) never match: they are
not advanced, and a literal assigned in a step-like method (`self.count = 0`) is a reset.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Iterator

import libcst as cst

from graphsafe.analyzer import host_resident
from graphsafe.analyzer.names import bound_names, dotted
from graphsafe.analyzer.nodes import children, is_number_literal

# param-group keys a scheduler or a warm-up rewrites between steps (other keys are per-run
# settings: `eps`, `weight_decay`, `betas`)
SCHEDULED_KEYS = frozenset({"lr"})
# torch's learning-rate schedulers: building one (or a subclass) means the program changes
# `group["lr"]` between steps (FileFacts.group_keys)
LR_SCHEDULERS = ("torch.optim.lr_scheduler.",)


@dataclass(frozen=True)
class StepWrite:
    """Where a step-like method changes an attribute: for the report's path from the source."""

    method: str
    how: str  # "advanced", "recomputed"

    def describe(self, class_name: str) -> str:
        return f"{self.how} in `{class_name}.{self.method}`"


def step_written_attrs(node: cst.ClassDef, is_number: Callable[[cst.BaseExpression, set[str], str], bool]
                       ) -> dict[str, StepWrite]:
    """Attributes a class's step-like methods change: `self.x += <number>` or `self.x = <number
    computed from something>` (not a literal: a reset). `is_number(value, number_params,
    self_name)` says whether a value is a Python number by its shape (the walker's test)."""
    methods = {stmt.name.value: stmt for stmt in node.body.body
               if type(stmt) is cst.FunctionDef and stmt.params.params and stmt.name.value != "__init__"}
    writes: dict[str, dict[str, StepWrite]] = {}
    stepping: set[str] = set()
    for name, method in methods.items():
        self_name = method.params.params[0].name.value
        number_params = {p.name.value for p in method.params.params[1:] if _plain_number_param(p)}
        found: dict[str, StepWrite] = {}
        for small in _small_statements(method.body):
            tp = type(small)
            if tp is cst.AugAssign and _self_attr(small.target, self_name):
                stepping.add(name)  # advancing anything of its own makes the method a step
                if _counted(small.value, number_params, self_name, is_number):
                    found.setdefault(small.target.attr.value, StepWrite(name, "advanced"))
            elif tp is cst.Assign:
                value = small.value
                for target in small.targets:
                    if (_self_attr(target.target, self_name) and type(value) not in (cst.Integer, cst.Float)
                            and not (type(value) is cst.UnaryOperation and type(value.expression) in (cst.Integer, cst.Float))
                            and is_number(value, number_params, self_name)):
                        found.setdefault(target.target.attr.value, StepWrite(name, "recomputed"))
        writes[name] = found
    frontier = list(stepping)
    while frontier:  # the methods a step calls run every step too (`self._update_step_size(p)`)
        # (read only from a step: most classes have none, and need no walk of their methods)
        method = methods[frontier.pop()]
        for callee in _self_calls(method, method.params.params[0].name.value) & methods.keys():
            if callee not in stepping:
                stepping.add(callee)
                frontier.append(callee)
    result: dict[str, StepWrite] = {}
    for name in sorted(stepping):
        for attr, write in writes[name].items():
            result.setdefault(attr, write)
    return result


# methods that change how many elements a container holds
_GROWING_METHODS = frozenset({"append", "appendleft", "extend", "extendleft", "insert"})


def grown_containers(node: cst.ClassDef) -> dict[str, str]:
    """Container attributes a method other than `__init__` grows (`self.prev_f.appendleft(f)`),
    each with that method: their length changes between steps (a history that fills up, a
    window of past values), so `len(self.prev_f)` is a per-step number."""
    found: dict[str, str] = {}
    for stmt in node.body.body:
        if type(stmt) is not cst.FunctionDef or not stmt.params.params or stmt.name.value == "__init__":
            continue
        self_name = stmt.params.params[0].name.value
        stack: list[cst.CSTNode] = [stmt.body]
        while stack:
            current = stack.pop()
            tp = type(current)
            if tp is cst.FunctionDef or tp is cst.ClassDef or tp is cst.Lambda:
                continue
            if (tp is cst.Call and type(current.func) is cst.Attribute and current.func.attr.value in _GROWING_METHODS
                    and _self_attr(current.func.value, self_name)):
                found.setdefault(current.func.value.attr.value, stmt.name.value)
            stack.extend(children(current))
    return found


def param_group(expr: cst.BaseExpression, function: cst.FunctionDef | None) -> bool:
    """`opt.param_groups[i]`, or `g` of `for g in <...>.param_groups` in `function`."""
    if type(expr) is cst.Subscript:
        return type(expr.value) is cst.Attribute and expr.value.attr.value == "param_groups"
    if type(expr) is not cst.Name or function is None:
        return False
    stack: list[cst.CSTNode] = [function.body]
    while stack:
        node = stack.pop()
        if (type(node) is cst.For and type(node.target) is cst.Name and node.target.value == expr.value
                and type(node.iter) is cst.Attribute and node.iter.attr.value == "param_groups"):
            return True
        stack.extend(children(node))
    return False


def entry_key(expr: cst.BaseExpression) -> str | None:
    """`group["lr"]` → "lr": a single literal string key."""
    if type(expr) is not cst.Subscript or len(expr.slice) != 1 or type(expr.slice[0].slice) is not cst.Index:
        return None
    key = expr.slice[0].slice.value
    if type(key) is not cst.SimpleString:
        return None
    value = key.evaluated_value
    return value if isinstance(value, str) else None


def scheduled_entry(expr: cst.Subscript, function: cst.FunctionDef | None) -> str | None:
    """A label for `group["lr"]` read from an optimizer's param groups, else None."""
    key = entry_key(expr)
    if key not in SCHEDULED_KEYS or not param_group(expr.value, function):
        return None
    return f'param-group entry `{_shown(expr.value)}["{key}"]` (a scheduler rewrites it between steps)'


def scheduled_group_key(expr: cst.Subscript, function: cst.FunctionDef | None) -> str | None:
    """The key of `group["momentum"]` read from an optimizer's param groups, for a key other
    than the learning rate: per step only where the project rewrites that key between steps
    (`written_group_keys`, solved project-wide on the condition ("group-key", key))."""
    key = entry_key(expr)
    if key is None or key in SCHEDULED_KEYS or key == "params" or not param_group(expr.value, function):
        return None
    return key


def written_group_keys(node: cst.Assign, function: cst.FunctionDef | None) -> Iterator[str]:
    """Keys a warm-up or a scheduler rewrites in an optimizer's param groups: `x["momentum"] =
    float(np.interp(ni, xi, [w, m]))` in `for x in opt.param_groups` of a function other than
    `__init__`, with a value that is not a literal (a literal is a reset or a setting)."""
    if function is None or function.name.value == "__init__":
        return
    value = node.value.expression if type(node.value) is cst.UnaryOperation else node.value
    if type(value) in (cst.Integer, cst.Float, cst.SimpleString, cst.Name) and (
            type(value) is not cst.Name or value.value in ("True", "False", "None")):
        return
    for target in node.targets:
        tgt = target.target
        if type(tgt) is cst.Subscript and (key := entry_key(tgt)) is not None and param_group(tgt.value, function):
            yield key


def advanced_entry(expr: cst.Subscript, function: cst.FunctionDef | None) -> str | None:
    """A label for `state["step"]` where `function` advances that entry (`state["step"] += 1`)
    of state kept across calls (`state = self.state[p]`) and starts it as a number literal."""
    key = entry_key(expr)
    if key is None or type(expr.value) is not cst.Name or function is None:
        return None
    if (expr.value.value, key) not in advanced_state_entries(function):
        return None
    held = "one number in a CPU tensor, " if held_in_cpu_tensor(expr, function) else ""
    return f'state entry `{expr.value.value}["{key}"]` ({held}advanced every step)'


def held_in_cpu_tensor(expr: cst.Subscript, function: cst.FunctionDef | None) -> bool:
    """Whether `function` starts the entry `expr` names as a CPU tensor (`state["step"] =
    torch.tensor(0.0)`), not as a Python number."""
    key = entry_key(expr)
    if key is None or type(expr.value) is not cst.Name or function is None:
        return False
    return any(local == expr.value.value and written == key and host_scalar_tensor(value)
               for local, written, value in _entry_writes(function))


def advanced_state_entries(function: cst.FunctionDef) -> frozenset[tuple[str, str]]:
    """(local, key) of `local[key] += n` (or `local[key] = local.get(key, 0) + n`) in `function`
    where `local` holds state kept across calls (bound from an attribute, `state = self.state[p]`,
    or a loop variable over one, `for group in self.param_groups`) and `local[key]` starts as a
    number literal there (`state["step"] = 0`, `.get("step", 0)`: a host number) or as a CPU
    tensor of one number (`torch.tensor(0.0)`, `torch.zeros(())`: host memory, so `+= 1` is
    CPU work that only the capture runs); also advanced by `local[key].add_(1)`."""
    if _ENTRY_MEMO and _ENTRY_MEMO[0] is function:
        return _ENTRY_MEMO[1]
    persistent = _held_state_locals(function)
    started: set[tuple[str, str]] = set()
    advanced: set[tuple[str, str]] = set()
    for local, key, value in _entry_writes(function):
        if is_number_literal(value) or host_scalar_tensor(value):
            started.add((local, key))
        elif _advances(value, local, key):  # `s[k] = s.get(k, 0) + 1`
            started.add((local, key))
            advanced.add((local, key))
    for small in _small_statements(function.body):
        tp = type(small)
        if tp is cst.AugAssign and type(small.target) is cst.Subscript and type(small.target.value) is cst.Name:
            key = entry_key(small.target)
            if key is not None and is_number_literal(small.value):
                advanced.add((small.target.value.value, key))
        elif tp is cst.Expr and (entry := added_in_place(small.value)) is not None:
            advanced.add(entry)
    result = frozenset(e for e in advanced & started if e[0] in persistent)
    _ENTRY_MEMO[:] = [function, result]
    return result


_ENTRY_MEMO: list = []  # [function, its entries]: the function being walked asks many times


def recurrent_entry(expr: cst.Subscript, function: cst.FunctionDef | None) -> bool:
    """Whether `expr` (a target `local[key]`) is an entry of state kept across calls that
    `function` writes with a value computed from what the entry held: see recurrent_entries."""
    key = entry_key(expr)
    return (key is not None and type(expr.value) is cst.Name and function is not None
            and (expr.value.value, key) in recurrent_entries(function))


def recurrent_entries(function: cst.FunctionDef) -> frozenset[tuple[str, str]]:
    """(local, key) of `local[key] = value` where `local` holds state kept across calls (as in
    advanced_state_entries) and `value` is computed from what that entry held, read through
    any local holding such state, directly or through locals: `d = group["d"]`, ... `d =
    max(d, d_hat)`, ... `group["d"] = d`; `k = group["k"]` ... `group["k"] = k + 1`. State the
    step advances, which a replay never does. A value that is only the entry's own default
    (`group.get("k", 0)`), or what it held carried back unchanged (`g0 = group["g0"]`, `if k ==
    0: g0 = norm`, `group["g0"] = g0`: set once), is no such update."""
    if _RECURRENT_MEMO and _RECURRENT_MEMO[0] is function:
        return _RECURRENT_MEMO[1]
    persistent = _held_state_locals(function)
    writes = list(_entry_writes(function))
    binds: list[tuple[str, cst.BaseExpression | None, bool]] = []  # (name, value, `+=`: computed from itself)
    for small in _small_statements(function.body):
        tp = type(small)
        if tp is cst.Assign:
            for target in small.targets:
                for name, value in _bound_pairs(target.target, small.value):
                    binds.append((name, value, False))
        elif tp is cst.AugAssign and type(small.target) is cst.Name:
            binds.append((small.target.value, small.value, True))
    # local → keys of kept state its value comes from: True where computed from it, False where a copy
    held: dict[str, dict[str, bool]] = {}

    def keys_of(expr: cst.BaseExpression | None) -> dict[str, bool]:
        if expr is None:
            return {}
        if type(expr) is cst.Name:
            return dict(held.get(expr.value, {}))
        if type(expr) is cst.Subscript and type(expr.value) is cst.Name and expr.value.value in persistent:
            key = entry_key(expr)
            if key is not None:
                return {key: False}  # the entry itself
        found: dict[str, bool] = {}
        stack: list[cst.CSTNode] = [expr]
        while stack:
            node = stack.pop()
            tp = type(node)
            if tp is cst.Lambda:
                continue
            if tp is cst.Subscript and type(node.value) is cst.Name and node.value.value in persistent:
                key = entry_key(node)
                if key is not None:
                    found[key] = True
            elif tp is cst.Name:
                found.update(dict.fromkeys(held.get(node.value, {}), True))
            stack.extend(children(node))
        return found

    changed = True
    while changed:
        changed = False
        for name, value, itself in binds:
            keys = keys_of(value)
            mine = held.setdefault(name, {})
            if itself:
                keys.update(dict.fromkeys(mine, True))
            for key, computed in keys.items():
                if mine.get(key) is None or computed and not mine[key]:
                    mine[key] = computed
                    changed = True
    result = frozenset((local, key) for local, key, value in writes
                       if local in persistent and keys_of(value).get(key) and not _own_default(value, local, key))
    _RECURRENT_MEMO[:] = [function, result]
    return result


def _bound_pairs(target: cst.BaseExpression, value: cst.BaseExpression):
    """(name, the value it takes) of an assignment target: `a, b = x, y` pairs them; names
    unpacked from one value (`b1, b2 = group["betas"]`) take that value."""
    if type(target) in (cst.Tuple, cst.List) and type(value) in (cst.Tuple, cst.List) \
            and len(target.elements) == len(value.elements):
        for element, item in zip(target.elements, value.elements):
            yield from _bound_pairs(element.value, item.value)
        return
    for name in bound_names(target):
        yield name.value, value


_RECURRENT_MEMO: list = []


def _entry_writes(function: cst.FunctionDef) -> Iterator[tuple[str, str, cst.BaseExpression]]:
    """(local, key, value) of each `local[key] = value` with a literal string key in `function`."""
    for small in _small_statements(function.body):
        if type(small) is cst.Assign:
            for target in small.targets:
                tgt = target.target
                if type(tgt) is cst.Subscript and type(tgt.value) is cst.Name and (key := entry_key(tgt)) is not None:
                    yield tgt.value.value, key, small.value


def _held_state_locals(function: cst.FunctionDef) -> set[str]:
    """Locals of `function` holding state kept across calls: bound from an attribute
    (`state = self.state[p]`, `group = self.param_groups[0]`) or looping over one (`for group in
    self.param_groups`)."""
    held = {loop.target.value for loop in _loops_in(function.body)
            if type(loop.target) is cst.Name and _held_state(loop.iter)}
    for small in _small_statements(function.body):
        if type(small) is cst.Assign and _held_state(small.value):
            held.update(t.target.value for t in small.targets if type(t.target) is cst.Name)
    return held


def _own_default(value: cst.BaseExpression, local: str, key: str) -> bool:
    """`local.get(key, default)`: the entry itself, or a default where it is missing."""
    return (type(value) is cst.Call and type(value.func) is cst.Attribute and value.func.attr.value in ("get", "setdefault")
            and len(value.args) >= 1 and type(value.args[0].value) is cst.SimpleString
            and value.args[0].value.evaluated_value == key)


_HOST_SCALAR_FACTORIES = frozenset({"torch.tensor", "torch.zeros", "torch.ones"})


def host_scalar_tensor(value: cst.BaseExpression) -> bool:
    """`torch.tensor(0.0)`, `torch.tensor(0, dtype=torch.float32)`, `torch.zeros(())`: one number
    in a CPU tensor (no `device=`, or the CPU's)."""
    if type(value) is not cst.Call or dotted(value.func) not in _HOST_SCALAR_FACTORIES or not value.args:
        return False
    first = value.args[0]
    if first.keyword is not None or first.star:
        return False
    if dotted(value.func) == "torch.tensor":
        if not is_number_literal(first.value):
            return False
    elif not (type(first.value) in (cst.Tuple, cst.List) and not first.value.elements):
        return False
    for arg in value.args[1:]:
        if arg.keyword is None:
            return False
        if arg.keyword.value == "device" and not host_resident.is_cpu(arg.value):
            return False
    return True


def added_in_place(value: cst.BaseExpression) -> tuple[str, str] | None:
    """(local, key) of `local[key].add_(n)` with `n` a number literal."""
    if (type(value) is not cst.Call or type(value.func) is not cst.Attribute or value.func.attr.value != "add_"
            or len(value.args) != 1 or not is_number_literal(value.args[0].value)):
        return None
    target = value.func.value
    key = entry_key(target)
    if key is None or type(target.value) is not cst.Name:
        return None
    return target.value.value, key


def _advances(value: cst.BaseExpression, local: str, key: str) -> bool:
    """`local.get(key, 0) + n` or `local[key] + n` with `n` a number literal."""
    if type(value) is not cst.BinaryOperation or type(value.operator) is not cst.Add or not is_number_literal(value.right):
        return False
    left = value.left
    if type(left) is cst.Subscript:
        return type(left.value) is cst.Name and left.value.value == local and entry_key(left) == key
    if (type(left) is cst.Call and type(left.func) is cst.Attribute and left.func.attr.value == "get"
            and type(left.func.value) is cst.Name and left.func.value.value == local and len(left.args) == 2):
        first, default = left.args[0].value, left.args[1].value
        return (type(first) is cst.SimpleString and first.evaluated_value == key and is_number_literal(default))
    return False


def _held_state(value: cst.BaseExpression) -> bool:
    """`self.state[p]`, `self.state`: a container reached through an attribute."""
    if type(value) is cst.Subscript:
        value = value.value
    return type(value) is cst.Attribute


def _shown(expr: cst.BaseExpression) -> str:
    if type(expr) is cst.Name:
        return expr.value
    return "param_group"


def _plain_number_param(param: cst.Param) -> bool:
    annotation = param.annotation.annotation if param.annotation is not None else None
    if annotation is not None:
        return type(annotation) is cst.Name and annotation.value in ("int", "float")
    default = param.default
    if type(default) is cst.UnaryOperation:
        default = default.expression
    return type(default) in (cst.Integer, cst.Float)


def _counted(value: cst.BaseExpression, number_params: set[str], self_name: str, is_number) -> bool:
    """What a counter advances by: a number (`+= 1`, `+= n`), or a count of a tensor's
    elements (`+= y.shape[0]`, `+= len(batch)`, `+= x.numel()`)."""
    if is_number(value, number_params, self_name):
        return True
    if type(value) is cst.Subscript and type(value.value) is cst.Attribute and value.value.attr.value == "shape":
        return True
    return (type(value) is cst.Call and (
        (type(value.func) is cst.Attribute and value.func.attr.value in ("size", "numel", "dim"))
        or (type(value.func) is cst.Name and value.func.value == "len")))


def _self_attr(target: cst.BaseExpression, self_name: str) -> bool:
    return type(target) is cst.Attribute and type(target.value) is cst.Name and target.value.value == self_name


def _self_calls(method: cst.FunctionDef, self_name: str) -> set[str]:
    found: set[str] = set()
    stack: list[cst.CSTNode] = [method.body]
    while stack:
        node = stack.pop()
        tp = type(node)
        if tp is cst.FunctionDef or tp is cst.ClassDef or tp is cst.Lambda:
            continue
        if tp is cst.Call and _self_attr(node.func, self_name):
            found.add(node.func.attr.value)
        stack.extend(children(node))
    return found


def _small_statements(body: cst.BaseSuite) -> Iterator[cst.BaseSmallStatement]:
    """Every small statement of a function body, through compound statements, not nested defs."""
    for node in _statements(body):
        if type(node) is cst.SimpleStatementLine:
            yield from node.body


def _loops_in(body: cst.BaseSuite) -> Iterator[cst.For]:
    """The `for` loops of a function body, nested ones included (not in nested defs)."""
    return (node for node in _statements(body) if type(node) is cst.For)


def _statements(body: cst.BaseSuite) -> Iterator[cst.CSTNode]:
    """The statements (and the blocks holding them) of a function body, not in nested defs."""
    stack: list[cst.CSTNode] = [body]
    while stack:
        node = stack.pop()
        tp = type(node)
        if tp is cst.FunctionDef or tp is cst.ClassDef or isinstance(node, cst.BaseExpression):
            continue
        yield node
        if tp is not cst.SimpleStatementLine:
            stack.extend(children(node))
