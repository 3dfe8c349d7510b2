"""Sync-free rules (GS1xx): host/device synchronizations inside a captured region."""

from __future__ import annotations

import functools
import re

import libcst as cst

from graphsafe.analyzer import tensorness as T
from graphsafe.analyzer.nodes import own_nodes
from graphsafe.model import Consequence, Example, Principle
from graphsafe.rewriters.device_log import append_item_fix, attribute_item_fix
from graphsafe.rewriters.edits import enclosing_statement_line, removal_fix
from graphsafe.rewriters import keep_tensor
from graphsafe.rewriters.keep_tensor import operand_fix
from graphsafe.rewriters.nonfinite import nonfinite_check_fix
from graphsafe.rewriters.repeat_interleave import output_size_fix
from graphsafe.rules.base import Callees, Rule
from graphsafe.rules.syntax import is_true as _is_true
from graphsafe.rules.syntax import keyword as _keyword

LOG_METHODS = frozenset("debug info warning warn error exception critical log".split())


def logging_statement(ctx):
    """The current statement line if it is only a print/logging call (removing it is the fix)."""
    line = ctx.statement
    if not isinstance(line, cst.SimpleStatementLine) or len(line.body) != 1:
        return None
    small = line.body[0]
    if not (isinstance(small, cst.Expr) and isinstance(small.value, cst.Call)):
        return None
    func = small.value.func
    if isinstance(func, cst.Name) and func.value == "print":
        return line
    if isinstance(func, cst.Attribute) and func.attr.value in LOG_METHODS:
        return line
    if (ctx.resolve(func) or "") in ("wandb.log",):
        return line
    return None


def log_removal_fix(ctx):
    line = logging_statement(ctx)
    if line is None:
        return None
    return removal_fix(ctx, line, "Remove the logging from the captured region (log the static output after replay)")


def _method_call(node: cst.Call, names) -> str | None:
    func = node.func
    if type(func) is cst.Attribute and func.attr.value in names:  # not isinstance: ABCMeta is slow
        return func.attr.value
    return None


class _SyncRule(Rule):
    principle = Principle.SYNC_FREE
    consequence = Consequence.CAPTURE_FAILS


class ItemSync(_SyncRule):
    """## What it does
    Flags `.item()` on a tensor inside a captured region. A tensor that every caller has
    already copied to the host is not flagged.

    ## Why is this bad?
    `.item()` copies one value to the host and waits for the GPU to finish. Inside stream
    capture that wait is not allowed (cudaErrorStreamCaptureUnsupported), so capture fails;
    outside capture it stalls the CPU until the queue drains.

    ## Example
    ```python
    loss = F.cross_entropy(logits, y)
    total += loss.item()
    ```

    ## Use instead
    Keep the value on the device and read it outside the region:
    ```python
    total_loss.add_(loss.detach())
    ```

    ## Fix safety
    When the value is the right operand of `+`, `-` or `*` with a tensor, the fix keeps the
    tensor: `x * t.item()` → `x * t.reshape(())` (a 0-dim tensor broadcasts like a number). The
    kernel converts the scalar to the operation's math type either way, so values are bitwise
    equal when the other operand is a float32 or float64 tensor with at least one dimension
    (CPU and CUDA, tested with random values, NaN and inf). They differ with a bfloat16/float16
    operand on CUDA (the 0-dim device tensor is rounded to the operand's dtype first; on CPU
    they are equal), and the dtype differs when the other operand is an integer or bool tensor
    (a Python float promotes it to the default dtype, a 0-dim float64 tensor to float64) or a
    0-dim tensor of another floating dtype. The analyzer does not know dtypes or devices, so
    this fix is unsafe. `x / v.item()` (CUDA multiplies by `1 / v` for a number), the value on
    the left (`v.item() * x`: a float16 CPU kernel rounds a tensor passed first) and exponents
    get no fix. `v = t.item()` whose every read is such an operand becomes `v = t.reshape(())`.
    When `.item()` feeds a print or logging call, the fix removes that call from the region
    (unsafe: log the graph's static output after replay instead). When it is only appended
    to a list (`losses.append(loss.item())`), the fix appends `loss.detach()` instead
    (unsafe: the list holds 0-dim device tensors with the same values, read them with
    `torch.stack(losses).tolist()` after the loop; sums of the list are then computed in the
    tensor's dtype, and printing an entry shows `tensor(...)`). Stored in an attribute
    (`self.last = loss.item()`), the fix stores `loss.detach()` (unsafe: the attribute holds a
    0-dim device tensor; in a captured step it then shows each replay's value).
    """

    code = "GS101"
    name = "item-sync"
    summary = "`.item()` copies a tensor to the host and waits for the GPU"
    message = "`.item()` copies a tensor to the host and waits for the GPU: {consequence}"
    valid = ("n = x.shape[0]", "s = x.sum()", Example("v = x.item()", region=False))
    invalid = (
        "v = x.item()",
        Example("loss = F.mse_loss(x, y)\nprint(loss.item())", fixed="loss = F.mse_loss(x, y)"),
        Example("s = y.sum()\nz = x * s.item()", fixed="s = y.sum()\nz = x * s.reshape(())"),
        Example("z = x.float() - y.sum().item()", fixed="z = x.float() - y.sum()"),
        "z = y.sum().item() * x",
        Example("s = y.sum().item()\nz = x * s\nw = z - s", fixed="s = y.sum()\nz = x * s\nw = z - s"),
        "s = y.sum().item()\nz = x * s\nreturn s",  # returned to Python: no fix
        Example("losses = []\nlosses.append(x.sum().item())", fixed="losses = []\nlosses.append(x.sum().detach())"),
        Example("self.last = x.mean().item()", fixed="self.last = x.mean().detach()"),
    )
    fixable = True

    def __init__(self) -> None:
        self.bindings = keep_tensor.ScalarBindings()  # `v = t.item()`: decided at the end of the file

    def visit_BinaryOperation(self, node: cst.BinaryOperation, ctx) -> None:
        keep_tensor.note_safe_read(node, ctx, self.bindings)
        # `x * loss.item()`: the tensor itself gives the same values without leaving the GPU.
        for operand in (node.left, node.right):
            if self._is_item(operand, ctx):
                fix = operand_fix(node, operand, ctx)
                if fix is not None:
                    ctx.report(self, operand, fix=fix)

    calls = Callees({"item"})

    def visit_Call(self, node: cst.Call, ctx) -> None:
        if self._is_item(node, ctx):
            if ctx.first_report("GS101-binding", node) and keep_tensor.note_binding(node, ctx, self.bindings):
                return
            ctx.report(self, node, fix=log_removal_fix(ctx) or append_item_fix(node, ctx) or attribute_item_fix(node, ctx),
                       condition=ctx.host_condition(node.func.value))

    def end_module(self, ctx) -> None:
        for binding in self.bindings.bindings:
            ctx.report(self, binding.call, fix=keep_tensor.binding_fix(binding, ctx, self.bindings), at=binding.place)

    @staticmethod
    def _is_item(node, ctx) -> bool:
        return (
            isinstance(node, cst.Call) and _method_call(node, ("item",)) is not None and not node.args
            and not ctx.kind(node.func.value).not_tensor
        )


class TolistSync(_SyncRule):
    """## What it does
    Flags `.tolist()` on a tensor inside a captured region. A tensor that every caller has
    already copied to the host is not flagged.

    ## Why is this bad?
    `.tolist()` copies the whole tensor to host memory and waits for the GPU; capture fails.

    ## Example
    ```python
    tokens = next_ids.tolist()
    ```

    ## Use instead
    Keep the tensor on the device inside the region and convert it after replay.

    ## Fix safety
    No automatic fix: where the list is used decides what the code should become.

    ## Precise semantics
    A parameter (or a view of one) that every caller fills with a host copy (`t.cpu()`,
    `t.to("cpu")`) is host memory: reading it is no sync (the same holds for `.item()`, GS101,
    and `int()`/`float()`, GS105). A local built in the region from host data without a device
    (`torch.tensor([...]).tolist()`) is still flagged: it syncs nothing on the default CPU
    device, but `torch.set_default_device("cuda")` makes it a device tensor, and either way its
    values are the capture's (GS402).
    """

    code = "GS102"
    name = "tolist-sync"
    summary = "`.tolist()` copies a tensor to the host and waits for the GPU"
    message = "`.tolist()` copies a tensor to the host and waits for the GPU: {consequence}"
    valid = (
        "ids = x.argmax(-1)", Example("ids = x.tolist()", region=False),
        # a helper that every caller hands a host copy (`t.cpu()`, reported there as GS103)
        Example("class Streamer:\n    def put(self, value):\n        return value[0].tolist()\n"
                "class Decoder:\n    def __init__(self):\n        self.streamer = Streamer()\n"
                "    def step(self, x: torch.Tensor):  # graphsafe: region\n        self.streamer.put(x.argmax(-1).cpu())",
                module=True),
    )
    invalid = ("ids = x.argmax(-1).tolist()",)

    calls = Callees({"tolist"})

    def visit_Call(self, node: cst.Call, ctx) -> None:
        if _method_call(node, ("tolist",)) and not ctx.kind(node.func.value).not_tensor:
            ctx.report(self, node, condition=ctx.host_condition(node.func.value))


class HostCopy(_SyncRule):
    """## What it does
    Flags copying a tensor to the host inside a captured region: `.cpu()`, `.numpy()`,
    `.to("cpu")` and `.to(device="cpu")` (a `torch.device("cpu")` included).

    ## Why is this bad?
    A device-to-host copy into pageable memory waits for the GPU and is not allowed while a
    stream is captured: capture fails. `.numpy()` additionally needs the data on the host.

    ## Example
    ```python
    probs = logits.softmax(-1).cpu()
    ```

    ## Use instead
    Keep the data on the device inside the region; copy the graph's static output to the host
    after `graph.replay()`.

    ## Fix safety
    No automatic fix.
    """

    code = "GS103"
    name = "host-copy"
    summary = "device-to-host copy (`.cpu()`, `.numpy()`, `.to(\"cpu\")`)"
    message = "`{what}` copies a tensor to the host and waits for the GPU: {consequence}"
    valid = ('y = x.to("cuda")', "y = x.to(torch.float16)", Example("y = x.cpu()", region=False))
    invalid = ("y = x.cpu()", "a = x.numpy()", 'y = x.to("cpu")', 'y = x.to(device="cpu")',
               'y = x.to(torch.device("cpu"))')

    calls = Callees({"cpu", "numpy", "to"})

    def visit_Call(self, node: cst.Call, ctx) -> None:
        method = _method_call(node, ("cpu", "numpy", "to"))
        if method is None or ctx.kind(node.func.value).not_tensor:
            return
        if method in ("cpu", "numpy"):
            ctx.report(self, node, what=f".{method}()")
            return
        for arg in node.args:
            if arg.keyword is None or arg.keyword.value == "device":
                if _is_cpu_device(arg.value, ctx):
                    ctx.report(self, node, what='.to("cpu")')
                    return


SIZE_TAKING_FACTORIES = frozenset("arange zeros ones empty full rand randn randint randperm linspace logspace eye".split())
SIZE_TAKING_METHODS = frozenset("new_zeros new_ones new_empty new_full".split())
# torch functions and tensor methods whose keyword takes a Python number (a Scalar in torch's
# schema); `add`'s `alpha`, `addcmul`'s `value`
_SCALAR_KEYWORDS = {
    **{name: "alpha" for base in ("add", "sub") for name in (base, base + "_", f"_foreach_{base}", f"_foreach_{base}_")},
    **{name: "value" for base in ("addcmul", "addcdiv") for name in (base, base + "_", f"_foreach_{base}", f"_foreach_{base}_")},
}


def _is_cpu_device(expr: cst.BaseExpression, ctx) -> bool:
    if isinstance(expr, cst.SimpleString):
        value = expr.evaluated_value
        return isinstance(value, str) and value.split(":")[0] == "cpu"
    if isinstance(expr, cst.Call) and ctx.resolve(expr.func) == "torch.device" and expr.args:
        return _is_cpu_device(expr.args[0].value, ctx)
    return False


class TensorFormat(_SyncRule):
    """## What it does
    Flags printing or formatting a tensor inside a captured region: `print(t)`, `f"{t}"`,
    `str(t)`, `repr(t)`, `format(t)`, `"%s" % t`, `"{}".format(t)`.

    ## Why is this bad?
    Turning a tensor into text copies its values to the host and waits for the GPU: capture
    fails. Even when it did not, it would print the values seen at capture time only once.

    ## Example
    ```python
    print(f"loss {loss:.3f}")
    ```

    ## Use instead
    Log after replay, from the graph's static output tensor.

    ## Fix safety
    When the formatting is part of a print or logging call, the fix removes that call from the
    region; that changes what the program shows, so it is unsafe.

    ## Precise semantics
    Not reported: a tensor known to be in host memory (built without `device=`, or copied there
    by `.cpu()`: analyzer/host_resident.py), whose text needs no wait; and formatting in an
    `assert`'s message, which runs only when the assertion fails (GS201 judges the test).
    """
    fixable = True

    code = "GS104"
    name = "tensor-format"
    summary = "printing or formatting a tensor copies it to the host"
    message = "{what} of a tensor copies it to the host and waits for the GPU: {consequence}"
    valid = ('print("step")', 'print(f"shape {x.shape}")', 'msg = f"{n}"')
    invalid = (Example("print(x)\ny = x * 2", fixed="y = x * 2"),
               Example("if n > 0:\n    print(x)", fixed="if n > 0:\n    pass"), 'msg = f"loss {x:.3f}"', "s = str(x)",
               's = "%s" % x', 's = "{}".format(x)')

    calls = Callees({"print", "str", "repr", "format"})

    def visit_Call(self, node: cst.Call, ctx) -> None:
        func = node.func
        if isinstance(func, cst.Name) and func.value in ("print", "str", "repr", "format"):
            if any(arg.keyword is None and _device_tensor(arg.value, ctx) for arg in node.args):
                ctx.report(self, node, fix=log_removal_fix(ctx), what=f"`{func.value}()`")
        elif isinstance(func, cst.Attribute) and func.attr.value == "format" and isinstance(func.value, cst.SimpleString):
            if any(_device_tensor(arg.value, ctx) for arg in node.args) and not _in_assert_message(node, ctx):
                ctx.report(self, node, fix=log_removal_fix(ctx), what="`str.format()`")

    def visit_FormattedStringExpression(self, node: cst.FormattedStringExpression, ctx) -> None:
        if _device_tensor(node.expression, ctx) and not _in_assert_message(node, ctx):
            ctx.report(self, node, fix=log_removal_fix(ctx), what="an f-string")

    def visit_BinaryOperation(self, node: cst.BinaryOperation, ctx) -> None:
        if isinstance(node.operator, cst.Modulo) and isinstance(node.left, (cst.SimpleString, cst.ConcatenatedString)):
            right = node.right
            values = [e.value for e in right.elements] if isinstance(right, cst.Tuple) else [right]
            if any(_device_tensor(v, ctx) for v in values) and not _in_assert_message(node, ctx):
                ctx.report(self, node, what="`%` formatting")


def _device_tensor(expr: cst.BaseExpression, ctx) -> bool:
    """A tensor not known to be in host memory (formatting a CPU tensor waits for nothing)."""
    return ctx.kind(expr).is_tensor and ctx.host_origin(expr) is None


def _in_assert_message(node: cst.CSTNode, ctx) -> bool:
    """Is `node` inside an `assert`'s message? It is formatted only when the assertion fails."""
    statement = ctx.statement
    if type(statement) is not cst.SimpleStatementLine:
        return False
    return any(type(small) is cst.Assert and small.msg is not None
               and any(n is node for n in own_nodes(small.msg)) for small in statement.body)


class TensorToPython(_SyncRule):
    """## What it does
    Flags converting a tensor to a Python number: `bool(t)`, `int(t)`, `float(t)`, `range(t)`,
    a tensor slice bound (`x[:n]`), a tensor in a factory's size (`torch.zeros(b, n)`), and
    `torch.tensor(...)` of a list of tensors (`torch.tensor([loss, kl])`).

    ## Why is this bad?
    The conversion reads the value on the host, which waits for the GPU: capture fails.
    A tensor slice bound also makes the output shape depend on data.

    ## Example
    ```python
    n = int(lengths.max())
    y = x[:, :n]
    ```

    ## Use instead
    Keep shapes static: pad to a fixed size and mask, or pass the bound as a Python int
    from outside the region.

    ## Fix safety
    `float(t)` as the right operand of `+`, `-` or `*` with a tensor keeps the tensor
    (`x * float(t)` → `x * t.reshape(())`), with the same conditions as GS101's fix (unsafe:
    equal values for float32/float64 operands, but not for bfloat16/float16 ones on CUDA, and
    the dtype differs for an integer/bool operand or a 0-dim
    operand of another floating dtype). `int(t)` and `bool(t)` get no fix: `int()` truncates a
    float, and both change the result's dtype category.

    ## Precise semantics
    Sizes: any positional argument of `torch.arange/zeros/ones/empty/full/rand/randn/randint/
    randperm/linspace/logspace/eye`, and the size of `x.new_zeros/new_ones/new_empty/new_full`,
    that is a tensor or a tuple or list (spread or not) with a tensor in it, written there or
    bound once in the function (`shape = (b, n)`; `torch.zeros(*shape)`). A shape joined to
    another (`torch.Size(s) + x.shape`) is a tuple. `torch.tensor(...)`/`torch.as_tensor(...)`
    of a list or tuple of tensors (or the parts of `torch.split`) reads each element's value.

    Scalar arguments: torch's `alpha=` of `add`/`sub` (and their in-place and `_foreach_`
    forms), `value=` of `addcmul`/`addcdiv`, and the fill value of `torch.full` and
    `x.new_full` take a Python number; a tensor given there is read as one (`alpha=self.rtol`
    with `rtol` a registered buffer).
    """
    fixable = True

    code = "GS105"
    name = "tensor-to-python"
    summary = "`bool/int/float()` of a tensor, or a tensor as a slice/range bound"
    message = "{what} reads a tensor's value on the host and waits for the GPU: {consequence}"
    valid = ("n = int(x.shape[0])", "k = x.size(-1)\nz = x[:, :k]", "z = x[0]",
             "shape = (x.shape[0], 4)\nz = x.new_zeros(shape)", "z = x.new_full((2, 3), 0.5)",
             # a shape joined to another is a tuple, whatever `numel()` says
             "shape = torch.Size([2]) + y.batch_shape\nn = shape.numel()\nz = x.new_empty(shape + (n,))",
             "z = torch.add(x, y, alpha=0.5)", "x.addcmul_(y, y, value=1 - 0.9)")
    invalid = ("f = float(x)", "n = x.max()\nshape = (len(x), n)\nz = torch.zeros(*shape)",
               "z = x.new_zeros((3, y.sum()))", "b = bool(x.sum())", "for i in range(x.sum()):\n    pass", "n = x.sum()\nz = y[:n]",
               "idx = torch.arange(x.sum())", "stats = torch.tensor([x.mean(), x.std()])",
               Example("z = F.softmax(x, -1) * float(y.max())", fixed="z = F.softmax(x, -1) * y.max()"),
               Example("z = x + float(y)", fixed="z = x + y.reshape(())"), "z = x * int(y.sum())",
               Example("m = float(y[0])\nz = x - m", fixed="m = y[0].reshape(())\nz = x - m"),
               "m = float(y[0])\nif m > 0:\n    z = x - m",
               "layers = torch.nn.ModuleList([torch.nn.Linear(2, 2)])\nlayer = layers[x.argmax()]",
               "z = torch.add(x, y, alpha=y.max())", "x.addcmul_(y, y, value=y.mean())", "z = x.new_full((2,), y.sum())",
               "z = torch.full((2,), y.sum())")

    def __init__(self) -> None:
        self.bindings = keep_tensor.ScalarBindings()  # `v = float(t)`: decided at the end of the file

    def end_module(self, ctx) -> None:
        for binding in self.bindings.bindings:
            fix = keep_tensor.binding_fix(binding, ctx, self.bindings)
            ctx.report(self, binding.call, fix=fix, at=binding.place, what="`float()`")

    def visit_BinaryOperation(self, node: cst.BinaryOperation, ctx) -> None:
        keep_tensor.note_safe_read(node, ctx, self.bindings)
        # `x * float(t)`: keep the tensor (reported here, with its fix, before visit_Call sees it)
        for operand in (node.left, node.right):
            if isinstance(operand, cst.Call) and isinstance(operand.func, cst.Name) and operand.func.value == "float":
                fix = operand_fix(node, operand, ctx)
                if fix is not None:
                    ctx.report(self, operand, fix=fix, what="`float()`")

    calls = Callees({"bool", "int", "float", "range", "complex", "tensor", "as_tensor"} | SIZE_TAKING_FACTORIES
                    | SIZE_TAKING_METHODS | set(_SCALAR_KEYWORDS))

    def visit_Call(self, node: cst.Call, ctx) -> None:
        func = node.func
        if isinstance(func, cst.Name) and func.value in ("bool", "int", "float", "range", "complex"):
            if any(arg.keyword is None and ctx.kind(arg.value).is_tensor for arg in node.args):
                if func.value == "float" and ctx.first_report("GS105-binding", node) \
                        and keep_tensor.scalar_read(node, ctx) is not None \
                        and keep_tensor.note_binding(node, ctx, self.bindings):
                    return
                ctx.report(self, node, what=f"`{func.value}()`", condition=ctx.host_condition(node.args[0].value))
            return
        name = ctx.resolve(func) or ""
        if name in ("torch.tensor", "torch.as_tensor") and node.args and _holds_tensors(node.args[0].value, ctx):
            # `torch.tensor(kl_divergences)` of a list of tensors reads each element's value
            ctx.report(self, node, what=f"`{name}()` of a list of tensors")
            return
        scalar = _tensor_scalar_argument(node, name, ctx)
        if scalar is not None:  # reported at the argument: the tensor given where a number goes
            ctx.report(self, scalar[1], what=f"a tensor as the number {scalar[0]}")
            return
        if name.rpartition(".")[0] == "torch" and name.rpartition(".")[2] in SIZE_TAKING_FACTORIES:
            # torch.arange(n) / torch.zeros(n) with a tensor `n` reads it as a Python int, as
            # does a tensor inside the size (`torch.zeros(*shape)` with `shape = (b, n)`)
            if any(arg.keyword is None and _size_holds_tensor(arg, ctx) for arg in node.args):
                ctx.report(self, node, what=f"a tensor as the size of `{name}()`")
            return
        if (type(func) is cst.Attribute and func.attr.value in SIZE_TAKING_METHODS and node.args
                and node.args[0].keyword is None and ctx.kind(func.value).is_tensor):
            # `x.new_zeros(shape)`: the size is its first argument (`new_full`'s fill comes after)
            sizes = node.args[:1] if func.attr.value == "new_full" else node.args
            if any(arg.keyword is None and _size_holds_tensor(arg, ctx) for arg in sizes):
                ctx.report(self, node, what=f"a tensor as the size of `.{func.attr.value}()`")

    def visit_Slice(self, node: cst.Slice, ctx) -> None:
        for bound in (node.lower, node.upper, node.step):
            if bound is not None and ctx.kind(bound).is_tensor:
                ctx.report(self, bound, what="a tensor slice bound")

    def visit_Subscript(self, node: cst.Subscript, ctx) -> None:
        # A Python list/ModuleList indexed by a tensor calls __index__ on it.
        container = ctx.kind(node.value)
        if container.tag not in ("modules", "tensor-tuple"):
            return
        for element in node.slice:
            index = element.slice
            if isinstance(index, cst.Index) and ctx.kind(index.value).is_tensor:
                ctx.report(self, node, what="indexing a Python list or ModuleList with a tensor")


def _tensor_scalar_argument(node: cst.Call, name: str, ctx) -> tuple[str, cst.BaseExpression] | None:
    """Which Scalar argument of a torch call is given a tensor (`alpha=` of `torch.add`, the
    fill of `torch.full`/`x.new_full`), as the report names it, and the tensor; None where none is."""
    func = node.func
    method = func.attr.value if type(func) is cst.Attribute else ""
    on_torch = name.rpartition(".")[0] == "torch"
    if not (on_torch or (method and ctx.kind(func.value).is_tensor)):
        return None
    called = name.rpartition(".")[2] if on_torch else method
    keyword = _SCALAR_KEYWORDS.get(called)
    for arg in node.args:
        if arg.keyword is not None and arg.keyword.value in (keyword, "fill_value") and ctx.kind(arg.value).is_tensor:
            if arg.keyword.value == keyword or called in ("full", "new_full"):
                return f"`{arg.keyword.value}=` of `{called}()`", arg.value
    fill_at = 1 if called in ("full", "new_full") else None
    positional = [a for a in node.args if a.keyword is None and not a.star]
    if fill_at is not None and len(positional) > fill_at and not node.args[0].star \
            and ctx.kind(positional[fill_at].value).is_tensor:
        return f"fill value of `{called}()`", positional[fill_at].value
    return None


def _size_holds_tensor(arg: cst.Arg, ctx) -> bool:
    """Is a size argument a tensor, or a tuple or list (spread or not) with a tensor in it?"""
    if not arg.star and ctx.kind(arg.value).is_tensor:
        return True
    literal = ctx.sole_sequence_literal(arg.value)
    return literal is not None and any(
        type(e) is cst.Element and ctx.kind(e.value).is_tensor for e in literal.elements)


def _holds_tensors(data: cst.BaseExpression, ctx) -> bool:
    """A list or tuple of tensors: a literal with a tensor element, or a value known to be one
    (the parts of `torch.split`). A name the function tests with `isinstance` is not taken for
    a tensor (`elif isinstance(sigma, tuple): torch.tensor([sigma])`)."""
    if type(data) in (cst.List, cst.Tuple):
        return any(type(e) is cst.Element and ctx.kind(e.value).is_tensor
                   and not (type(e.value) is cst.Name and _isinstance_tested(e.value.value, ctx)) for e in data.elements)
    return ctx.kind(data).tag == T.TENSOR_TUPLE.tag


def _isinstance_tested(name: str, ctx) -> bool:
    """Does the enclosing function test `name` with `isinstance(name, ...)` anywhere?"""
    function = ctx.function_node
    return function is not None and any(
        type(node) is cst.Call and type(node.func) is cst.Name and node.func.value == "isinstance" and node.args
        and type(node.args[0].value) is cst.Name and node.args[0].value.value == name
        for node in own_nodes(function.body))


class ExplicitSync(_SyncRule):
    """## What it does
    Flags `torch.cuda.synchronize()`, `stream.synchronize()`, `event.synchronize()`,
    `event.query()`/`stream.query()` and `event.elapsed_time()` inside a captured region.

    ## Why is this bad?
    A synchronization is illegal while a stream is captured: capture fails. Note that
    `torch.cuda.set_sync_debug_mode` does not report these, so the run-time tracer wraps them.

    ## Example
    ```python
    torch.cuda.synchronize()
    ```

    ## Use instead
    Synchronize outside the region, after `graph.replay()`; order streams inside the region
    with `stream.wait_stream()` or events' `record()`/`wait()`.

    ## Fix safety
    `torch.cuda.synchronize()` as a statement is removed; that can change timing code around
    the region, so it is unsafe.
    """
    fixable = True

    code = "GS106"
    name = "explicit-sync"
    summary = "`torch.cuda.synchronize()`, stream/event `.synchronize()` or `.query()`"
    message = "`{what}` waits for the GPU: {consequence}"
    valid = ("s = torch.cuda.current_stream()\ns.wait_stream(s)", "e = torch.cuda.Event()\ne.record()")
    invalid = (Example("y = x * 2\ntorch.cuda.synchronize()", fixed="y = x * 2"), "e = torch.cuda.Event()\ne.synchronize()",
               "a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)\nms = a.elapsed_time(b)",
               "e = torch.cuda.Event()\ndone = e.query()", "torch.cuda.current_stream().synchronize()")

    calls = Callees({"synchronize", "device_synchronize", "query", "elapsed_time"})

    def visit_Call(self, node: cst.Call, ctx) -> None:
        name = ctx.resolve(node.func)
        if name in ("torch.cuda.synchronize", "torch.synchronize", "torch.accelerator.synchronize", "torch.cuda.device_synchronize"):
            line = enclosing_statement_line(ctx, node)
            fix = removal_fix(ctx, line, "Remove the synchronize from the captured region") if line else None
            ctx.report(self, node, fix=fix, what=f"{name}()")
            return
        method = _method_call(node, ("synchronize", "query", "elapsed_time"))
        if method is None:
            return
        receiver = ctx.kind(node.func.value)
        if method in ("query", "elapsed_time") and receiver.tag != "stream-or-event":
            return
        if method == "synchronize" and receiver.is_tensor:
            return
        ctx.report(self, node, what=f".{method}()")


_DYNAMIC_FUNCS = {
    "nonzero": None, "argwhere": None, "unique": None, "unique_consecutive": None,
    "masked_select": None, "bincount": None,
}


class DynamicShapeOp(_SyncRule):
    """## What it does
    Flags ops whose output shape depends on tensor values, inside a captured region:
    `nonzero`, `unique`, `masked_select`, one-argument `torch.where`, `bincount`, and the like.

    ## Why is this bad?
    To allocate the output, PyTorch must read a size computed on the GPU, which waits for it:
    capture fails. Even a captured size would be frozen for every replay.

    ## Example
    ```python
    idx = torch.nonzero(mask)
    ```

    ## Use instead
    Use fixed-size forms: `torch.nonzero_static(mask, size=k)`, 3-argument `torch.where`,
    `repeat_interleave(..., output_size=n)`, `one_hot(x, num_classes=c)`, or masking.

    ## Fix safety
    `repeat_interleave` gets `output_size` when it is provable: `repeats` written as a literal
    `torch.tensor([...])` of two or more non-negative ints, whose sum is the output size
    (safe: torch requires one repeat count per input row, so any input that runs gives that
    size). A one-element repeats tensor broadcasts and a repeats tensor computed elsewhere
    is not read: no fix, since a wrong `output_size` silently produces garbage.

    ## Precise semantics
    The ops: `nonzero`, `argwhere`, `unique*`, `masked_select`, one-argument `torch.where`,
    `repeat_interleave` with a tensor of repeat counts and no `output_size`, `bincount`, and
    `one_hot` without `num_classes`.

    `x.repeat_interleave(k, dim=0)` with a Python int `k` is not flagged: torch runs it as
    unsqueeze/expand/clone, whose size it knows without reading the GPU (an int repeat count is
    fixed at capture like any shape).

    Also flagged on a tensor built in the region from host data without a device
    (`torch.unique_consecutive(torch.tensor(sizes))`): on the CPU it waits for nothing, but its
    result is fixed at capture (GS402), and under `torch.set_default_device("cuda")` it is a
    device tensor that syncs.
    """

    fixable = True

    code = "GS107"
    name = "dynamic-shape-op"
    summary = "op with a data-dependent output shape (`nonzero`, `unique`, 1-arg `where`, ...)"
    message = "`{what}` has a data-dependent output shape and waits for the GPU: {consequence}"
    valid = ("i = torch.nonzero_static(x, size=4)", "z = torch.where(x > 0, x, y)",
             "r = torch.repeat_interleave(x, y, output_size=8)", "r = x.repeat_interleave(n, dim=0)",
             "r = x.repeat_interleave(4, dim=0)",
             "o = F.one_hot(x, num_classes=10)")
    invalid = ("i = torch.nonzero(x)", "i = x.nonzero()", "u = torch.unique(x)", "i = torch.where(x > 0)",
               "r = torch.repeat_interleave(x, y)", "c = torch.bincount(x)",
               Example("r = torch.repeat_interleave(x, torch.tensor([1, 0, 2]), dim=0)",
                       fixed="r = torch.repeat_interleave(x, torch.tensor([1, 0, 2]), dim=0, output_size=3)"), "o = F.one_hot(x)",
               "s = torch.masked_select(x, x > 0)")

    calls = Callees({*_DYNAMIC_FUNCS, "where", "repeat_interleave", "one_hot"})

    def visit_Call(self, node: cst.Call, ctx) -> None:
        name = ctx.resolve(node.func) or ""
        namespace, _, func = name.rpartition(".")
        what = None
        offset = 0
        if namespace in ("torch", "torch.nn.functional"):
            what = self._dynamic(func, node, 0, ctx)
        elif isinstance(node.func, cst.Attribute) and not name.startswith("torch."):
            method = node.func.attr.value
            if method in _DYNAMIC_FUNCS or method in ("repeat_interleave",):
                if not ctx.kind(node.func.value).not_tensor:
                    what, offset = self._dynamic(method, node, 1, ctx), 1
        if what:
            fix = None
            if what == "repeat_interleave":
                repeats = self._repeats(node, offset)
                fix = output_size_fix(node, repeats.value, ctx) if repeats is not None else None
            ctx.report(self, node, fix=fix, what=what)

    @staticmethod
    def _repeats(node: cst.Call, positional_offset: int) -> cst.Arg | None:
        """The `repeats` argument of `torch.repeat_interleave(x, repeats)`, `x.repeat_interleave(
        repeats)` or the one-argument `torch.repeat_interleave(repeats)`."""
        positional = [a for a in node.args if a.keyword is None and not a.star]
        index = 1 - positional_offset
        if len(positional) > index:
            return positional[index]
        if positional_offset == 0 and len(positional) == 1 and _keyword(node, "repeats") is None:
            return positional[0]
        return _keyword(node, "repeats")

    @staticmethod
    def _dynamic(func: str, node: cst.Call, positional_offset: int, ctx) -> str | None:
        positional = [a for a in node.args if a.keyword is None and not a.star]
        if func in _DYNAMIC_FUNCS:
            return func
        if func == "where" and positional_offset == 0 and len(positional) == 1 and len(node.args) == 1:
            return "torch.where(cond)"
        if func == "repeat_interleave" and _keyword(node, "output_size") is None:
            # Only a tensor of repeat counts makes the size data-dependent; an int does not.
            index = 1 - positional_offset
            repeats = positional[index] if len(positional) > index else _keyword(node, "repeats")
            if repeats is None and positional_offset == 0 and len(positional) == 1:
                return "repeat_interleave"  # torch.repeat_interleave(repeats)
            if repeats is not None and ctx.kind(repeats.value).is_tensor:
                return "repeat_interleave"
            return None
        if func == "one_hot":
            num = _keyword(node, "num_classes") or (positional[1] if len(positional) > 1 else None)
            if num is None or (isinstance(num.value, cst.UnaryOperation) and isinstance(num.value.expression, cst.Integer)):
                return "one_hot without num_classes"
        return None


class BoolMaskIndex(_SyncRule):
    """## What it does
    Flags indexing with a boolean tensor mask inside a captured region: reading `x[mask]`,
    or writing a tensor through it (`x[mask] = y`, and any `x[mask] += y`, which reads it first).
    Writing a number (`x[mask] = 0.0`) is fine.

    ## Why is this bad?
    Boolean indexing runs `nonzero` to find the selected positions: the result's size depends
    on the data, so PyTorch waits for the GPU: capture fails.

    ## Example
    ```python
    picked = logits[logits > 0]
    ```

    ## Use instead
    ```python
    picked = torch.where(logits > 0, logits, 0.0)
    ```

    ## Fix safety
    No automatic fix: the result has a different shape.

    ## Precise semantics
    `x[~m]` counts as a boolean mask for any tensor `m` (`~` is how masks are inverted), and
    so does a name bound to it (`keep = ~pad` then `h[keep]`), unless `m` is known to hold
    integers (`torch.arange(n)`, `.long()`, `.argmax(-1)`, `.indices`, `dtype=torch.long`,
    an `ids: torch.LongTensor` parameter, or a local bound to one): `~` on an integer tensor
    is a bitwise not, so `x[~idx]` gathers at fixed-size positions and does not sync.

    An index of no known kind, or a tensor of no known dtype made in the function
    (`loss_mask = mask.expand_as(loss)`), is taken for a boolean mask by its name (`mask`,
    `loss_mask`, or rows of one: `seq_mask[i]`) when what it indexes is a tensor: masks passed in
    without annotations (`def forward(self, x, mask=None)`) are read this way, and the report says
    it went by the name. A name known to hold integers or a `nonzero(as_tuple=True)` result is
    not such a mask.

    `x[mask] = value` with a scalar is fine (it becomes `masked_fill_`, no sync), a Python
    number computed on the host included (`logits[full] = torch.finfo(logits.dtype).min`);
    only a tensor value (`x[mask] = y`) runs `index_put_` with the mask and syncs.
    """

    code = "GS108"
    name = "bool-mask-index"
    summary = "reading `x[mask]` with a boolean mask"
    message = "`x[mask]` with a boolean mask{why} has a data-dependent shape and waits for the GPU: {consequence}"
    valid = ("x[x > 0] = 0.0", "z = torch.where(x > 0, x, 0.0)", "z = x[0]", "x[x > 0] = n",
             "z = x[~n]", "x[x > 0] = torch.finfo(x.dtype).min", "keep = -y\nz = x[keep]",
             "idx = torch.arange(n, device=x.device)\nz = x[~idx]", "z = x[~y.argmax(-1)]",
             "mask = x.nonzero(as_tuple=True)\nz = x[mask]",
             "mask = y.long()\nz = x.sum(0)[mask]", "z = table[mask]")
    invalid = ("z = x[x > 0]", "m = torch.isnan(x)\nz = y[m]", "z = x[~(x > 0)]", "x[x > 0] = y", "x[x > 0] += 1.0",
               "m = torch.where(x > 0, y, x)\nw = y[~m]", "keep = ~y\nz = x[keep]", "z = x[~y.bool()]",
               "z = x.sum(0)[loss_mask]", "z = x.exp()[seq_mask[0]]")

    def visit_Subscript(self, node: cst.Subscript, ctx) -> None:
        if not ctx.is_store(node):
            self._check(node, ctx)

    def visit_Assign(self, node: cst.Assign, ctx) -> None:
        # `x[mask] = tensor` is index_put_ with a boolean mask: it runs nonzero (sync);
        # `x[mask] = 0.0` becomes masked_fill_ (no sync).
        if not ctx.kind(node.value).is_tensor:
            return
        for target in node.targets:
            if isinstance(target.target, cst.Subscript):
                self._check(target.target, ctx)

    def visit_AugAssign(self, node: cst.AugAssign, ctx) -> None:
        # `x[mask] += y` reads `x[mask]` first, whatever `y` is
        if isinstance(node.target, cst.Subscript):
            self._check(node.target, ctx)

    def _check(self, node: cst.Subscript, ctx) -> None:
        why = self._masked(node, ctx)
        if why is not None:
            ctx.report(self, node, why=why)

    @staticmethod
    def _masked(node: cst.Subscript, ctx) -> str | None:
        """"" when `node` indexes with a boolean tensor mask, a note when only its name says
        so, else None."""
        for element in node.slice:
            index = element.slice
            if not isinstance(index, cst.Index):
                continue
            if ctx.kind(index.value).is_bool_tensor or _inverted_mask(index.value, ctx):
                return None if ctx.kind(node.value).not_tensor else ""
            name = _named_mask(index.value, ctx)
            if name is not None and ctx.kind(node.value).is_tensor:
                return f" (`{name}` taken for one by its name)"
        return None


def _named_mask(index: cst.BaseExpression, ctx) -> str | None:
    """The name of an index of no known kind (or a tensor of no known dtype made in this
    function) that calls itself a mask (`mask`, `loss_mask`, `seq_mask[i]`), else None. A name
    bound to integers, or to `nonzero(as_tuple=True)` (a tuple), is no such guess."""
    name = index.value if type(index) is cst.Subscript else index
    if type(name) is not cst.Name or not T.MASK_NAME.match(name.value):
        return None
    kind = ctx.kind(name)
    if kind.tag == "unknown" and ctx.kind(index).tag == "unknown":
        return name.value
    if (kind == T.TENSOR and name.value not in ctx.params and not ctx.is_loop_variable(name.value)
            and not ctx.is_integer_tensor(name)):
        # a tensor of no known dtype made here (`loss_mask = repeat(mask, ...)`); a parameter's
        # or a loop variable's tensor kind may come from callers who pass integers
        return name.value
    return None  # known: a mask (reported as such), integers, a tuple, a number


def _inverted_mask(index: cst.BaseExpression, ctx) -> bool:
    """`x[~legal]` with `legal` a tensor of unknown dtype: `~` on a tensor is the mask's
    logical not (on an integer tensor it would make the negative indices `-i - 1`, which code
    does not write as `~idx` to index with)."""
    return (type(index) is cst.UnaryOperation and type(index.operator) is cst.BitInvert
            and ctx.kind(index.expression).is_tensor and not ctx.is_integer_tensor(index.expression))


class TensorEquality(_SyncRule):
    """## What it does
    Flags `torch.equal`, `torch.allclose` and their method forms (`a.equal(b)`,
    `a.allclose(b)`) inside a captured region: they return a Python `bool`.

    ## Why is this bad?
    They return a Python `bool`, computed on the GPU and copied back: the host waits, capture
    fails, and the answer would be frozen at capture time anyway.

    ## Example
    ```python
    same = torch.allclose(a, b)
    ```

    ## Use instead
    `torch.isclose(a, b).all()` keeps the answer on the device as a tensor.

    ## Fix safety
    No automatic fix: the consumer expects a Python bool.
    """

    code = "GS109"
    name = "tensor-equality-sync"
    summary = "`torch.equal`/`torch.allclose` return a Python bool"
    message = "`{what}` returns a Python bool computed on the GPU: {consequence}"
    valid = ("same = torch.isclose(x, y).all()",)
    invalid = ("same = torch.equal(x, y)", "ok = torch.allclose(x, y)", "ok = x.allclose(y)")

    calls = Callees({"equal", "allclose"})

    def visit_Call(self, node: cst.Call, ctx) -> None:
        name = ctx.resolve(node.func)
        if name in ("torch.equal", "torch.allclose"):
            ctx.report(self, node, what=name)
        elif _method_call(node, ("equal", "allclose")) and ctx.kind(node.func.value).is_tensor:
            ctx.report(self, node, what=f".{node.func.attr.value}()")


class NonfiniteCheckSync(_SyncRule):
    """## What it does
    Flags `clip_grad_norm_(..., error_if_nonfinite=True)` inside a captured region. Clipping
    without the check (the default) is fine.

    ## Why is this bad?
    To raise on a non-finite norm, PyTorch reads the norm on the host: capture fails.

    ## Example
    ```python
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0, error_if_nonfinite=True)
    ```

    ## Use instead
    ```python
    norm = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    found_inf = ~torch.isfinite(norm)  # read it after replay
    ```

    ## Fix safety
    Where the call is a statement of its own (`clip_grad_norm_(...)` or `norm =
    clip_grad_norm_(...)`) and `torch` is imported, the fix keeps the check on the device:
    `error_if_nonfinite=False` and `torch._assert_async(torch.isfinite(norm), ...)` after the
    call, which captures. With a finite norm the gradients and the norm are bitwise the same.
    With a non-finite one the original raises before touching the gradients; the fixed code
    scales them first and then fails: a RuntimeError at once on the CPU, a device-side assert
    on CUDA (it ends the process's CUDA context; the error surfaces at the next sync). So the
    fix is unsafe. Elsewhere (the norm used inside an expression) the fix only turns the check
    off (unsafe: nothing raises any more).
    """
    fixable = True

    code = "GS110"
    name = "nonfinite-check-sync"
    summary = "`clip_grad_norm_(error_if_nonfinite=True)` reads the norm on the host"
    message = "`clip_grad_norm_(error_if_nonfinite=True)` reads the norm on the host: {consequence}"
    valid = ("torch.nn.utils.clip_grad_norm_(x, 1.0)",)
    invalid = (
        Example("torch.nn.utils.clip_grad_norm_(x, 1.0, error_if_nonfinite=True)",
                fixed='torch._assert_async(torch.isfinite(torch.nn.utils.clip_grad_norm_(x, 1.0, error_if_nonfinite=False)), '
                      '"clip_grad_norm_: the total norm of the gradients is non-finite")'),
        Example("norm = torch.nn.utils.clip_grad_norm_(x, 1.0, error_if_nonfinite=True)",
                fixed='norm = torch.nn.utils.clip_grad_norm_(x, 1.0, error_if_nonfinite=False)\n'
                      'torch._assert_async(torch.isfinite(norm), "clip_grad_norm_: the total norm of the gradients is non-finite")'),
        Example("scaled = 2 * torch.nn.utils.clip_grad_norm_(x, 1.0, error_if_nonfinite=True)",
                fixed="scaled = 2 * torch.nn.utils.clip_grad_norm_(x, 1.0, error_if_nonfinite=False)"),
    )

    calls = Callees({"clip_grad_norm_"})

    def visit_Call(self, node: cst.Call, ctx) -> None:
        func = node.func
        name = func.attr.value if isinstance(func, cst.Attribute) else func.value if isinstance(func, cst.Name) else ""
        if name == "clip_grad_norm_":
            arg = _keyword(node, "error_if_nonfinite")
            if arg is not None and _is_true(arg.value):
                ctx.report(self, node, fix=lambda: nonfinite_check_fix(node, ctx))


VALIDATED_METHODS = frozenset(("log_prob", "cdf", "icdf"))  # they call `_validate_sample(value)`
_SWITCHED_OFF = re.compile(r"set_default_validate_args\(\s*False\s*\)")
_UNVALIDATED_BINDING = re.compile(r"^[ \t]*([\w.]+)[ \t]*=[ \t]*[\w.]+\((?:[^()]|\([^()]*\))*validate_args[ \t]*=[ \t]*False", re.M)


@functools.lru_cache(maxsize=8)
def _built_unvalidated(source: str) -> frozenset[str]:
    """Names and attributes the file binds to a call with `validate_args=False`."""
    return frozenset(_UNVALIDATED_BINDING.findall(source))


class DistributionValidation(_SyncRule):
    """## What it does
    Flags building a `torch.distributions` distribution with argument validation on (the
    default: `validate_args` is `__debug__`, so on unless Python runs with `-O`), and
    `.log_prob(v)`/`.cdf(v)`/`.icdf(v)` on such a distribution, inside a captured region.

    ## Why is this bad?
    With validation on, the constructor checks every parameter against its constraint and
    `log_prob` checks the value against the support, each with `if not
    torch._is_all_true(valid): raise ValueError(...)`: the check's result is read on the host.
    Inside stream capture that read is refused: capture fails. (Outside capture it is one
    device sync per distribution and per `log_prob`.)

    ## Example
    ```python
    dist = Normal(mean, std)
    log_prob = dist.log_prob(actions)
    ```

    ## Use instead
    ```python
    dist = Normal(mean, std, validate_args=False)
    log_prob = dist.log_prob(actions)
    ```
    or `torch.distributions.Distribution.set_default_validate_args(False)` once, before the
    capture (`graphsafe graph` turns validation off only while capturing).

    ## Fix safety
    No fix: without validation, a bad parameter (a negative scale, probabilities that do not
    sum to one) or a value outside the support no longer raises; the program computes NaN or
    garbage where it raised before.

    ## Precise semantics
    A call of a `torch.distributions` class (a name or attribute that resolves there) without
    `validate_args=False` is reported; `validate_args=<a name>` is left alone (its value is not
    known). `.log_prob(v)`/`.cdf(v)`/`.icdf(v)` is reported on a value the analysis knows is a
    torch.distributions distribution (bound from such a constructor, here or in another method of
    the class), unless the file also binds that name or attribute to a distribution built with
    `validate_args=False` (`self.dist = Normal(m, s, validate_args=False)` in one method: the
    analysis does not tell the bindings apart). Nothing is reported in a file that calls
    `set_default_validate_args(False)`.
    """

    code = "GS111"
    name = "distribution-validation"
    summary = "a `torch.distributions` distribution validating its arguments or samples on the host"
    message = "{what} checks {checked} on the host (`validate_args` defaults to on): {consequence}"
    valid = (
        "d = torch.distributions.Categorical(logits=x, validate_args=False)\ny = d.log_prob(a)",
        "torch.distributions.Distribution.set_default_validate_args(False)\nd = torch.distributions.Normal(x, 1.0)",
        "d = torch.distributions.Normal(x, 1.0, validate_args=flag)",
        "d = torch.distributions.Normal(x, 1.0, validate_args=False)\ne = d.entropy()",
    )
    invalid = (
        "d = torch.distributions.Categorical(logits=x)",
        Example("from torch.distributions import Normal\nd = Normal(x, s)\ny = d.log_prob(a)", expect=2),
        "torch.distributions.Distribution.set_default_validate_args(True)\nd = torch.distributions.Normal(x, 1.0)",
    )

    calls = Callees(names=VALIDATED_METHODS, prefixes=("torch.distributions.",))

    def visit_Call(self, node: cst.Call, ctx) -> None:
        if "set_default_validate_args" in ctx.source and _SWITCHED_OFF.search(ctx.source):
            return  # (switched off somewhere in the file: before the capture, as a rule)
        func = node.func
        if type(func) is cst.Attribute and func.attr.value in VALIDATED_METHODS:
            if (node.args and T.is_distribution(ctx.kind(func.value))
                    and ctx.code_for(func.value) not in _built_unvalidated(ctx.source)):
                ctx.report(self, node, what=f"`.{func.attr.value}(...)`", checked="the value against the support")
            return
        name = ctx.resolve(func) or ""
        if not name.startswith("torch.distributions.") or not name.rpartition(".")[2][:1].isupper():
            return
        if name.rpartition(".")[2] not in T.DISTRIBUTION_CLASSES:
            return  # a transform or constraint: no validation
        arg = _keyword(node, "validate_args")
        if arg is not None and not (type(arg.value) is cst.Name and arg.value.value == "True"):
            return  # False, or a value the analysis cannot read
        ctx.report(self, node, what=f"`{name.rpartition('.')[2]}(...)`", checked="its arguments against their constraints")


RULES = (ItemSync, TolistSync, HostCopy, TensorFormat, TensorToPython, ExplicitSync, DynamicShapeOp,
         BoolMaskIndex, TensorEquality, NonfiniteCheckSync, DistributionValidation)
