"""Code that runs only when a caller passes a parameter: default-guarded statements.

Libraries (and project code) keep deprecation warnings, validation, logging and generator draws
behind a parameter whose default turns them off::

    def scale(x, factor=2.0, legacy=None):
        if legacy is not None:
            warnings.warn("legacy is deprecated")   # runs only if a caller passes `legacy`

A hit in such a statement is a hazard only where some call in reach passes that parameter
(Hit.guard; the project pass judges it, callgraph.Project.guard_passes). Here, per function:
which statements need which parameters passed. A parameter counts only if its default is a
literal None / False / 0 / "" and the function never rebinds it.

Some guards need no caller at all (a `!` entry: the code never runs once the program is warm):
a module constant bound once to a falsy literal and never rebound (`_debug = False` ...
`if _debug: print(...)`); everything after a cache hit's early return (`found =
_cache.get(key)`, `if found is not None: return found`); the body of an `@lru_cache` /
`@cache` function (recognised by analyzer/warm_only.py). Those run on a cache miss, in the
warm-up steps before capture (same shapes, same patterns, same buffers), not in the captured step.
"""

from __future__ import annotations

import libcst as cst

from graphsafe.analyzer import warm_only
from graphsafe.analyzer.nodes import LEAF_TYPES, children

_NO_DEFAULT = object()


def guarded_statements(function: cst.FunctionDef, self_name: str | None,
                       defaults: dict[str, object] | None = None,
                       constants: dict[str, object] | None = None,
                       predicates: dict[str, str] | None = None) -> dict[int, tuple[str, ...]]:
    """id(statement) → the parameters that must be passed for it to run, each as
    `name=default` (sorted: `legacy=None`), or `!why` where no call can make it run once the
    program is warm, for the statements of `function`'s own body (not those of nested defs or
    classes). `defaults`: guardable_defaults(function), if known; `constants`: module_constants."""
    if defaults is None:
        defaults = guardable_defaults(function, self_name)
    guards = dict(defaults)
    for name, value in (constants or {}).items():
        guards.setdefault(name, _Constant(value))
    if predicates:
        guards[PREDICATES] = predicates
    found: dict[int, tuple[str, ...]] = {}
    start = frozenset({_MEMO}) if warm_only.memoised(function) else frozenset()
    _walk_block(_body(function.body), start, guards, found)
    needs = {key: tuple(need for name in names if (need := _needed(name, guards))) for key, names in found.items()}
    return {key: need for key, need in needs.items() if need}


class _Constant:
    """A module constant's value among the guards: nobody passes it."""

    def __init__(self, value: object) -> None:
        self.value = value

    def __bool__(self) -> bool:
        return bool(self.value)


_MEMO = "!cache-hit"  # the statements after a cache hit's early return


def _needed(name: str, guards: dict[str, object]) -> str | None:
    if name == _MEMO:
        return name
    unpassed = name.startswith(DEFAULT)
    value = guards[name.lstrip(DEFAULT)]
    if isinstance(value, _Constant):
        return None if unpassed else f"{NEVER}{name}"  # a constant always keeps its value
    return f"{name}={value!r}"


NEVER = "!"  # a needed entry that no call can pass: the code does not run once warm
DEFAULT = "~"  # a needed entry `~P=d`: the code runs only where P keeps its default d
PREDICATES = "\0predicates"  # key of the module's `exists`-like functions among the guards


def module_predicates(module: cst.Module) -> dict[str, str]:
    """Module functions of one parameter that only test it against None (`def exists(v):
    return v is not None`): name → "is not None" / "is None"."""
    found = {}
    for statement in module.body:
        if type(statement) is not cst.FunctionDef or statement.decorators:
            continue
        params = statement.params
        if len(params.params) != 1 or isinstance(params.star_arg, cst.Param) or params.kwonly_params \
                or isinstance(params.star_kwarg, cst.Param):
            continue
        body = _body(statement.body)
        if len(body) != 1 or type(body[0]) is not cst.SimpleStatementLine or type(body[0].body[0]) is not cst.Return:
            continue
        value = body[0].body[0].value
        name = params.params[0].name.value
        if type(value) is cst.Comparison and len(value.comparisons) == 1 and type(value.left) is cst.Name \
                and value.left.value == name and type(value.comparisons[0].comparator) is cst.Name \
                and value.comparisons[0].comparator.value == "None":
            operator = type(value.comparisons[0].operator)
            if operator in (cst.Is, cst.IsNot):
                found[statement.name.value] = "is not None" if operator is cst.IsNot else "is None"
    return found


def module_constants(module: cst.Module) -> dict[str, object]:
    """Module-level names bound once, to a falsy literal, and never rebound in the module
    (`_debug_importing = False`): a guard on one is false whenever the module's code runs."""
    found: dict[str, object] = {}
    bound: dict[str, int] = {}
    for statement in module.body:
        if type(statement) is cst.SimpleStatementLine:
            for small in statement.body:
                if type(small) is cst.Assign and len(small.targets) == 1 and type(small.targets[0].target) is cst.Name:
                    name = small.targets[0].target.value
                    bound[name] = bound.get(name, 0) + 1
                    value = _literal(small.value)
                    if value is not _NO_DEFAULT and not value:
                        found[name] = value
    found = {name: value for name, value in found.items() if bound[name] == 1}
    if found:
        rebound, narrowed = _rebinds_outside_assigns(module, found)
        for name in rebound | narrowed:
            found.pop(name, None)
    return found


def _rebinds_outside_assigns(module: cst.Module, names: dict[str, object]) -> tuple[set[str], set[str]]:
    """Bindings of `names` other than their one module-level assignment (in functions with
    `global`, loops, `with ... as`, augmented assignments anywhere)."""
    rebound, narrowed = set(), set()
    for statement in module.body:
        if type(statement) is cst.SimpleStatementLine and all(
                type(small) is cst.Assign and len(small.targets) == 1 and type(small.targets[0].target) is cst.Name
                for small in statement.body):
            continue  # the module-level assignments counted above
        found, parts = _rebinds(statement)
        rebound |= found & names.keys()
        narrowed |= parts & names.keys()
    return rebound, narrowed


def argument_sources(call: cst.Call, own: dict[str, object], function: str | None,
                     is_tensor=None) -> tuple[tuple[str, str], ...]:
    """For the guards of the callee: (slot as in Unit.arg_kinds, source) for the arguments of
    `call` whose value tells for or against a callee's default: a falsy literal (`f(x, None)`:
    `=None`), a truthy one (`=truthy`), a value that is surely not None (`=value`: a tensor by
    `is_tensor(expr)`, arithmetic, a shape read, `len(...)`), or a guardable parameter `own` of
    the calling `function` handed on unchanged (`randn_tensor(shape, generator=generator)`:
    `<function>:generator=None`)."""
    found = []
    position = 0
    for arg in call.args:
        if arg.star:
            break  # positions after an unpacking are not known (arg_kinds says "*")
        slot = arg.keyword.value if arg.keyword is not None else str(position)
        if arg.keyword is None:
            position += 1
        value = _literal(arg.value)
        if value is not _NO_DEFAULT and not value:
            found.append((slot, f"={value!r}"))
        elif type(arg.value) is cst.Name and arg.value.value in own and function:
            found.append((slot, f"{function}:{arg.value.value}={own[arg.value.value]!r}"))
        elif _truthy_literal(arg.value):
            found.append((slot, "=truthy"))
        elif _not_none(arg.value) or (is_tensor is not None and type(arg.value) in (cst.Name, cst.Attribute)
                                      and is_tensor(arg.value)):
            found.append((slot, "=value"))
    return tuple(found)


def _truthy_literal(node: cst.BaseExpression) -> bool:
    if type(node) is cst.Name:
        return node.value == "True"
    if type(node) in (cst.Integer, cst.Float):
        return _literal(node) is _NO_DEFAULT
    if type(node) is cst.SimpleString:
        return bool(node.evaluated_value)
    return False


def _not_none(node: cst.BaseExpression) -> bool:
    """Syntax that never gives None: arithmetic, comparisons, containers, f-strings, a shape
    read (`x.shape[1]`, `x.size(1)`), `len(...)` / `int(...)` / `float(...)`."""
    tp = type(node)
    if tp in (cst.BinaryOperation, cst.UnaryOperation, cst.Comparison, cst.List, cst.Tuple, cst.Dict,
              cst.FormattedString, cst.Integer, cst.Float):
        return True
    if tp is cst.Subscript and type(node.value) is cst.Attribute and node.value.attr.value == "shape":
        return True
    if tp is cst.Call:
        func = node.func
        if type(func) is cst.Name and func.value in ("len", "int", "float", "str", "bool"):
            return True
        if type(func) is cst.Attribute and func.attr.value in ("size", "numel", "dim"):
            return True
    return False


def guardable_defaults(function: cst.FunctionDef, self_name: str | None) -> dict[str, object]:
    params = function.params
    found: dict[str, object] = {}
    for param in list(params.posonly_params) + list(params.params) + list(params.kwonly_params):
        name = param.name.value
        if name == self_name or param.default is None:
            continue
        value = _literal(param.default)
        if value is not _NO_DEFAULT and not value:
            found[name] = value
    if found:
        rebound, narrowed = _rebinds(function.body)
        for name in rebound:
            found.pop(name, None)
        for name in narrowed:  # `generator = generator[0]` raises on None: never rebinds the default
            if found.get(name, 0) is not None:
                found.pop(name, None)
    return found


def _literal(node: cst.BaseExpression) -> object:
    if type(node) is cst.Name and node.value in ("None", "False"):
        return None if node.value == "None" else False
    if type(node) is cst.Integer and node.value in ("0",):
        return 0
    if type(node) is cst.Float and node.value in ("0.0", "0."):
        return 0.0
    if type(node) is cst.SimpleString and node.evaluated_value in ("", b""):
        return ""
    return _NO_DEFAULT


def _rebinds(body: cst.BaseSuite) -> tuple[set[str], set[str]]:
    """(names bound anywhere in a function body, nested scopes included: a conservative read;
    names only ever rebound to a part of themselves, `g = g[0]`, `cb = cb.fn`: that raises on
    None, so a None default is never replaced that way)."""
    names: set[str] = set()
    narrowed: set[str] = set()
    stack: list[cst.CSTNode] = [body]
    while stack:
        node = stack.pop()
        tp = type(node)
        if tp in LEAF_TYPES:  # most nodes: nothing bound, nothing below
            continue
        if tp is cst.If and (filled := _fill_in(node)) is not None:
            # `if max_len is None: max_len = ...`: fills in the default, not a rebinding of a passed value
            for statement in _body(node.body):
                if type(statement) is cst.SimpleStatementLine:
                    for small in statement.body:
                        if not (type(small) is cst.Assign and len(small.targets) == 1
                                and type(small.targets[0].target) is cst.Name and small.targets[0].target.value == filled):
                            stack.append(small)
                else:
                    stack.append(statement)
            stack.append(node.test)
            if node.orelse is not None:
                stack.append(node.orelse)
            continue
        if tp is cst.Assign:
            if len(node.targets) == 1 and type(node.targets[0].target) is cst.Name \
                    and _part_of(node.value) == node.targets[0].target.value:
                narrowed.add(node.targets[0].target.value)
            else:
                for target in node.targets:
                    _bound(target.target, names)
        elif tp in (cst.AugAssign, cst.AnnAssign, cst.For, cst.CompFor, cst.NamedExpr, cst.Del):
            _bound(node.target, names)
        elif tp is cst.AsName:
            _bound(node.name, names)
        elif tp in (cst.Global, cst.Nonlocal):
            names.update(n.name.value for n in node.names)
        stack.extend(children(node))
    return names, narrowed


def _fill_in(statement: cst.If) -> str | None:
    """`if P is None: P = ...` / `if not P:` / `if not exists(P):` with `P = ...` in its body:
    the name whose default it fills in."""
    test = statement.test
    name = None
    if type(test) is cst.Comparison and len(test.comparisons) == 1 and type(test.left) is cst.Name \
            and type(test.comparisons[0].operator) is cst.Is and type(test.comparisons[0].comparator) is cst.Name \
            and test.comparisons[0].comparator.value == "None":
        name = test.left.value
    elif type(test) is cst.UnaryOperation and type(test.operator) is cst.Not:
        inner = test.expression
        if type(inner) is cst.Name:
            name = inner.value
        elif type(inner) is cst.Call and type(inner.func) is cst.Name and len(inner.args) == 1 \
                and type(inner.args[0].value) is cst.Name:
            name = inner.args[0].value.value
    if name is None:
        return None
    for small in (s for st in _body(statement.body) if type(st) is cst.SimpleStatementLine for s in st.body):
        if type(small) is cst.Assign and len(small.targets) == 1 and type(small.targets[0].target) is cst.Name \
                and small.targets[0].target.value == name:
            return name
    return None


def _bound(node: cst.CSTNode, names: set[str]) -> None:
    if type(node) is cst.Name:
        names.add(node.value)
    elif type(node) in (cst.Tuple, cst.List):
        for element in node.elements:
            _bound(element.value, names)
    elif type(node) is cst.StarredElement:
        _bound(node.value, names)


def _part_of(value: cst.BaseExpression) -> str | None:
    """`g[0]`, `g.fn`, `g.items()[0]` → "g": the name whose part the value is (None otherwise)."""
    if type(value) not in (cst.Subscript, cst.Attribute, cst.Call):
        return None
    while type(value) in (cst.Subscript, cst.Attribute, cst.Call):
        value = value.func if type(value) is cst.Call else value.value
    return value.value if type(value) is cst.Name else None


def _body(suite: cst.BaseSuite) -> tuple[cst.BaseStatement, ...]:
    return tuple(suite.body) if isinstance(suite, cst.IndentedBlock) else (suite,)  # type: ignore[arg-type]


def _test_guard(test: cst.BaseExpression, defaults: dict[str, object]) -> tuple[frozenset[str], frozenset[str]]:
    """(what the `if` body needs, what its `else` needs), each a set of `P` (a call passes P) and
    `~P` (P's default is in force): the body of `if P is not None:` / `if P:` / `if P is True:` /
    `if P and ...:` needs P passed; the body of `if P is None:` / `if not P:` needs the default,
    and their `else`s the other way round. `exists(P)`, a module function returning `v is not
    None`, reads as `P is not None` (defaults[PREDICATES])."""
    if type(test) is cst.BooleanOperation:
        left_body, left_else = _test_guard(test.left, defaults)
        right_body, right_else = _test_guard(test.right, defaults)
        if type(test.operator) is cst.And:
            return left_body | right_body, frozenset()
        return frozenset(), left_else | right_else  # `or`: its else needs both false
    if type(test) is cst.UnaryOperation and type(test.operator) is cst.Not:
        body, orelse = _test_guard(test.expression, defaults)
        return orelse, body
    if type(test) is cst.Name and test.value in defaults:
        return frozenset((test.value,)), frozenset(("~" + test.value,))  # every guardable default is falsy
    predicates = defaults.get(PREDICATES) or {}
    if type(test) is cst.Call and type(test.func) is cst.Name and test.func.value in predicates \
            and len(test.args) == 1 and not test.args[0].keyword and not test.args[0].star:
        test = cst.Comparison(test.args[0].value, [cst.ComparisonTarget(
            cst.IsNot() if predicates[test.func.value] == "is not None" else cst.Is(), cst.Name("None"))])
    if type(test) is cst.Comparison and len(test.comparisons) == 1 and type(test.left) is cst.Name \
            and test.left.value in defaults:
        name, default = test.left.value, defaults[test.left.value]
        default = default.value if isinstance(default, _Constant) else default
        target = test.comparisons[0].comparator
        operator = type(test.comparisons[0].operator)
        if type(target) is cst.Name and target.value in ("None", "True"):
            same = (default is None) if target.value == "None" else False  # `default is True`: never
            passed, unpassed = frozenset((name,)), frozenset(("~" + name,))
            if operator is cst.IsNot:
                return (passed, unpassed) if same else (frozenset(), frozenset())
            if operator is cst.Is:
                return (unpassed, passed) if same else (passed, frozenset())
    return frozenset(), frozenset()


def _ends_block(statements: tuple[cst.BaseStatement, ...]) -> bool:
    """The block always leaves the function (its last statement returns or raises)."""
    if not statements:
        return False
    last = statements[-1]
    return isinstance(last, cst.SimpleStatementLine) and any(
        isinstance(small, (cst.Return, cst.Raise)) for small in last.body)


def _walk_block(statements, needed: frozenset[str], defaults: dict[str, object], found: dict[int, tuple[str, ...]]) -> None:
    looked_up: dict[str, str] = {}  # local → the cache it was read from (`found = _cache.get(key)`)
    for statement in statements:
        if needed:
            found[id(statement)] = tuple(sorted(needed))
        lookup = warm_only.cache_lookup(statement)
        if lookup is not None:
            looked_up[lookup[0]] = lookup[1]
        if type(statement) is cst.If and warm_only.cache_hit_return(statement, looked_up):
            needed = needed | {_MEMO}
        elif type(statement) is cst.If:
            after = _walk_if(statement, needed, defaults, found)
            needed = needed | after
            filled = _fill_in(statement)
            if filled in defaults:  # from here on it holds the filled-in value: no longer a guard
                defaults = {name: value for name, value in defaults.items() if name != filled}
        elif isinstance(statement, (cst.For, cst.While)):
            _walk_block(_body(statement.body), needed, defaults, found)
            if statement.orelse is not None:
                _walk_block(_body(statement.orelse.body), needed, defaults, found)
        elif type(statement) is cst.With:
            _walk_block(_body(statement.body), needed, defaults, found)
        elif type(statement) is cst.Try:
            _walk_block(_body(statement.body), needed, defaults, found)
            for handler in statement.handlers:
                _walk_block(_body(handler.body), needed, defaults, found)
            for extra in (statement.orelse, statement.finalbody):
                if extra is not None:
                    _walk_block(_body(extra.body), needed, defaults, found)


def _walk_if(statement: cst.If, needed: frozenset[str], defaults: dict[str, object],
             found: dict[int, tuple[str, ...]]) -> frozenset[str]:
    """Walk an if/elif/else chain; returns what the statements after it need (a guard clause:
    `if P is None: return x` leaves the rest of the block to callers that pass P)."""
    body_needs, else_needs = _test_guard(statement.test, defaults)
    body = _body(statement.body)
    _walk_block(body, needed | body_needs, defaults, found)
    orelse = statement.orelse
    if type(orelse) is cst.If:
        if else_needs:
            found[id(orelse)] = tuple(sorted(needed | else_needs))
        _walk_if(orelse, needed | else_needs, defaults, found)
    elif orelse is not None:
        _walk_block(_body(orelse.body), needed | else_needs, defaults, found)
    elif else_needs and _ends_block(body):
        return else_needs
    return frozenset()


def passed_as(slots: tuple[tuple[str, str], ...], sources: tuple[tuple[str, str], ...], name: str,
              position: int | None, default: str) -> str | None:
    """How a call site (its Unit.arg_kinds slots and argument_sources) passes parameter `name`
    (at `position` among the positional ones, if it is one) whose default is `default` (a
    repr): None if it does not, or passes the default itself; `=<literal>` if it passes another
    falsy literal, `=truthy` / `=value` if it passes a truthy literal / a value surely not
    None (argument_sources); "" if it passes something not known here (an unpacked `*args`/`**kwargs`
    may pass anything); `<function>:<parameter>=<default>` if it hands on that guardable
    parameter of the caller (passed only where the caller's callers pass it)."""
    for slot, _ in slots:
        if slot == "*" or (position is not None and slot.startswith("*") and slot[1:].isdigit()
                           and int(slot[1:]) <= position):
            return ""
        if slot == name or (position is not None and slot == str(position)):
            source = dict(sources).get(slot, "")
            return None if source == f"={default}" else source
    return None
