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
`@cache` function. Those run on a cache miss, in the warm-up steps before capture (same
shapes, same patterns, same buffers), not in the captured step.
"""

from __future__ import annotations

import libcst as cst

from graphsafe.analyzer.nodes import children

_NO_DEFAULT = object()


def guarded_statements(function: cst.FunctionDef, self_name: str | None,
                       defaults: dict[str, object] | None = None,
                       constants: dict[str, object] | None = None) -> dict[int, tuple[str, ...]]:
    """id(statement) → the parameters that must be passed for it to run, each as
    `name=default` (sorted: `legacy=None`), or `!why` where no call can make it run once the
    program is warm, for the statements of `function`'s own body (not those of nested defs or
    classes). `defaults`: guardable_defaults(function), if known; `constants`: module_constants."""
    if defaults is None:
        defaults = guardable_defaults(function, self_name)
    guards = dict(defaults)
    for name, value in (constants or {}).items():
        guards.setdefault(name, _Constant(value))
    found: dict[int, tuple[str, ...]] = {}
    start = frozenset({_MEMO}) if _memoised(function) else frozenset()
    _walk_block(_body(function.body), start, guards, found)
    return {key: tuple(_needed(name, guards) for name in names) for key, names in found.items()}


_MEMO_DECORATORS = frozenset({"lru_cache", "cache", "functools.lru_cache", "functools.cache"})


def _memoised(function: cst.FunctionDef) -> bool:
    """`@functools.lru_cache(...)` / `@cache`: the body runs on a cache miss only."""
    for decorator in function.decorators:
        target = decorator.decorator
        if type(target) is cst.Call:
            target = target.func
        if type(target) in (cst.Name, cst.Attribute) and cst.Module([]).code_for_node(target) in _MEMO_DECORATORS:
            return True
    return False


class _Constant:
    """A module constant's value among the guards: nobody passes it."""

    def __init__(self, value: object) -> None:
        self.value = value

    def __bool__(self) -> bool:
        return bool(self.value)


_MEMO = "!cache-hit"  # the statements after a cache hit's early return


def _needed(name: str, guards: dict[str, object]) -> str:
    if name == _MEMO:
        return name
    value = guards[name]
    return f"{NEVER}{name}" if isinstance(value, _Constant) else f"{name}={value!r}"


NEVER = "!"  # a needed entry that no call can pass: the code does not run once warm


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


def argument_sources(call: cst.Call, own: dict[str, object], function: str | None) -> tuple[tuple[str, str], ...]:
    """For the guards of the callee: (slot as in Unit.arg_kinds, source) for the arguments of
    `call` that may leave a callee's default in force: a falsy literal (`f(x, None)`: source
    `=None`) or a guardable parameter `own` of the calling `function` handed on unchanged
    (`randn_tensor(shape, generator=generator)`: source `<function>:generator=None`)."""
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
    return tuple(found)


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
    """(parameters the `if` body needs passed, parameters its `else` needs passed): the body
    of `if P is not None:` / `if P:` / `if P is True:` / `if P and ...:` cannot run with P's
    default; the `else` of `if P is None:` / `if not P:` cannot either."""
    if type(test) is cst.BooleanOperation and type(test.operator) is cst.And:
        left, _ = _test_guard(test.left, defaults)
        right, _ = _test_guard(test.right, defaults)
        return left | right, frozenset()
    if type(test) is cst.UnaryOperation and type(test.operator) is cst.Not:
        body, orelse = _test_guard(test.expression, defaults)
        return orelse, body
    if type(test) is cst.Name and test.value in defaults:
        return frozenset((test.value,)), frozenset()  # every guardable default is falsy
    if type(test) is cst.Comparison and len(test.comparisons) == 1 and type(test.left) is cst.Name \
            and test.left.value in defaults:
        name, default = test.left.value, defaults[test.left.value]
        default = default.value if isinstance(default, _Constant) else default
        target = test.comparisons[0].comparator
        operator = type(test.comparisons[0].operator)
        if type(target) is cst.Name and target.value in ("None", "True"):
            same = (default is None) if target.value == "None" else False  # `default is True`: never
            if operator is cst.IsNot:
                return (frozenset((name,)), frozenset()) if same else (frozenset(), frozenset())
            if operator is cst.Is:
                return (frozenset(), frozenset((name,))) if same else (frozenset((name,)), frozenset())
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
        lookup = _cache_lookup(statement)
        if lookup is not None:
            looked_up[lookup[0]] = lookup[1]
        if type(statement) is cst.If and _cache_hit_return(statement, looked_up):
            needed = needed | {_MEMO}
        elif type(statement) is cst.If:
            after = _walk_if(statement, needed, defaults, found)
            needed = needed | after
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


def _cache_lookup(statement: cst.BaseStatement) -> tuple[str, str] | None:
    """`found = CACHE.get(key)` (CACHE a module name or an attribute): (found, CACHE)."""
    if type(statement) is not cst.SimpleStatementLine or len(statement.body) != 1:
        return None
    small = statement.body[0]
    if type(small) is not cst.Assign or len(small.targets) != 1 or type(small.targets[0].target) is not cst.Name:
        return None
    value = small.value
    if type(value) is cst.Call and type(value.func) is cst.Attribute and value.func.attr.value == "get" \
            and type(value.func.value) in (cst.Name, cst.Attribute) and value.args and _stable_key(value.args[0].value):
        return small.targets[0].target.value, cst.Module([]).code_for_node(value.func.value)
    return None


def _stable_key(key: cst.BaseExpression) -> bool:
    """A cache key that is the same on every warm step: not an object's identity (`id(t)`,
    `hash(t)`, `t.data_ptr()`: a new tensor each eager step misses every time, GS506)."""
    stack = [key]
    while stack:
        node = stack.pop()
        if type(node) is cst.Call:
            func = node.func
            if (type(func) is cst.Name and func.value in ("id", "hash")) or (
                    type(func) is cst.Attribute and func.attr.value == "data_ptr"):
                return False
        stack.extend(children(node))
    return True


def _cache_hit_return(statement: cst.If, looked_up: dict[str, str]) -> bool:
    """`if found is not None: return found` after `found = CACHE.get(key)`, or `if key in
    CACHE: return CACHE[key]`: the rest of the block runs only on a cache miss."""
    if statement.orelse is not None:
        return False
    body = _body(statement.body)
    if len(body) != 1 or type(body[0]) is not cst.SimpleStatementLine or len(body[0].body) != 1 \
            or type(body[0].body[0]) is not cst.Return or body[0].body[0].value is None:
        return False
    returned = body[0].body[0].value
    test = statement.test
    if type(test) is not cst.Comparison or len(test.comparisons) != 1:
        return False
    operator, right = type(test.comparisons[0].operator), test.comparisons[0].comparator
    if operator is cst.IsNot and type(right) is cst.Name and right.value == "None" and type(test.left) is cst.Name:
        return test.left.value in looked_up and type(returned) is cst.Name and returned.value == test.left.value
    if operator is cst.In and type(returned) is cst.Subscript and _stable_key(test.left):
        code = cst.Module([]).code_for_node
        return code(returned.value) == code(right) and len(returned.slice) == 1 \
            and code(returned.slice[0].slice) == code(cst.Index(test.left))
    return False


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
    repr): None if it does not, or passes the default itself; "" if it passes something else
    (an unpacked `*args`/`**kwargs` may pass anything); `<function>:<parameter>=<default>` if it hands on
    that guardable parameter of the caller (passed only where the caller's callers pass it)."""
    for slot, _ in slots:
        if slot == "*" or (position is not None and slot.startswith("*") and slot[1:].isdigit()
                           and int(slot[1:]) <= position):
            return ""
        if slot == name or (position is not None and slot == str(position)):
            source = dict(sources).get(slot, "")
            if source == f"={default}":
                return None
            return "" if source.startswith("=") else source
    return None
