"""Loop counters: Python numbers that take a new value on every pass of a loop.

A caller that drives the steps from a loop passes its callee a loop position (`for step in
range(n): self.search_step(x, step)`, `for i, batch in enumerate(loader)`, `t += 1` in a
`while`): a number whatever the callee declares, and a different one on each call. The project
pass makes the callee's parameter a per-step value from such an argument (issue 18, point 1);
the description travels with the argument so the report can name where the value comes from.

Only values that are numbers by their shape count: a loop over batches or modules binds no
counter, and a counter goes through arithmetic with numbers (`step + 1`, `i % k`, `int(t)`),
not through calls whose result is not known here (`lr_at(it)`).

A loop over a list of numbers the function computes counts too (a sampler's time grid:
`times = [i / n for i in range(n)]`, `list(np.linspace(1, 0, n))`, `torch.linspace(...).tolist()`,
then `for t, t_next in zip(times[:-1], times[1:])`): the list is a number list by its shape
(number_list), and each element of the loop, through `zip`/`enumerate`/`reversed`/`sorted`
and slices, is a new number on each pass.
"""

from __future__ import annotations

from typing import Callable

import libcst as cst

from graphsafe.analyzer.nodes import children, is_number_literal

_NUMBER_CALLS = frozenset({"int", "float", "abs", "min", "max", "round"})
_NUMBERS = (cst.Integer, cst.Float)
_TEXT = (cst.SimpleString, cst.ConcatenatedString, cst.FormattedString)


def loop_counters(node: cst.For | cst.While, number_lists: set[str] | None = None,
                  resolve: Callable[[cst.BaseExpression], str | None] | None = None) -> dict[str, str]:
    """The names a loop counts with, each with how: the target of `for i in range(...)`, the
    index of `for i, x in enumerate(...)`, an element of a list of numbers (a literal one, or
    one computed so: number_list; `number_lists` names the locals holding one), through `zip`
    and `enumerate`, and a local the body advances by a number (`t += 1`, `t = t + dt`)."""
    found: dict[str, str] = {}
    if type(node) is cst.For:
        target, iterable = node.target, without_progress_bar(node.iter, resolve)
        known = number_lists or set()
        if type(iterable) is cst.Call and type(iterable.func) is cst.Name:
            shown = f"for {_code(target)} in {iterable.func.value}(...)"
            if iterable.func.value == "range" and type(target) is cst.Name:
                found[target.value] = f"the loop counter of `{shown}`"
            elif (iterable.func.value == "enumerate" and type(target) in (cst.Tuple, cst.List) and target.elements
                    and type(target.elements[0].value) is cst.Name):
                found[target.elements[0].value.value] = f"the index of `{shown}`"
        shown = f"`for {_code(target)} in {_code(iterable)}`"
        for name in _elements_of(target, iterable, known, resolve):
            found.setdefault(name, f"each number of {shown}")
    for name, how in _advanced_in(node.body).items():
        found.setdefault(name, f"advanced with `{how}` on every pass of a loop")
    return found


def progress_bar(name: str | None) -> str | None:
    """What a resolved callee is as a progress bar: "range" for tqdm's `trange` (any of its
    modules: `tqdm.auto.trange`), "wrap" for tqdm's `tqdm` or rich's `track` around an
    iterable, None for anything else."""
    if not name:
        return None
    tail = name.rpartition(".")[2]
    if name.partition(".")[0] == "tqdm":
        return "range" if tail == "trange" else "wrap" if tail == "tqdm" else None
    return "wrap" if name == "rich.progress.track" else None


def without_progress_bar(iterable: cst.BaseExpression, resolve=None) -> cst.BaseExpression:
    """The loop's own iterable past a progress bar: `trange(n, disable=d)` is `range(n)`,
    `tqdm(timesteps, desc=...)` is `timesteps` (each pass gets what the wrapped one yields)."""
    if type(iterable) is not cst.Call or resolve is None:
        return iterable
    bar = progress_bar(resolve(iterable.func))
    positional = [a for a in iterable.args if a.keyword is None]
    if bar is None or any(a.star for a in iterable.args) or not positional:
        return iterable
    return iterable.with_changes(func=cst.Name("range"), args=positional) if bar == "range" else positional[0].value


def number_list(expr: cst.BaseExpression, number_lists: set[str],
                resolve: Callable[[cst.BaseExpression], str | None] | None = None) -> bool:
    """Is `expr` a sequence of Python numbers by its shape? A literal list of numbers, `range(..)`,
    a comprehension of number arithmetic over one (`[i / n for i in range(n)]`), `np.linspace(..)`
    or `np.arange(..)`, `.tolist()` of a torch/numpy `linspace`/`arange`, a local or a `self.`
    attribute that holds one (`number_lists`: `times`, `self.timesteps`), and `list`/`tuple`/`sorted`/`reversed` or a slice of one. A list of
    batches, modules or tensors is none of these."""
    expr = without_progress_bar(expr, resolve)
    tp = type(expr)
    if tp is cst.Name:
        return expr.value in number_lists
    if tp is cst.Attribute:  # `self.timesteps` of a class that keeps one (number_list_attrs)
        return type(expr.value) is cst.Name and f"{expr.value.value}.{expr.attr.value}" in number_lists
    if tp in (cst.List, cst.Tuple):
        return bool(expr.elements) and all(is_number_literal(e.value) for e in expr.elements)
    if tp in (cst.ListComp, cst.GeneratorExp):
        comp = expr.for_in
        if comp.inner_for_in is not None or comp.ifs or type(comp.target) is not cst.Name:
            return False
        if not number_list(comp.iter, number_lists, resolve):
            return False
        found: list[str] = []
        return _number_of(expr.elt, {comp.target.value: ""}, found)
    if tp is cst.Subscript:  # `times[:-1]`, `times[::-1]`: a slice, not an element
        return (len(expr.slice) == 1 and type(expr.slice[0].slice) is cst.Slice
                and number_list(expr.value, number_lists, resolve))
    if tp is not cst.Call:
        return False
    func = expr.func
    if type(func) is cst.Name and func.value == "range":
        return True
    if type(func) is cst.Name and func.value in _SEQUENCE_CALLS:
        return len(expr.args) >= 1 and not expr.args[0].star and number_list(expr.args[0].value, number_lists, resolve)
    name = (resolve(func) if resolve is not None else None) or ""
    if name in _NUMPY_RANGES:
        return True  # iterating a numpy array gives numpy numbers
    if type(func) is cst.Attribute and func.attr.value == "tolist" and not expr.args and type(func.value) is cst.Call:
        made = (resolve(func.value.func) if resolve is not None else None) or ""
        return made in _NUMPY_RANGES or made in _TORCH_RANGES
    return False


_SEQUENCE_CALLS = frozenset({"list", "tuple", "sorted", "reversed"})
_NUMPY_RANGES = frozenset({"numpy.linspace", "numpy.arange", "numpy.logspace", "numpy.geomspace"})
_TORCH_RANGES = frozenset({"torch.linspace", "torch.arange", "torch.logspace"})


def _elements_of(target: cst.BaseExpression, iterable: cst.BaseExpression, number_lists: set[str],
                 resolve) -> list[str]:
    """The names of `for target in iterable` bound to an element of a number list:
    `for t in times`, `for t, t_next in zip(times[:-1], times[1:])`, `for i, t in enumerate(times)`."""
    if type(target) is cst.Name:
        if type(iterable) is cst.Call and type(iterable.func) is cst.Name and iterable.func.value == "range":
            return []  # the loop counter, described as such
        return [target.value] if number_list(iterable, number_lists, resolve) else []
    if type(target) not in (cst.Tuple, cst.List) or type(iterable) is not cst.Call or type(iterable.func) is not cst.Name:
        return []
    args = iterable.args
    if any(a.star or a.keyword is not None for a in args):
        return []
    if iterable.func.value == "zip":
        parts = list(zip(target.elements, args))
    elif iterable.func.value == "enumerate" and len(args) == 1 and len(target.elements) == 2:
        parts = [(target.elements[1], args[0])]
    else:
        return []
    return [element.value.value for element, arg in parts
            if type(element.value) is cst.Name and number_list(arg.value, number_lists, resolve)]


def counter_in(expr: cst.BaseExpression, counters: dict[str, str]) -> str | None:
    """How `expr` varies per pass where it is a number computed from a counter (`step`,
    `step + 1`, `(i + 1) % k`, `min(i, n)`), else None."""
    if not counters:
        return None
    found: list[str] = []
    if not _number_of(expr, counters, found) or not found:
        return None
    name = found[0]
    described = f"`{name}` is {counters[name]}"
    return described if type(expr) is cst.Name else f"`{_code(expr)}` is computed from it: {described}"


def derived(name: str, expr: cst.BaseExpression, counters: dict[str, str]) -> str | None:
    """What `name = expr` makes `name`, where `expr` is computed from a counter."""
    found: list[str] = []
    if not counters or not _number_of(expr, counters, found) or not found:
        return None
    if found[0] == name:  # `t = t + dt`: still the same counter
        return counters[name]
    return f"computed from `{found[0]}`, {counters[found[0]]}"


def _number_of(expr: cst.BaseExpression, counters: dict[str, str], found: list[str]) -> bool:
    """Is `expr` number arithmetic over counters and literals? Collects the counters it reads.
    An attribute or a name that is not a counter is not known to be a number here: no."""
    tp = type(expr)
    if tp is cst.Name:
        if expr.value in counters:
            found.append(expr.value)
            return True
        return False
    if tp in _NUMBERS:
        return True
    if tp is cst.BinaryOperation:
        if type(expr.left) in _TEXT or type(expr.right) in _TEXT:
            return False  # `"layer%d" % i`: a string
        # one side may be a setting (`step % self.k`, `i * stride`): the counter makes it vary
        left = _number_of(expr.left, counters, found)
        right = _number_of(expr.right, counters, found)
        return (left or right) and bool(found) and not isinstance(expr.operator, cst.MatrixMultiply)
    if tp is cst.UnaryOperation:
        return _number_of(expr.expression, counters, found)
    if tp is cst.Call and type(expr.func) is cst.Name and expr.func.value in _NUMBER_CALLS and expr.args:
        return any([_number_of(a.value, counters, found) for a in expr.args]) and bool(found)
    return False


def _advanced_in(body: cst.BaseSuite) -> dict[str, str]:
    """Locals a loop body advances by a number literal: `t += 1`, `t -= 1`, `t = t + 1`."""
    found: dict[str, str] = {}
    stack: list[cst.CSTNode] = [body]
    while stack:
        node = stack.pop()
        tp = type(node)
        if tp in (cst.FunctionDef, cst.ClassDef, cst.Lambda) or isinstance(node, cst.BaseExpression):
            continue
        if tp is cst.AugAssign and type(node.target) is cst.Name and is_number_literal(node.value) \
                and isinstance(node.operator, (cst.AddAssign, cst.SubtractAssign)):
            found.setdefault(node.target.value, _code(node))
        elif tp is cst.Assign and len(node.targets) == 1 and type(node.targets[0].target) is cst.Name:
            name, value = node.targets[0].target.value, node.value
            if (type(value) is cst.BinaryOperation and isinstance(value.operator, (cst.Add, cst.Subtract))
                    and type(value.left) is cst.Name and value.left.value == name and is_number_literal(value.right)):
                found.setdefault(name, _code(node))
        stack.extend(children(node))
    return found


def _code(node: cst.CSTNode) -> str:
    text = cst.Module(body=()).code_for_node(node).strip()
    return text if len(text) <= 40 else text[:37] + "..."


def number_list_attrs(node: cst.ClassDef, resolve: Callable[[cst.BaseExpression], str | None] | None = None) -> set[str]:
    """Attributes every method sets only to a list of numbers (`self.alphas = [1 - b for b in
    betas]` with `betas` one, `self.sigmas = np.linspace(...).tolist()`): host tables, so
    `self.alphas[t]` is a number that varies with `t`."""
    lists: set[str] = set()
    others: set[str] = set()
    for stmt in node.body.body:
        if type(stmt) is not cst.FunctionDef or not stmt.params.params:
            continue
        me = stmt.params.params[0].name.value
        local_lists: set[str] = set()
        stack: list[cst.CSTNode] = [stmt.body]
        while stack:
            current = stack.pop()
            tp = type(current)
            if tp in (cst.FunctionDef, cst.ClassDef, cst.Lambda) or isinstance(current, cst.BaseExpression):
                continue
            if tp is cst.Assign:
                value = current.value
                for target in current.targets:
                    t = target.target
                    if type(t) is cst.Name:
                        (local_lists.add if number_list(value, local_lists, resolve) else local_lists.discard)(t.value)
                    elif type(t) is cst.Attribute and type(t.value) is cst.Name and t.value.value == me:
                        (lists if number_list(value, local_lists, resolve) else others).add(t.attr.value)
            elif tp in (cst.AugAssign, cst.AnnAssign) and type(current.target) is cst.Attribute:
                others.add(current.target.attr.value)
            stack.extend(reversed(list(children(current))))  # in order: a local list is built before it is kept
    return lists - others
