"""A KV cache whose Python position bounds a prefix slice → the static KV cache of CUDA graphs:
the whole fixed-size buffer, written at a device position, with the positions not yet filled
masked out of the attention.

    class KVCache(nn.Module):                         def update(self, k, v):
        def __init__(self, ..., max_len, ...):            T = k.size(2)
            self.register_buffer("k", zeros(shape))       at = self.pos + torch.arange(T, device=self.k.device)
            self.pos = 0                                  self.k.index_copy_(2, at, k)
        def update(self, k, v):                           self.v.index_copy_(2, at, v)
            T = k.size(2)                        →        self.pos += T
            self.k[:, :, self.pos : self.pos + T] = k     return self.k, self.v, torch.arange(self.k.size(2),
            self.v[:, :, self.pos : self.pos + T] = v         device=self.k.device) <= at.unsqueeze(-1)
            self.pos += T
            return self.k[:, :, : self.pos], self.v[:, :, : self.pos]

and in the one function that calls it, `k, v = cache.update(k, v)` becomes `k, v, visible = ...`
(`visible = None` before the statement that holds it) and the scores get
`if visible is not None: att = att.masked_fill(~visible, float("-inf"))` right before their
softmax. `self.pos` is then made a device counter (rewriters/device_counter.py).

Why it computes the same: the prefix attention of query i (the i-th new position, p0 + i, with
p0 the position before the update) sees the keys j < p0 + T, and its causal mask
`tril(diagonal=S - T)` with S = p0 + T keeps j <= p0 + i. Over the whole buffer (S = L), the
same causal mask keeps j <= L - T + i, a superset, and `visible` keeps j <= p0 + i: together
exactly the keys the prefix kept. A masked score is -inf, so its softmax weight is exactly 0 and
the value it multiplies adds 0 (the buffers hold zeros or earlier finite values there). Sums over
L instead of p0 + T terms may round differently in the last bit; the writes are `index_copy_`
at the same positions (a written tensor of another length or dtype is an error, as a slice
assignment of another length was).

Proven before anything is written, else refused with the line: the buffers are registered once in
`__init__` and never rebound; one method slices them by the position, in exactly the form above
(writes `self.B[:, ..., pos : pos + T] = x` with T a parameter's size along that dimension, then
`pos += T`, then a return of prefixes `self.B[:, ..., : pos]`); every call of that method in the
project unpacks its result into names, in a function where the keys are used only in
`q @ keys.transpose(-2, -1)` (scaled), the scores only in the causal mask block
`if T > 1: S = keys.size(d); causal = torch.ones(T, S, ...).tril(diagonal=S - T);
att = att.masked_fill(~causal, float("-inf"))` and then a softmax over the last dimension, and the
values only in `att @ values`. The new positions are assumed to be the queries (self-attention: the
causal mask `tril(diagonal=S - T)` assumes the same)."""

from __future__ import annotations

import dataclasses

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider

from graphsafe.analyzer.names import dotted
from graphsafe.rewriters.boundary import _torch_name
from graphsafe.rewriters.device_counter import mentions_self_attribute


class Refused(Exception):
    """Why the pattern is not provably the static cache's, with the line."""


@dataclasses.dataclass
class KVCacheResult:
    sources: dict[str, str] | None  # path -> new text, the files that change; None: refused
    refusal: str | None = None
    method: str = ""


def static_kv_cache(files: dict[str, str], cache_path: str, class_name: str, attribute: str) -> KVCacheResult:
    """Rewrite `class_name` of `cache_path` (its position `self.<attribute>`) and the callers
    of its slicing method among `files` (path -> text), or say why not."""
    try:
        module = _parse(files[cache_path], cache_path)
        cls = next((s for s in module.body if isinstance(s, cst.ClassDef) and s.name.value == class_name), None)
        if cls is None:
            raise Refused(f"{cache_path}: no top-level class {class_name}")
        torch = _torch_name(module)
        if torch is None:
            raise Refused(f"{cache_path}: the file does not `import torch`")
        lines = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
        method, new_method, returned = _cache_method(cls, attribute, torch, lines, cache_path)
        changed = {cache_path: module.deep_replace(method, new_method)}
        callers = 0
        for path, text in files.items():
            tree = changed.get(path) or _parse(text, path)
            rewritten, found = _rewrite_callers(tree, method.name.value, len(returned), path)
            if found:
                changed[path] = rewritten
                callers += found
        if not callers:
            raise Refused(f"{cache_path}: no call of {class_name}.{method.name.value} unpacks its result")
    except Refused as why:
        return KVCacheResult(None, str(why))
    return KVCacheResult({p: m.code for p, m in changed.items()}, None, method.name.value)


def _parse(text: str, path: str) -> cst.Module:
    try:
        return cst.parse_module(text)
    except cst.ParserSyntaxError as error:
        raise Refused(f"{path}: cannot parse: {error.message}") from None


def _code(node: cst.CSTNode) -> str:
    return cst.Module([]).code_for_node(node)


def _is_self(node: cst.CSTNode, attribute: str) -> bool:
    return dotted(node) == f"self.{attribute}" if isinstance(node, cst.BaseExpression) else False


# --- the cache class --------------------------------------------------------------------------------


def _buffers(cls: cst.ClassDef, path: str, lines) -> set[str]:
    """Names registered with `self.register_buffer("name", ...)` in `__init__` and never rebound."""
    init = next((s for s in cls.body.body if isinstance(s, cst.FunctionDef) and s.name.value == "__init__"), None)
    found: set[str] = set()
    rebound: list[cst.CSTNode] = []

    class _Find(cst.CSTVisitor):
        def visit_Call(self, node: cst.Call) -> None:
            if dotted(node.func) == "self.register_buffer" and node.args and \
                    isinstance(node.args[0].value, cst.SimpleString):
                found.add(node.args[0].value.evaluated_value)

    if init is not None:
        init.visit(_Find())
    cls.visit(_RebindFinder(rebound))
    for target in rebound:
        name = dotted(target) or ""
        if name.startswith("self.") and name[5:] in found:
            raise Refused(f"{path}:{lines[target].start.line}: `{name}` is rebound: not one fixed-size buffer")
    return found


class _RebindFinder(cst.CSTVisitor):
    def __init__(self, out: list) -> None:
        self.out = out

    def visit_AssignTarget(self, node: cst.AssignTarget) -> None:
        self.out.append(node.target)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        self.out.append(node.target)


def _full(element: cst.SubscriptElement) -> bool:
    s = element.slice
    return isinstance(s, cst.Slice) and s.lower is None and s.upper is None and s.step is None


def _bounded(node: cst.BaseExpression, attribute: str, buffers: set[str]):
    """`self.B[:, ..., lower : upper]` → (B, dimension, lower, upper), else None."""
    if not isinstance(node, cst.Subscript):
        return None
    name = dotted(node.value) or ""
    if not name.startswith("self.") or name[5:] not in buffers or not node.slice:
        return None
    *leading, last = node.slice
    if not all(_full(e) for e in leading) or not isinstance(last.slice, cst.Slice) or last.slice.step is not None:
        return None
    return name[5:], len(leading), last.slice.lower, last.slice.upper


def _cache_method(cls: cst.ClassDef, attribute: str, torch: str, lines, path: str):
    buffers = _buffers(cls, path, lines)
    slicing = [m for m in cls.body.body if isinstance(m, cst.FunctionDef) and _slices_by(m, attribute)]
    if len(slicing) != 1:
        raise Refused(f"{path}: {len(slicing)} methods of {cls.name.value} slice by `self.{attribute}` (one kept here)")
    method = slicing[0]
    if not isinstance(method.body, cst.IndentedBlock):
        raise Refused(f"{path}:{lines[method].start.line}: {method.name.value} has its body on the def line")
    parameters = {p.name.value for p in method.params.params[1:]}
    sizes: dict[str, tuple[str, int]] = {}  # T -> (parameter, dimension) for `T = k.size(2)`
    body, writes, advanced, returned, dimension = [], [], False, None, None
    for statement in method.body.body:
        line = lines[statement].start.line
        small = statement.body[0] if isinstance(statement, cst.SimpleStatementLine) and len(statement.body) == 1 \
            else None
        if not mentions_self_attribute(statement, attribute) and not any(mentions_self_attribute(statement, b) for b in buffers):
            size = _size_of(small, parameters) if small is not None else None
            if size is not None:
                sizes[size[0]] = size[1:]
            if writes or advanced:
                raise Refused(f"{path}:{line}: a statement between the cache's writes and its return")
            body.append(statement)
            continue
        if isinstance(small, cst.Assign) and len(small.targets) == 1 and not advanced and returned is None:
            bound = _bounded(small.targets[0].target, attribute, buffers)
            if bound is None or not isinstance(small.value, cst.Name):
                raise Refused(f"{path}:{line}: a write to the cache not of the form "
                              "`self.B[:, ..., pos : pos + T] = x`")
            buffer, dim, lower, upper = bound
            count = _count(lower, upper, attribute)
            if count is None or sizes.get(count, (None, None))[1] != dim or \
                    sizes[count][0] not in parameters:
                raise Refused(f"{path}:{line}: the written slice is not `self.{attribute} : self.{attribute} + T` "
                              "with T a parameter's size along that dimension")
            if dimension not in (None, dim):
                raise Refused(f"{path}:{line}: the cache is written along two dimensions")
            dimension = dim
            writes.append((buffer, small.value, count))
            continue
        if isinstance(small, cst.AugAssign) and isinstance(small.operator, cst.AddAssign) and \
                _is_self(small.target, attribute) and writes and not advanced and \
                isinstance(small.value, cst.Name) and small.value.value == writes[0][2]:
            advanced = True
            body.append(statement)
            continue
        if isinstance(small, cst.Return) and advanced and isinstance(small.value, cst.Tuple):
            returned = []
            for element in small.value.elements:
                bound = _bounded(element.value, attribute, buffers)
                if bound is None or bound[1] != dimension or bound[2] is not None or \
                        not _is_self(bound[3], attribute):
                    raise Refused(f"{path}:{line}: the return is not the prefixes `self.B[:, ..., : self.{attribute}]`")
                returned.append(bound[0])
            continue
        raise Refused(f"{path}:{line}: `self.{attribute}` or a buffer used outside the static-cache pattern")
    if returned is None or len({w[2] for w in writes}) != 1:
        raise Refused(f"{path}:{lines[method].start.line}: {method.name.value} is not writes, `self.{attribute} += T` "
                      "and a return of prefixes")
    count = writes[0][2]
    at = _fresh("at", method)
    anchor = writes[0][0]
    new_body = body[:len(body) - 1]  # all but `self.pos += T`
    new_body.append(cst.parse_statement(f"{at} = self.{attribute} + {torch}.arange({count}, "
                                        f"device=self.{anchor}.device)"))
    for buffer, value, _ in writes:
        new_body.append(cst.parse_statement(f"self.{buffer}.index_copy_({dimension}, {at}, {value.value})"))
    new_body.append(body[-1])
    first = returned[0]
    new_body.append(cst.parse_statement(
        f"return {', '.join(f'self.{b}' for b in returned)}, {torch}.arange(self.{first}.size({dimension}), "
        f"device=self.{first}.device) <= {at}.unsqueeze(-1)"))
    return method, method.with_changes(body=method.body.with_changes(body=new_body)), returned


def _slices_by(method: cst.FunctionDef, attribute: str) -> bool:
    found = []

    class _Find(cst.CSTVisitor):
        def visit_SubscriptElement(self, node: cst.SubscriptElement) -> None:
            if mentions_self_attribute(node, attribute):
                found.append(node)

    method.visit(_Find())
    return bool(found)


def _size_of(small: cst.BaseSmallStatement, parameters: set[str]):
    """`T = k.size(2)` / `T = k.shape[2]` → ("T", "k", 2)."""
    if not (isinstance(small, cst.Assign) and len(small.targets) == 1 and
            isinstance(small.targets[0].target, cst.Name)):
        return None
    value = small.value
    if isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute) and value.func.attr.value == "size" and \
            len(value.args) == 1 and isinstance(value.args[0].value, cst.Integer):
        owner, dim = value.func.value, int(value.args[0].value.value)
    elif isinstance(value, cst.Subscript) and isinstance(value.value, cst.Attribute) and \
            value.value.attr.value == "shape" and len(value.slice) == 1 and \
            isinstance(value.slice[0].slice, cst.Index) and isinstance(value.slice[0].slice.value, cst.Integer):
        owner, dim = value.value.value, int(value.slice[0].slice.value.value)
    else:
        return None
    if not isinstance(owner, cst.Name) or owner.value not in parameters:
        return None
    return small.targets[0].target.value, owner.value, dim


def _count(lower, upper, attribute: str) -> str | None:
    """`pos : pos + T` → "T"."""
    if lower is None or upper is None or not _is_self(lower, attribute):
        return None
    if isinstance(upper, cst.BinaryOperation) and isinstance(upper.operator, cst.Add) and \
            _is_self(upper.left, attribute) and isinstance(upper.right, cst.Name):
        return upper.right.value
    return None


def _fresh(name: str, scope: cst.CSTNode) -> str:
    taken = set()

    class _Names(cst.CSTVisitor):
        def visit_Name(self, node: cst.Name) -> None:
            taken.add(node.value)

    scope.visit(_Names())
    candidate, number = name, 2
    while candidate in taken:
        candidate, number = f"{name}{number}", number + 1
    return candidate


# --- the callers ------------------------------------------------------------------------------------


def _rewrite_callers(module: cst.Module, method: str, count: int, path: str) -> tuple[cst.Module, int]:
    """Every call `.method(...)` of the file, each proven an attention over the cache and rewritten."""
    lines = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
    calls = _calls_of(module, method)
    if not calls:
        return module, 0
    functions = _functions(module)
    replaced = module
    owners = set()
    for call in calls:
        line = lines[call].start.line
        function = next((f for f in functions if lines[f].start.line <= line <= lines[f].end.line
                         and not any(g is not f and lines[f].start.line <= lines[g].start.line <= line <=
                                     lines[g].end.line for g in functions)), None)
        if function is None:
            raise Refused(f"{path}:{line}: a call of .{method}() outside a function")
        if id(function) in owners:
            raise Refused(f"{path}:{line}: a second call of .{method}() in the same function")
        owners.add(id(function))
        new_function = _attention(function, call, count, path, line)
        replaced = replaced.deep_replace(function, new_function)
    return replaced, len(calls)


def _calls_of(module: cst.Module, method: str) -> list[cst.Call]:
    found = []

    class _Find(cst.CSTVisitor):
        def visit_Call(self, node: cst.Call) -> None:
            if isinstance(node.func, cst.Attribute) and node.func.attr.value == method:
                found.append(node)

    module.visit(_Find())
    return found


def _functions(module: cst.Module) -> list[cst.FunctionDef]:
    found = []

    class _Find(cst.CSTVisitor):
        def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
            found.append(node)

    module.visit(_Find())
    return found


def _attention(function: cst.FunctionDef, call: cst.Call, count: int, path: str, line: int) -> cst.FunctionDef:
    if not isinstance(function.body, cst.IndentedBlock):
        raise Refused(f"{path}:{line}: the calling function's body is on its def line")
    body = list(function.body.body)
    # the top-level statement holding `keys, values = cache.update(...)`, alone or in an `if` without else
    index, holder, names = None, None, None
    for i, statement in enumerate(body):
        inner = [statement]
        if isinstance(statement, cst.If) and statement.orelse is None and isinstance(statement.body, cst.IndentedBlock):
            inner = list(statement.body.body)
        for s in inner:
            if isinstance(s, cst.SimpleStatementLine) and len(s.body) == 1 and isinstance(s.body[0], cst.Assign) \
                    and s.body[0].value is call:
                targets = s.body[0].targets
                if len(targets) == 1 and isinstance(targets[0].target, cst.Tuple) and \
                        all(isinstance(e.value, cst.Name) for e in targets[0].target.elements) and \
                        len(targets[0].target.elements) == count:
                    index, holder, names = i, s, [e.value.value for e in targets[0].target.elements]
    if index is None:
        raise Refused(f"{path}:{line}: the cache's result is not unpacked into {count} names by a statement "
                      "of the function (or of an `if` in it)")
    if count != 2:
        raise Refused(f"{path}:{line}: the cache returns {count} buffers (keys and values kept here)")
    keys, values = names
    after = body[index + 1:]
    score_at = next((j for j, s in enumerate(after) if _uses(s, keys)), None)
    if score_at is None:
        raise Refused(f"{path}:{line}: the keys are not used after the update")
    scores = _scores(after[score_at], keys)
    if any(_uses(s, values) for s in after[:score_at + 1]):
        raise Refused(f"{path}:{line}: the values are used before the attention weights")
    if scores is None:
        raise Refused(f"{path}:{line}: the keys are not used as `att = (q @ keys.transpose(-2, -1)) * scale`")
    rest = after[score_at + 1:]
    if not rest or not _causal_block(rest[0], keys, scores):
        raise Refused(f"{path}:{line}: no causal mask block `if T > 1: S = keys.size(2); causal = torch.ones(T, S, "
                      "...).tril(diagonal=S - T); att = att.masked_fill(~causal, float('-inf'))` after the scores")
    if len(rest) < 2 or not _softmax(rest[1], scores):
        raise Refused(f"{path}:{line}: the masked scores do not go straight into `att = F.softmax(att, dim=-1)`")
    for s in rest[2:]:
        if _uses(s, keys) or _assigns(s, scores) or not _values_used_right(s, values, scores):
            raise Refused(f"{path}:{line}: after the softmax the keys, scores or values are used otherwise than "
                          "`att @ values`")
    visible = _fresh("visible", function)
    new_holder = holder.with_changes(body=[holder.body[0].with_changes(
        targets=[cst.AssignTarget(cst.parse_expression(f"{keys}, {values}, {visible}"))])])
    new_statement = body[index].deep_replace(holder, new_holder) if body[index] is not holder else new_holder
    softmax_at = index + 1 + score_at + 2
    mask = cst.parse_statement(f"if {visible} is not None:\n    {scores} = {scores}.masked_fill(~{visible}, "
                               f"float(\"-inf\"))\n")
    new_body = body[:index] + [cst.parse_statement(f"{visible} = None"), new_statement] + \
        body[index + 1:softmax_at] + [mask] + body[softmax_at:]
    return function.with_changes(body=function.body.with_changes(body=new_body))


def _uses(node: cst.CSTNode, name: str) -> bool:
    found = []

    class _Find(cst.CSTVisitor):
        def visit_Name(self, n: cst.Name) -> None:
            if n.value == name:
                found.append(n)

        def visit_Attribute(self, a: cst.Attribute) -> bool:
            a.value.visit(self)
            return False

    node.visit(_Find())
    return bool(found)


def _assigns(statement: cst.CSTNode, name: str) -> bool:
    found = []

    class _Find(cst.CSTVisitor):
        def visit_AssignTarget(self, t: cst.AssignTarget) -> None:
            if _uses(t, name):
                found.append(t)

        def visit_AugAssign(self, t: cst.AugAssign) -> None:
            if _uses(t.target, name):
                found.append(t)

    statement.visit(_Find())
    return bool(found)


def _only(statement: cst.BaseStatement):
    if isinstance(statement, cst.SimpleStatementLine) and len(statement.body) == 1:
        return statement.body[0]
    return None


def _scores(statement: cst.BaseStatement, keys: str) -> str | None:
    """`att = (q @ keys.transpose(-2, -1)) * scale` (or `/ scale`, or bare) → "att"."""
    small = _only(statement)
    if not (isinstance(small, cst.Assign) and len(small.targets) == 1 and
            isinstance(small.targets[0].target, cst.Name)):
        return None
    value = small.value
    if isinstance(value, cst.BinaryOperation) and isinstance(value.operator, (cst.Multiply, cst.Divide)) and \
            not _uses(value.right, keys):
        value = value.left
    if not (isinstance(value, cst.BinaryOperation) and isinstance(value.operator, cst.MatrixMultiply)):
        return None
    right = value.right
    if _uses(value.left, keys) or not (isinstance(right, cst.Call) and isinstance(right.func, cst.Attribute) and
                                       right.func.attr.value == "transpose" and isinstance(right.func.value, cst.Name)
                                       and right.func.value.value == keys and
                                       sorted(_code(a.value) for a in right.args) == ["-1", "-2"]):
        return None
    return small.targets[0].target.value


def _causal_block(statement: cst.BaseStatement, keys: str, scores: str) -> bool:
    """`if T > 1:` with exactly `S = keys.size(2)`, `causal = torch.ones(T, S, ...).tril(diagonal=S - T)`,
    `att = att.masked_fill(~causal, float("-inf"))` (the names as found)."""
    if not (isinstance(statement, cst.If) and statement.orelse is None and
            isinstance(statement.body, cst.IndentedBlock)):
        return False
    test = statement.test
    if not (isinstance(test, cst.Comparison) and isinstance(test.left, cst.Name) and len(test.comparisons) == 1 and
            isinstance(test.comparisons[0].operator, cst.GreaterThan) and _code(test.comparisons[0].comparator) == "1"):
        return False
    queries = test.left.value
    inner = [_only(s) for s in statement.body.body]
    if len(inner) != 3 or not all(isinstance(s, cst.Assign) and len(s.targets) == 1 and
                                  isinstance(s.targets[0].target, cst.Name) for s in inner):
        return False
    size, causal, masked = inner
    length = size.targets[0].target.value
    if _code(size.value) not in (f"{keys}.size(2)", f"{keys}.shape[2]", f"{keys}.size(-2)", f"{keys}.shape[-2]"):
        return False
    mask = causal.value
    if not (isinstance(mask, cst.Call) and isinstance(mask.func, cst.Attribute) and mask.func.attr.value == "tril"
            and len(mask.args) == 1 and (mask.args[0].keyword is None or mask.args[0].keyword.value == "diagonal")
            and _code(mask.args[0].value) == f"{length} - {queries}"):
        return False
    ones = mask.func.value
    positional = [a for a in ones.args if a.keyword is None] if isinstance(ones, cst.Call) else []
    if not (isinstance(ones, cst.Call) and (dotted(ones.func) or "").endswith(".ones") and
            [_code(a.value) for a in positional] == [queries, length]):
        return False
    return _code(masked.targets[0].target) == scores and \
        _code(masked.value) in (f'{scores}.masked_fill(~{causal.targets[0].target.value}, float("-inf"))',
                                f"{scores}.masked_fill(~{causal.targets[0].target.value}, float('-inf'))")


def _softmax(statement: cst.BaseStatement, scores: str) -> bool:
    small = _only(statement)
    if not (isinstance(small, cst.Assign) and len(small.targets) == 1 and _code(small.targets[0].target) == scores):
        return False
    return _code(small.value) in (f"F.softmax({scores}, dim=-1)", f"torch.softmax({scores}, dim=-1)",
                                  f"torch.nn.functional.softmax({scores}, dim=-1)", f"{scores}.softmax(dim=-1)",
                                  f"{scores}.softmax(-1)")


def _values_used_right(statement: cst.CSTNode, values: str, scores: str) -> bool:
    """Every use of `values` is the right operand of `scores @ values`."""
    bad = []

    class _Find(cst.CSTVisitor):
        def visit_BinaryOperation(self, node: cst.BinaryOperation) -> bool:
            if isinstance(node.operator, cst.MatrixMultiply) and isinstance(node.right, cst.Name) and \
                    node.right.value == values and isinstance(node.left, cst.Name) and node.left.value == scores:
                return False
            return True

        def visit_Name(self, node: cst.Name) -> None:
            if node.value == values:
                bad.append(node)

        def visit_Attribute(self, a: cst.Attribute) -> bool:
            a.value.visit(self)
            return False

    statement.visit(_Find())
    return not bad
