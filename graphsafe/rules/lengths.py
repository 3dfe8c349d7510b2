"""Variable-length inputs without padding (GS408): shapes made from per-call Python lengths.

The static side of GS403 (which the tracer reports when an input's shape drifts at run time):
inside a region, a tensor whose shape is computed from the length of a Python list the call
receives (`len(batch)`, `max(lengths)`, `max(len(s) for s in seqs)`) or padded to the longest
sequence of the batch (`pad_sequence`) has a new shape whenever the batch differs.
"""

from __future__ import annotations

import libcst as cst

from graphsafe.model import Consequence, Example, Principle
from graphsafe.rules.base import Callees, Rule, last_parts
from graphsafe.rules.syntax import keyword as _keyword
from graphsafe.rules.syntax import positional as _positional

_SIZE_FACTORIES = frozenset("zeros ones empty full rand randn arange eye".split())
_SIZE_METHODS = frozenset("new_zeros new_ones new_empty new_full view reshape expand repeat narrow".split())
_PAD_SEQUENCE = frozenset({"torch.nn.utils.rnn.pad_sequence"})
_LIST_ANNOTATIONS = frozenset("list List Sequence tuple Tuple Iterable MutableSequence".split())
_AGGREGATES = frozenset({"max", "min", "sum"})


class _Lengths:
    """Per function: local names holding per-call Python lists or lengths derived from them."""

    def __init__(self) -> None:
        self.lists: dict[int, set[str]] = {}
        self.lengths: dict[int, dict[str, str]] = {}


def _list_params(function: cst.FunctionDef) -> set[str]:
    """Parameters annotated as Python sequences (`batch: list[Tensor]`, `lengths: Sequence[int]`)."""
    names = set()
    params = function.params
    for param in list(params.posonly_params) + list(params.params) + list(params.kwonly_params):
        if param.annotation is None:
            continue
        annotation = param.annotation.annotation
        head = annotation.value if isinstance(annotation, cst.Subscript) else annotation
        text = head.attr.value if isinstance(head, cst.Attribute) else head.value if isinstance(head, cst.Name) else ""
        if text in _LIST_ANNOTATIONS:
            names.add(param.name.value)
    return names


class VariableLengthShape(Rule):
    """## What it does
    Flags, inside a captured region, a tensor shape taken from the length of a Python list the
    call receives (`torch.zeros(len(batch), max(lengths))`, `x[:, :max_len]`), and
    `pad_sequence(...)`, which pads to the longest sequence of each batch.

    ## Why is this bad?
    A graph replays the shapes of capture. When the batch has another length, the region needs
    tensors of another shape: replay keeps the captured shape (wrong results or out-of-bounds
    reads of the static buffers), and a graph per shape means recapturing for every new length.

    ## Example
    ```python
    def step(self, seqs: list[torch.Tensor]):
        max_len = max(len(s) for s in seqs)
        batch = torch.zeros(len(seqs), max_len, device="cuda")
    ```

    ## Use instead
    Pad every batch to a fixed length (or to a few bucket lengths, one graph per bucket, as
    `graphsafe.runtime.graphed` does) before the region, and copy it into the static input.

    ## Fix safety
    No automatic fix: the padded length is a design decision.

    ## Precise semantics
    Flagged: a size argument of `torch.zeros`/`ones`/`empty`/`full`/`arange`/..., of
    `x.new_zeros(...)`/`view`/`reshape`/`expand`, or a slice bound `x[:, :max_len]`, computed
    from `len(batch)`, `max(lengths)`, `max(len(s) for s in seqs)` where `batch`, `lengths`,
    `seqs` are parameters annotated as lists/sequences or lists built from them; a size
    argument that depends on tensor data (`n = mask.sum().item()`, `n = x.shape[0]` after `x =
    x[mask]`: analyzer/data_sizes.py; the read itself is GS101's); and `pad_sequence(...)`.

    What it does not catch: lengths of unannotated parameters (`len(x)` of a tensor is a fixed
    shape, so an unknown value is not flagged), lengths computed before the region and passed
    in as numbers (GS301 covers number parameters), and a DataLoader collate without bucketing
    outside the region (the run-time check GS403 sees the drifting input shapes).
    """

    code = "GS408"
    name = "variable-length-shape"
    principle = Principle.STATIC
    consequence = Consequence.SILENTLY_WRONG
    summary = "a tensor shape from a per-call Python length (`max(lengths)`, `pad_sequence`)"
    message = "the shape comes from {source}, which changes with each batch while the graph replays the captured shape: {consequence}"
    valid = (
        "y = torch.zeros(x.shape[0], 4)",
        "n = len(x)\ny = x[:n]",
        "def f(self, x):\n    return torch.zeros(len(self.layers))",
        # one slice of a value of unknown kind may be a Python list (host work, no shape)
        "def f(names, lengths: list[int]):  # graphsafe: region\n    return names[: max(lengths)]",
        Example("def f(seqs: list):\n    return torch.zeros(max(len(s) for s in seqs))", region=False),
        # rebound to a list the call does not receive: its length is fixed
        "def f(self, seqs: list[torch.Tensor]):  # graphsafe: region\n    seqs = [s for s in self.fixed]\n    return torch.zeros(len(seqs))",
    )
    invalid = (
        "def f(seqs: list[torch.Tensor]):  # graphsafe: region\n    max_len = max(len(s) for s in seqs)\n    return torch.zeros(len(seqs), max_len)",
        Example("def f(x: torch.Tensor, lengths: list[int]):  # graphsafe: region\n    return x[:, :max(lengths)]"),
        # rebound to a list built from itself (an augmentation): still the call's list
        "def f(seqs: list[dict]):  # graphsafe: region\n    seqs = [dict(s, x=s['x'] * 2) for s in seqs]\n    return torch.zeros(len(seqs), max(len(s['x']) for s in seqs))",
        # `targets` of unknown kind (filled by `*batch`): `[:, :n]` is array indexing all the same
        Example("def f(targets, lengths: list[int]):  # graphsafe: region\n    return targets[:, :max(lengths)]"),
        Example("def f(seqs: list[torch.Tensor]):  # graphsafe: region\n    lens = [s.shape[0] for s in seqs]\n    return seqs[0].new_zeros(max(lens))"),
        "from torch.nn.utils.rnn import pad_sequence\ndef f(seqs):  # graphsafe: region\n    return pad_sequence(seqs, batch_first=True)",
        "def f(x: torch.Tensor, mask: torch.Tensor):  # graphsafe: region\n    n = mask.sum().item()\n    return torch.arange(n, device=x.device)",
    )

    # ------------------------------------------------------------------ sources
    def _state(self, ctx) -> tuple[set[str], dict[str, str]] | None:
        function = ctx.function_node
        if function is None:
            return None
        state = ctx.file_state(_Lengths)
        key = id(function)
        if key not in state.lists:
            state.lists[key] = _list_params(function)
            state.lengths[key] = {}
        return state.lists[key], state.lengths[key]

    def _is_list(self, expr: cst.BaseExpression, lists: set[str]) -> bool:
        if isinstance(expr, cst.Name):
            return expr.value in lists
        if isinstance(expr, (cst.ListComp, cst.GeneratorExp)):
            return self._is_list(expr.for_in.iter, lists)
        return False

    def _source(self, expr: cst.BaseExpression, lists: set[str], lengths: dict[str, str]) -> str | None:
        """How `expr` depends on a per-call Python length, in words; None when it does not."""
        if isinstance(expr, cst.Name):
            return lengths.get(expr.value)
        if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Name):
            args = [a.value for a in expr.args if a.keyword is None]
            func = expr.func.value
            if func == "len" and len(args) == 1 and self._is_list(args[0], lists):
                return f"`len({_text(args[0])})`"
            if func in _AGGREGATES and len(args) == 1 and self._is_list(args[0], lists):
                return f"`{func}(...)` over a per-call list"
            if func == "int" and len(args) == 1:
                return self._source(args[0], lists, lengths)
            return None
        if isinstance(expr, cst.BinaryOperation):
            return self._source(expr.left, lists, lengths) or self._source(expr.right, lists, lengths)
        if isinstance(expr, (cst.Tuple, cst.List)):
            for element in expr.elements:
                found = self._source(element.value, lists, lengths)
                if found:
                    return found
        return None

    def visit_Assign(self, node: cst.Assign, ctx) -> None:
        state = self._state(ctx)
        if state is None:
            return
        lists, lengths = state
        for target in node.targets:
            if not isinstance(target.target, cst.Name):
                continue
            name = target.target.value
            source = self._source(node.value, lists, lengths)
            # read before the name is dropped: `batch = [aug(x) for x in batch]` stays a per-call list
            built = isinstance(node.value, cst.ListComp) and self._is_list(node.value, lists)
            lengths.pop(name, None)
            lists.discard(name)
            if source is not None:
                lengths[name] = source
            elif built:
                lists.add(name)

    # ------------------------------------------------------------------ sinks
    calls = Callees(last_parts(_PAD_SEQUENCE) | _SIZE_FACTORIES | _SIZE_METHODS)

    def visit_Call(self, node: cst.Call, ctx) -> None:
        name = ctx.resolve(node.func) or ""
        if name in _PAD_SEQUENCE:
            ctx.report(self, node, source="the longest sequence of the batch (`pad_sequence`)")
            return
        namespace, _, func = name.rpartition(".")
        sized = namespace == "torch" and func in _SIZE_FACTORIES
        if not sized and isinstance(node.func, cst.Attribute) and node.func.attr.value in _SIZE_METHODS:
            sized = ctx.kind(node.func.value).is_tensor
        if not sized:
            return
        state = self._state(ctx)
        if state is None:
            return
        size = _keyword(node, "size")
        for arg in [size] if size is not None else _positional(node):
            source = self._source(arg.value, *state)
            if source is None:  # `torch.arange(n)` with `n = mask.sum().item()`
                reason = ctx.data_size_reason(arg.value)
                source = f"a size that depends on tensor data ({reason})" if reason is not None else None
            if source is not None:
                ctx.report(self, arg.value, source=source)
                return

    def visit_Subscript(self, node: cst.Subscript, ctx) -> None:
        kind = ctx.kind(node.value)
        # `targets[:, :n]` of a value of unknown kind: a tuple of slices indexes arrays, not lists
        if not (kind.is_tensor or (kind.tag == "unknown" and len(node.slice) > 1)):
            return
        state = self._state(ctx)
        if state is None:
            return
        for element in node.slice:
            part = element.slice
            bounds = (part.lower, part.upper) if isinstance(part, cst.Slice) else ()
            for bound in bounds:
                if bound is not None:
                    source = self._source(bound, *state)
                    if source is not None:
                        ctx.report(self, bound, source=source)
                        return


def _text(expr: cst.BaseExpression) -> str:
    return expr.value if isinstance(expr, cst.Name) else "..."


RULES = (VariableLengthShape,)
