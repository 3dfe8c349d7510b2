"""A mixture-of-experts dispatch over the experts that received tokens (the Hugging Face Mixtral
block's shape) run densely over every expert with combine weights (`graphsafe graph`, what still
blocks a core: GS107 `nonzero` and `torch.where(cond)`, GS201 the loop, GS105 `experts[tensor]`):

    expert_mask = F.one_hot(experts, num_classes=n).permute(2, 1, 0)
    hit = torch.greater(expert_mask.sum(dim=(-1, -2)), 0).nonzero()      (a blank line)
    for i in hit:                                                   →    for i in range(expert_mask.shape[0]):
        expert = self.experts[i]                                             expert = self.experts[i]
        slot, tok = torch.where(expert_mask[i].squeeze(0))                   combine = (expert_mask[i] * weights.t()).sum(0)
        y = expert(x[None, tok].reshape(-1, d)) * weights[tok, slot, None]   y = expert(x[None].reshape(-1, d)) * combine[:, None]
        out.index_add_(0, tok, y.to(x.dtype))                                out.add_(y.to(x.dtype))

`for i in range(n)` over every expert (the older Mixtral form) keeps its header. `nonzero`,
`where(cond)` and indexing a ModuleList with a tensor read the device on the host, and the number
of experts and tokens each expert gets changes per batch: capture fails. Here each expert runs on
every row, times its combine weight, which is the routing weight where the row was routed to it and
0 elsewhere: fixed shapes, no host read.

What is equal: `mask[i]` is (slots, rows), so `where` lists the (slot, row) pairs routed to expert
`i`; `(mask[i] * weights.t()).sum(0)` is, for each row, the sum of its routing weights to `i` (the
weight itself, top-k experts being distinct) and 0 for a row not routed there. The rows an
expert skipped get `expert(row) * 0 = 0` added: the same sums, in the same expert order (+0 is
exact), and the same gradients (0 for what was not routed). Row-wise work only: each use of the
row index must be `x[tok]` / `x[None, tok]` (every row instead), `w[tok, slot(, None)]` (the combine
weight) or `out.index_add_(0, tok, y)` (`out.add_(y)`); anything else refuses. Unsafe: an expert
whose output is inf or nan on a row not routed to it now makes that row nan (0 * inf), and an
`out` with other rows than `mask` has would raise or broadcast. Keeps the line count."""

from __future__ import annotations

import ast

from graphsafe.rewriters.statement_lines import LineEdits, fresh_name, functions, one_line, source_of


def dense_expert_dispatch(source: str, lines: set[int]) -> tuple[str | None, list[int]]:
    """The source with each dispatch loop whose header or `where` line is in `lines` (blocking
    diagnostics) run densely, and the loops' header lines; (None, []) when none is."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return None, []
    text_lines = source.splitlines(keepends=True)
    edits = LineEdits(source)
    done: list[int] = []
    for function in functions(tree):
        for loop in [n for n in ast.walk(function) if isinstance(n, ast.For)]:
            planned = _plan(function, loop, text_lines, lines)
            if planned is None:
                continue
            for statement, text in planned:
                if text is None:
                    edits.remove(statement)
                else:
                    edits.replace(statement, text)
            done.append(loop.lineno)
    return (edits.applied(), sorted(done)) if done else (None, [])


def _plan(function, loop: ast.For, lines: list[str], flagged: set[int]):
    """[(statement, new text or None to empty it)] for one dispatch loop, or None."""
    if loop.orelse or not isinstance(loop.target, ast.Name) or loop.iter.end_lineno != loop.lineno:
        return None
    index = loop.target.id
    found = _where_statement(loop, index)
    if found is None:
        return None
    where, slot, row, mask_text, squeezed = found
    if loop.lineno not in flagged and where.lineno not in flagged:
        return None
    hit = _hit_binding(function, loop)
    if hit is None and not _is_range(loop.iter):
        return None
    # every other use of slot/row in the body must be one of the row-wise forms
    plan: list = []
    weights: set[str] = set()
    adds = 0
    for statement in loop.body:
        if statement is where:
            continue
        if _binds(statement, {slot, row, index}):
            return None
        uses = {id(n) for n in ast.walk(statement) if isinstance(n, ast.Name) and n.id in (slot, row)}
        if not uses:
            continue
        if not one_line(statement):
            return None
        spans, covered, added = _row_spans(statement, slot, row, weights)
        if spans is None or uses - covered:
            return None
        adds += added
        plan.append((statement, _edited(lines, statement, spans)))
    if not adds or len(weights) != 1 or any(_binds(s, weights) for s in loop.body):
        return None
    combine = fresh_name(function, "combine")
    (weight,) = weights
    plan = [(s, t.replace("\0COMBINE\0", combine)) for s, t in plan]
    # one expert's (slots, rows) mask: with an int index `.squeeze(0)` would drop the slots of top-1
    one_mask = mask_text + ".squeeze(0)" if squeezed and hit is None else mask_text
    plan.append((where, f"{combine} = ({one_mask} * {weight}.t()).sum(0)"))
    if hit is not None:
        header = ast.Pass(lineno=loop.lineno, end_lineno=loop.lineno, col_offset=loop.col_offset,
                          end_col_offset=loop.iter.end_col_offset)  # `for i in hit` as a span to replace
        plan.append((header, f"for {index} in range({_mask_name(where)}.shape[0])"))
        plan.append((hit, None))
    return plan


def _where_statement(loop: ast.For, index: str):
    """`slot, row = <torch>.where(mask[index](.squeeze(0))?)` in the body: (statement, slot, row,
    the one-expert mask's text, whether `.squeeze(0)` was dropped)."""
    for statement in loop.body:
        if not (isinstance(statement, ast.Assign) and len(statement.targets) == 1 and one_line(statement)):
            continue
        target, call = statement.targets[0], statement.value
        if not (isinstance(target, ast.Tuple) and len(target.elts) == 2
                and all(isinstance(e, ast.Name) for e in target.elts)):
            continue
        if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) and call.func.attr == "where"
                and len(call.args) == 1 and not call.keywords):
            continue
        argument, squeezed = call.args[0], False
        if isinstance(argument, ast.Call) and isinstance(argument.func, ast.Attribute) \
                and argument.func.attr == "squeeze" and len(argument.args) == 1 and not argument.keywords \
                and isinstance(argument.args[0], ast.Constant) and argument.args[0].value == 0:
            argument, squeezed = argument.func.value, True
        if not (isinstance(argument, ast.Subscript) and isinstance(argument.value, ast.Name)
                and isinstance(argument.slice, ast.Name) and argument.slice.id == index):
            continue
        slot, row = (e.id for e in target.elts)
        return statement, slot, row, f"{argument.value.id}[{index}]", squeezed
    return None


def _mask_name(where: ast.Assign) -> str:
    argument = where.value.args[0]
    while not isinstance(argument, ast.Subscript):
        argument = argument.func.value
    return argument.value.id


def _hit_binding(function, loop: ast.For) -> ast.Assign | None:
    """The one-line `hit = ....nonzero()` the loop iterates, used nowhere else."""
    if not isinstance(loop.iter, ast.Name):
        return None
    name = loop.iter.id
    bindings = [n for n in ast.walk(function) if isinstance(n, ast.Assign) and len(n.targets) == 1
                and isinstance(n.targets[0], ast.Name) and n.targets[0].id == name]
    reads = [n for n in ast.walk(function) if isinstance(n, ast.Name) and n.id == name
             and isinstance(n.ctx, ast.Load)]
    if len(bindings) != 1 or len(reads) != 1 or not one_line(bindings[0]) or bindings[0].lineno >= loop.lineno:
        return None
    value = bindings[0].value
    if not (isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and value.func.attr == "nonzero"
            and not value.keywords):
        return None
    return bindings[0]


def _is_range(node: ast.expr) -> bool:
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "range"


def _binds(statement: ast.stmt, names: set[str]) -> bool:
    return any(isinstance(n, ast.Name) and n.id in names and isinstance(n.ctx, (ast.Store, ast.Del))
               for n in ast.walk(statement))


def _row_spans(statement: ast.stmt, slot: str, row: str, weights: set[str]):
    """(byte spans to rewrite [(start, end, text)], ids of the slot/row names they cover, the number
    of `index_add_` turned into `add_`), or (None, ...) on a form that is not row-wise."""
    spans: list[tuple[int, int, str]] = []
    covered: set[int] = set()
    added = 0

    def is_name(node, name):
        return isinstance(node, ast.Name) and node.id == name

    for node in ast.walk(statement):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "index_add_" \
                and len(node.args) == 3 and not node.keywords and is_name(node.args[1], row) \
                and isinstance(node.args[0], ast.Constant) and node.args[0].value == 0:
            spans.append((node.func.value.end_col_offset, node.args[2].col_offset, ".add_("))
            covered.add(id(node.args[1]))
            added += 1
        elif isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Load):
            index = node.slice
            if is_name(index, row):
                spans.append((node.value.end_col_offset, node.end_col_offset, ""))
                covered.add(id(index))
            elif isinstance(index, ast.Tuple) and len(index.elts) in (2, 3) and is_name(index.elts[0], row) \
                    and is_name(index.elts[1], slot) and isinstance(node.value, ast.Name) \
                    and all(isinstance(e, ast.Constant) and e.value is None for e in index.elts[2:]):
                weights.add(node.value.id)
                shape = "[:, None]" if len(index.elts) == 3 else ""
                spans.append((node.col_offset, node.end_col_offset, "\0COMBINE\0" + shape))
                covered.update(id(e) for e in index.elts[:2])
            elif isinstance(index, ast.Tuple) and sum(is_name(e, row) for e in index.elts) == 1 \
                    and all(is_name(e, row) or (isinstance(e, ast.Constant) and e.value is None) for e in index.elts):
                kept = ["None"] * (len(index.elts) - 1)
                spans.append((node.value.end_col_offset, node.end_col_offset, f"[{', '.join(kept)}]"))
                covered.update(id(e) for e in index.elts if is_name(e, row))
    spans.sort()
    if any(a[1] > b[0] for a, b in zip(spans, spans[1:])):
        return None, covered, added
    return spans, covered, added


def _edited(lines: list[str], statement: ast.stmt, spans) -> str:
    raw = lines[statement.lineno - 1].encode("utf-8")
    out, at = b"", statement.col_offset
    for start, end, text in spans:
        out += raw[at:start] + text.encode("utf-8")
        at = end
    return (out + raw[at:statement.end_col_offset]).decode("utf-8")
