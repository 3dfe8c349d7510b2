"""Values a step builds in host memory: CPU tensors and Python lists of ints.

Moving such a value to the device inside a captured region (`.to(x.device)`, `.cuda()`,
`.type_as(x)`), or indexing a device tensor with it, is a fresh copy of pageable host memory:
refused while a stream is captured, and CPU work that replay never redoes. This module only
answers "is this value on the host, and why?" with a reason the report can print; the rule
(GS402, rules/memory.py) decides what to report. Anything without such evidence is None:
a guess never becomes a report.

Evidence, in the same function and in source order (the walker records locals as it binds
them, `FileWalker._bind`):
- a torch factory called without `device=` (`torch.arange(w)`, `torch.randn(b, n)`,
  `torch.hamming_window(n)`), or through a parameter whose default is one
  (`window_fn=torch.hamming_window` ... `window_fn(n)`);
- a copy to the host (`probs.cpu()`, `t.to("cpu")`);
- ops that keep the tensor where it is (`idx[..., None]`, `idx.unsqueeze(1)`, `rand.topk(k).indices`,
  `idx.long()`, `.to(torch.float32)`, `idx + 1`) applied to such a value;
- a local bound to any of these;
- what a loop over a data loader gives (`for i, (images, labels) in enumerate(train_loader)`: an
  iterable named `...loader`, or a local bound to `torch.utils.data.DataLoader(...)`), what
  `next(loader)` (or `next(iter(loader))`) draws from one, and the parts unpacked from these
  (`images, texts = batch`);
- a local bound to a list of Python ints (`[0, 2]`, `list(range(n))`, `[b * k + i for i in
  range(k)]`, `[i for i, name in enumerate(names) if ...]`, or `[]` that the function only
  `.append`s/`.extend`s with such values), or to `list(...)` of anything (its items make an index
  tensor on the host whatever they are);
- an entry of a local list the function fills only with such lists (`rows[i]`).
"""

from __future__ import annotations

import libcst as cst

from graphsafe.analyzer.names import dotted

# torch factories that make a CPU tensor unless given a device
HOST_FACTORIES = frozenset(
    """zeros ones empty full rand randn randint randperm arange linspace logspace eye
    hann_window hamming_window blackman_window bartlett_window kaiser_window""".split()
)
# tensor methods whose result lives where the receiver does
_MOVES = frozenset("to cuda cpu type_as pin_memory share_memory_".split())
# methods and attributes that give no tensor (a number, a shape, ...)
_NOT_TENSOR = frozenset("item tolist size dim numel numpy shape dtype device ndim".split())
_DTYPES = frozenset(
    """float float16 float32 float64 half bfloat16 double int int8 int16 int32 int64 long short
    uint8 bool complex64 complex128""".split()
)
_LIST_GROWERS = ("append", "extend")
_FIELDS = frozenset("indices values T mT".split())
# what `record` notes a local holds
TENSOR, INT_LIST, EMPTY_LIST, LOADER = "tensor", "int-list", "empty-list", "loader"
# a tensor copied to the host (`idx.cpu()`): in host memory, but an index made so is meant for a
# host tensor (`host_feats[ids.cpu()]`), so host_index does not count it
HOST_COPY = "host-copy"
_DATA_LOADERS = frozenset({"torch.utils.data.DataLoader", "torch.utils.data.dataloader.DataLoader"})


def _keyword(call: cst.Call, name: str) -> cst.Arg | None:
    return next((a for a in call.args if a.keyword is not None and a.keyword.value == name), None)


def is_cpu(expr: cst.BaseExpression) -> bool:
    """`"cpu"`, `"cpu:0"`: a literal naming the host."""
    return type(expr) is cst.SimpleString and str(expr.evaluated_value).split(":")[0] == "cpu"


def _stays_on_host(call: cst.Call) -> bool:
    """No `device=` (or the CPU) and no pinned memory: the result is pageable host memory."""
    device = _keyword(call, "device")
    pinned = _keyword(call, "pin_memory")
    if pinned is not None and not (type(pinned.value) is cst.Name and pinned.value.value == "False"):
        return False
    return _keyword(call, "out") is None and (device is None or is_cpu(device.value))


def _default_of(function: cst.FunctionDef | None, name: str) -> cst.BaseExpression | None:
    """The default value of parameter `name` of `function`, if it has one."""
    if function is None:
        return None
    params = function.params
    for param in (*params.params, *params.kwonly_params, *params.posonly_params):
        if param.name.value == name:
            return param.default
    return None


def factory_name(call: cst.Call, ctx) -> str | None:
    """The torch factory `call` runs: `torch.arange` for `torch.arange(n)`, and for `window_fn(n)`
    where `window_fn` is a parameter defaulting to `torch.hamming_window`, that default."""
    func = call.func
    name = ctx.resolve(func) or ""
    if type(func) is cst.Name and func.value in ctx.params:
        default = _default_of(ctx.function_node, func.value)
        name = (ctx.resolve(default) or "") if default is not None else ""
    namespace, _, tail = name.rpartition(".")
    if namespace == "torch" and tail in HOST_FACTORIES:
        return name
    return None


def _is_dtype(expr: cst.BaseExpression, ctx) -> bool:
    name = ctx.resolve(expr) or ""
    namespace, _, tail = name.rpartition(".")
    return namespace == "torch" and tail in _DTYPES


def origin(expr: cst.BaseExpression, ctx, names: dict[str, tuple[str, str]], copies: bool = True) -> str | None:
    """Why `expr` is a CPU tensor ("`w` is built by `torch.arange` without device=", or for the
    factory call itself "built by ..."), else None. `names`: what `record` noted so far.
    `copies=False`: not counting copies made by `.cpu()` (HOST_COPY)."""
    tp = type(expr)
    if tp is cst.Name:
        held = names.get(expr.value)
        return held[1] if held is not None and (held[0] == TENSOR or copies and held[0] == HOST_COPY) else None
    if tp is cst.Subscript:
        return origin(expr.value, ctx, names, copies)  # rows of a host tensor are on the host
    if tp is cst.Attribute:
        # `rand.topk(k).indices`: a field of a host op's result; `.T`, `.mT`: views
        return origin(expr.value, ctx, names, copies) if expr.attr.value in _FIELDS else None
    if tp is cst.BinaryOperation:
        left, right = origin(expr.left, ctx, names, copies), origin(expr.right, ctx, names, copies)
        if left is not None and (right is not None or ctx.kind(expr.right, note=False).not_tensor):
            return left
        if right is not None and ctx.kind(expr.left, note=False).not_tensor:
            return right
        return None
    if tp is not cst.Call:
        return None
    func = expr.func
    resolved = ctx.resolve(func) or ""
    if type(func) is cst.Attribute and not resolved.startswith("torch."):
        method = func.attr.value
        if method == "cpu" or method == "to" and _to_cpu(expr):
            return f"copied to the host by `.{method}({'' if method == 'cpu' else '...'})`" if copies else None
        if method in _NOT_TENSOR or method in _MOVES and not (method == "to" and dtype_only(expr, ctx)):
            return None  # `.to(torch.float32)` keeps the device; `.to(d)`, `.cuda()` may move it
        return origin(func.value, ctx, names, copies)
    name = factory_name(expr, ctx)
    if name is not None and _stays_on_host(expr):
        if not resolved.startswith("torch."):  # `window_fn(n)`: a parameter defaulting to the factory
            return f"built by `{resolved}` (default `{name}`) without device="
        return f"built by `{name}` without device="
    # `torch.tensor(data)` and friends are not followed: GS402 reports them where they are built
    return None


def _to_cpu(call: cst.Call) -> bool:
    """`.to("cpu")`, `.to(device="cpu")`, `.to(torch.device("cpu"))`."""
    device = _keyword(call, "device")
    if device is None:
        device = next((a for a in call.args if a.keyword is None), None)
    if device is None:
        return False
    value = device.value
    if type(value) is cst.Call and value.args and (dotted(value.func) or "").endswith("device"):
        value = value.args[0].value
    return is_cpu(value)


def dtype_only(call: cst.Call, ctx) -> bool:
    """`.to(torch.float32)`, `.to(dtype=d)`: a conversion on the same device."""
    return all(a.keyword is not None and a.keyword.value != "device" or a.keyword is None and _is_dtype(a.value, ctx)
               for a in call.args)


def _int_valued(expr: cst.BaseExpression) -> bool:
    """Syntax that gives a Python int: a literal, or arithmetic of names and literals."""
    tp = type(expr)
    if tp is cst.Integer:
        return True
    if tp is cst.UnaryOperation:
        return _int_valued(expr.expression)
    if tp is cst.BinaryOperation:
        return type(expr.operator) is not cst.Divide and all(
            type(e) in (cst.Name, cst.Integer) or _int_valued(e) for e in (expr.left, expr.right))
    return False


def _is_range(expr: cst.BaseExpression) -> bool:
    return type(expr) is cst.Call and type(expr.func) is cst.Name and expr.func.value == "range"


def _ints_from_range(comp: cst.BaseExpression) -> bool:
    """`[b * k + i for i in range(k)]`: ints computed from range's ints (and other names)."""
    if type(comp) not in (cst.ListComp, cst.GeneratorExp) or comp.for_in.inner_for_in is not None:
        return False
    loop = comp.for_in
    elt = comp.elt
    if _is_enumerate(loop.iter) and type(loop.target) is cst.Tuple and loop.target.elements:
        # `[index for index, item in enumerate(names) if item == name]`: enumerate's counts
        first = loop.target.elements[0].value
        return type(first) is cst.Name and type(elt) is cst.Name and elt.value == first.value
    return (_is_range(loop.iter) and type(loop.target) is cst.Name
            and (_int_valued(elt) or (type(elt) is cst.Name and elt.value == loop.target.value)))


def _is_enumerate(expr: cst.BaseExpression) -> bool:
    return type(expr) is cst.Call and type(expr.func) is cst.Name and expr.func.value == "enumerate"


def int_list(value: cst.BaseExpression) -> str | None:
    """Why `value` is a Python list of ints (the reason to print), or None."""
    tp = type(value)
    if tp is cst.List:
        if not value.elements:
            return "a Python list"  # only with what is appended to it (see list_grows_with_ints)
        if all(type(e) is cst.Element and _int_valued(e.value) for e in value.elements):
            return "a Python list of ints"
        return None
    if tp is cst.ListComp and _ints_from_range(value):
        return "a Python list of ints"
    if (tp is cst.Call and type(value.func) is cst.Name and value.func.value == "list"
            and len(value.args) == 1 and not value.args[0].star):
        # `list(range(n))`; `list(active_units)`: whatever its items, indexing with the list
        # builds an index tensor on the host
        return "a Python list of ints" if _is_range(value.args[0].value) else "a Python list (`list(...)`)"
    return None


def _grows_with_ints(function: cst.CSTNode, name: str) -> bool | None:
    """Over the whole function: True when `name.append(...)`/`name.extend(...)` add only ints
    (at least one such call), False when any adds something else, None when there are none."""
    found: bool | None = None
    stack: list[cst.CSTNode] = [function]
    while stack:
        node = stack.pop()
        if (type(node) is cst.Call and type(node.func) is cst.Attribute and type(node.func.value) is cst.Name
                and node.func.value.value == name and node.func.attr.value in _LIST_GROWERS):
            if len(node.args) != 1:
                return False
            arg = node.args[0].value
            ok = _int_valued(arg) if node.func.attr.value == "append" else (
                _ints_from_range(arg) or _is_range(arg) or int_list(arg) == "a Python list of ints")
            if not ok:
                return False
            found = True
        stack.extend(node.children)
    return found


def _grows_with_int_lists(function: cst.CSTNode, name: str) -> bool:
    """Over the whole function: `name.append(...)` adds only lists of ints (at least once)."""
    found = False
    stack: list[cst.CSTNode] = [function]
    while stack:
        node = stack.pop()
        if (type(node) is cst.Call and type(node.func) is cst.Attribute and type(node.func.value) is cst.Name
                and node.func.value.value == name and node.func.attr.value in _LIST_GROWERS):
            if node.func.attr.value != "append" or len(node.args) != 1 or int_list(node.args[0].value) is None:
                return False
            found = True
        stack.extend(node.children)
    return found


def host_index(expr: cst.BaseExpression, ctx, names: dict[str, tuple[str, str]]) -> str | None:
    """Why `expr`, used as an index, is host memory the indexing copies to the device: a CPU
    tensor, or a local holding a Python list of ints. None otherwise."""
    held = names.get(expr.value) if type(expr) is cst.Name else None
    if held is not None and held[0] == EMPTY_LIST:  # `idx = []`: what the function puts in it decides
        function = ctx.function_node
        if function is None or not _grows_with_ints(function.body, expr.value):
            return None
        return f"`{expr.value}` is a Python list of ints"
    if held is not None and held[0] == INT_LIST:
        return held[1]
    if (type(expr) is cst.Subscript and type(expr.value) is cst.Name and ctx.function_node is not None
            and (names.get(expr.value.value) or ("",))[0] == EMPTY_LIST
            and _grows_with_int_lists(ctx.function_node.body, expr.value.value)):
        # `x[sub_batch_indices_list[i]]` with each entry appended as a list of ints
        return f"`{expr.value.value}` holds Python lists of ints"
    if type(expr) is not cst.List and int_list(expr) == "a Python list of ints":  # `x[list(range(n))]`
        return "a Python list of ints"
    return origin(expr, ctx, names, copies=False)


def record(names: dict[str, tuple[str, str]], target: str, value: cst.BaseExpression | None, ctx) -> None:
    """Note what the local `target` now holds (called as the walker binds it, in source order)."""
    reason = origin(value, ctx, names) if value is not None else None
    if reason is not None:
        tag = TENSOR if origin(value, ctx, names, copies=False) is not None else HOST_COPY
        names[target] = (tag, reason if reason.startswith("`") else f"`{target}` is {reason}")
        return
    if type(value) is cst.Call and ctx.resolve(value.func) in _DATA_LOADERS:
        names[target] = (LOADER, "")
        return
    drawn = drawn_batch(value, names) if value is not None else None
    if drawn is not None:  # `batch = next(self.replay_loader)`
        names[target] = (TENSOR, f"`{target}` {drawn}")
        return
    wrapped = _wrapped_loader(value, names) if value is not None else None
    if wrapped is not None:  # `pbar = TQDM(enumerate(self.train_loader), total=nb)`
        names[target] = (LOADER, _ENUMERATED if wrapped[1] else "")
        return
    listed = int_list(value) if value is not None else None
    if listed is None:
        names.pop(target, None)
    elif listed == "a Python list":
        names[target] = (EMPTY_LIST, "")
    else:
        names[target] = (INT_LIST, f"`{target}` is {listed}")


def _loader_name(iterable: cst.BaseExpression, names: dict[str, tuple[str, str]]) -> str | None:
    """`train_loader`, `data['train'].dataloader`, or a local bound to a DataLoader: its name."""
    last = iterable.attr.value if type(iterable) is cst.Attribute else iterable.value if type(iterable) is cst.Name else ""
    held = names.get(last) if type(iterable) is cst.Name else None
    if last.lower().endswith("loader") or (held is not None and held[0] == LOADER):
        return last
    return None


_ENUMERATED = "enumerate"  # a local holding an enumerated loader yields (index, batch)
# progress bars around a loader (tqdm's, rich's `track`, ultralytics' `TQDM`): they yield what it yields
_PROGRESS = frozenset({"tqdm", "TQDM", "track"})


def _wrapped_loader(iterable: cst.BaseExpression, names: dict[str, tuple[str, str]]) -> tuple[str, bool] | None:
    """The loader an iterable goes back to through `enumerate(...)`, progress bars and locals bound
    to those (`pbar = TQDM(enumerate(loader))`), and whether it is enumerated; None otherwise."""
    enumerated = False
    for _ in range(4):
        if type(iterable) is cst.Call and iterable.args and iterable.args[0].keyword is None and not iterable.args[0].star:
            func = iterable.func
            tail = func.attr.value if type(func) is cst.Attribute else func.value if type(func) is cst.Name else ""
            if tail == "enumerate" and not enumerated:
                enumerated, iterable = True, iterable.args[0].value
                continue
            if tail in _PROGRESS:
                iterable = iterable.args[0].value
                continue
            return None
        break
    held = names.get(iterable.value) if type(iterable) is cst.Name else None
    if held is not None and held[0] == LOADER and held[1] == _ENUMERATED:
        return (None, True) if enumerated else (iterable.value, True)
    loader = _loader_name(iterable, names)
    return (loader, enumerated) if loader is not None else None


def batch_target(names: dict[str, tuple[str, str]], target: cst.BaseExpression,
                 iterable: cst.BaseExpression) -> tuple[cst.BaseExpression | None, str | None]:
    """The part of a loop's target that receives a data loader's batch (`batch` of `for i, batch
    in enumerate(loader)`), and the loader's name; (None, None) where the loop is over no loader."""
    wrapped = _wrapped_loader(iterable, names)
    if wrapped is None:
        return None, None
    loader, enumerated = wrapped
    if enumerated:
        if type(target) not in (cst.Tuple, cst.List) or len(target.elements) != 2:
            return None, None
        target = target.elements[1].value
    return target, loader


def record_loop(names: dict[str, tuple[str, str]], target: cst.BaseExpression, iterable: cst.BaseExpression) -> None:
    """`for batch in loader` / `for i, (x, y) in enumerate(loader)`: a data loader yields batches
    in host memory (collated on the CPU, pinned or not): note the names that hold them."""
    target, loader = batch_target(names, target, iterable)
    if target is None:
        return
    if loader is not None:
        for name in _names_in(target):
            names[name] = (TENSOR, f"`{name}` comes from iterating `{loader}` (a data loader's batches are in host memory)")


def drawn_batch(value: cst.BaseExpression, names: dict[str, tuple[str, str]]) -> str | None:
    """`next(self.replay_loader)` or `next(iter(loader))`: why the value is a host batch."""
    if (type(value) is not cst.Call or type(value.func) is not cst.Name or value.func.value != "next"
            or len(value.args) != 1 or value.args[0].star):
        return None
    iterable = value.args[0].value
    if (type(iterable) is cst.Call and type(iterable.func) is cst.Name and iterable.func.value == "iter"
            and len(iterable.args) == 1):
        iterable = iterable.args[0].value
    loader = _loader_name(iterable, names)
    return f"is drawn from `{loader}` (a data loader's batches are in host memory)" if loader else None


def record_unpacked(names: dict[str, tuple[str, str]], target: cst.BaseExpression, value: cst.BaseExpression) -> None:
    """`images, texts = batch` with `batch` a host batch: its parts are host tensors too; so are
    those of `x, y = next(loader)`."""
    drawn = drawn_batch(value, names)
    if drawn is not None:
        for name in _names_in(target):
            names[name] = (TENSOR, f"`{name}` {drawn}")
        return
    held = names.get(value.value) if type(value) is cst.Name else None
    if held is None or held[0] != TENSOR:
        return
    rest = held[1].split("` ", 1)[1]  # "`batch` comes from ..." → "comes from ..."
    for name in _names_in(target):
        names[name] = (TENSOR, f"`{name}` is unpacked from `{value.value}`, which {rest}")


def _names_in(target: cst.BaseExpression) -> list[str]:
    if type(target) is cst.Name:
        return [target.value]
    if type(target) in (cst.Tuple, cst.List):
        return [n for e in target.elements for n in _names_in(e.value)]
    return []
