"""Code that runs only on a cache miss: in the warm-up steps before capture, not in the captured step.

A captured region is warmed up first, with the same shapes, patterns and buffers it is captured
with, so whatever a cache keeps from one call to the next is already there when capture starts:
the body of an `@lru_cache` / `@cache` function, and everything after a cache hit's early return
(`found = CACHE.get(key)` / `if found is not None: return found`, `if key in CACHE: return
CACHE[key]`). Not a cache keyed by an object's identity: a new tensor each eager step misses
every time (GS506). analyzer/default_guards.py turns these into guards that never pass.
"""

from __future__ import annotations

import libcst as cst

from graphsafe.analyzer.nodes import children

MEMO_DECORATORS = frozenset({"lru_cache", "cache", "functools.lru_cache", "functools.cache"})


def memoised(function: cst.FunctionDef) -> bool:
    """`@functools.lru_cache(...)` / `@cache`: the body runs on a cache miss only."""
    for decorator in function.decorators:
        target = decorator.decorator
        if type(target) is cst.Call:
            target = target.func
        if type(target) in (cst.Name, cst.Attribute) and cst.Module([]).code_for_node(target) in MEMO_DECORATORS:
            return True
    return False


def cache_lookup(statement: cst.BaseStatement) -> tuple[str, str] | None:
    """`found = CACHE.get(key)` (CACHE a module name or an attribute): (found, CACHE)."""
    if type(statement) is not cst.SimpleStatementLine or len(statement.body) != 1:
        return None
    small = statement.body[0]
    if type(small) is not cst.Assign or len(small.targets) != 1 or type(small.targets[0].target) is not cst.Name:
        return None
    value = small.value
    if type(value) is cst.Call and type(value.func) is cst.Attribute and value.func.attr.value == "get" \
            and type(value.func.value) in (cst.Name, cst.Attribute) and value.args and stable_key(value.args[0].value):
        return small.targets[0].target.value, cst.Module([]).code_for_node(value.func.value)
    return None


def stable_key(key: cst.BaseExpression) -> bool:
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


def cache_hit_return(statement: cst.If, looked_up: dict[str, str]) -> bool:
    """`if found is not None: return found` after `found = CACHE.get(key)`, or `if key in
    CACHE: return CACHE[key]`: the rest of the block runs only on a cache miss."""
    if statement.orelse is not None:
        return False
    body = statement.body.body if isinstance(statement.body, cst.IndentedBlock) else (statement.body,)
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
    if operator is cst.In and type(returned) is cst.Subscript and stable_key(test.left):
        code = cst.Module([]).code_for_node
        return code(returned.value) == code(right) and len(returned.slice) == 1 \
            and code(returned.slice[0].slice) == code(cst.Index(test.left))
    return False
