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
weight) or `out.index_add_(0, tok, y)` (`out.add_(y)`); anything else refuses. The forms of transformers
4.36 are taken too: `if tok.shape[0] == 0: continue` (dropped: an expert without rows adds 0) and
`tok_list = tok.tolist()` (the same index). Unsafe: the experts must work row by row (the MLPs
of a mixture of experts; one that mixes rows, a batch norm, would see other rows); an expert whose
output is inf or nan on a row not routed to it now makes that row nan (0 * inf); an `out` with
other rows than `mask` has would raise or broadcast; each expert costs every row (E/k times the
routed work: the price of fixed shapes). Keeps the line count."""

from __future__ import annotations

import ast

from graphsafe.rewriters.statement_lines import LineEdits, fresh_name, functions, one_line


def dense_expert_dispatch(source: str, lines: set[int]) -> tuple[str | None, list[int]]:
    """The source with each dispatch loop whose header or `where` line is in `lines` (blocking
    diagnostics) run densely, and the loops' header lines; (None, []) when none is."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return None, []
    edits = LineEdits(source)
    done: list[int] = []
    seen: set[int] = set()  # a nested function's loops are walked with its parent's too
    for function in functions(tree):
        for loop in [n for n in ast.walk(function) if isinstance(n, ast.For)]:
            planned = None if id(loop) in seen else _plan(function, loop, edits, lines)
            seen.add(id(loop))
            if planned is None:
                continue
            spans, removed = planned
            for start, end, text in spans:
                edits.replace_span(start, end, text)
            for statement in removed:
                edits.remove(statement)
            done.append(loop.lineno)
    new = edits.applied() if done else None
    if new is None or new.count("\n") != source.count("\n") or not _parses(new):
        return None, []
    return new, sorted(done)


def _parses(source: str) -> bool:
    try:
        ast.parse(source)
    except (SyntaxError, ValueError):
        return False
    return True


def _plan(function, loop: ast.For, edits: LineEdits, flagged: set[int]):
    """(spans [(start byte, end byte, text)], statements to empty) for one dispatch loop, or None."""
    if loop.orelse or not isinstance(loop.target, ast.Name) or loop.iter.end_lineno != loop.lineno:
        return None
    index = loop.target.id
    found = _where_statement(loop, index, edits.lines)
    if found is None:
        return None
    where, slot, row, mask_text, squeezed = found
    if loop.lineno not in flagged and where.lineno not in flagged:
        return None
    hit = _hit_binding(function, loop)
    spans: list[tuple[int, int, str]] = []
    removed: list[ast.stmt] = [where]
    slots, rows = {slot}, {row}
    weights: set[str] = set()
    adds = 0
    for statement in loop.body:
        if statement is where:
            continue
        alias = _list_alias(statement, slots | rows)  # `top_x_list = top_x.tolist()`: the same index
        if alias is not None:
            (slots if alias[1] in slots else rows).add(alias[0])
            removed.append(statement)
            continue
        if _skips_no_rows(statement, rows):  # `if top_x.shape[0] == 0: continue`: +0 is the same
            removed.append(statement)
            continue
        if _binds(statement, slots | rows | {index}):
            return None
        uses = {id(n) for n in ast.walk(statement) if isinstance(n, ast.Name) and n.id in slots | rows}
        if not uses:
            continue
        found_spans, covered, added = _row_spans(statement, slots, rows, weights, edits)
        if uses - covered:
            return None
        spans += found_spans
        adds += added
    if not adds or len(weights) != 1 or any(_binds(s, weights) for s in loop.body):
        return None
    if any(not edits.alone_on_its_lines(s) for s in removed):
        return None
    combine = fresh_name(function, "combine")
    (weight,) = weights
    spans = [(a, b, t.replace("\0COMBINE\0", combine)) for a, b, t in spans]
    # one expert's (slots, rows) mask: with an int index `.squeeze(0)` would drop the slots of top-1
    one_mask = mask_text + ".squeeze(0)" if squeezed and hit is None else mask_text
    removed.remove(where)
    spans.append((edits.offset(where.lineno, where.col_offset), edits.offset(where.end_lineno, where.end_col_offset),
                  f"{combine} = ({one_mask} * {weight}.t()).sum(0)"))
    if hit is not None:
        spans.append((edits.offset(loop.lineno, loop.col_offset), edits.offset(loop.lineno, loop.iter.end_col_offset),
                      f"for {index} in range({_mask_name(where)}.shape[0])"))
        if not edits.alone_on_its_lines(hit):
            return None
        removed.append(hit)
    return spans, removed


def _where_statement(loop: ast.For, index: str, lines: list[str]):
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
    """The `hit = ....nonzero()` the loop iterates, used nowhere else."""
    if not isinstance(loop.iter, ast.Name):
        return None
    name = loop.iter.id
    bindings = [n for n in ast.walk(function) if isinstance(n, ast.Assign) and len(n.targets) == 1
                and isinstance(n.targets[0], ast.Name) and n.targets[0].id == name]
    reads = [n for n in ast.walk(function) if isinstance(n, ast.Name) and n.id == name
             and isinstance(n.ctx, ast.Load)]
    if len(bindings) != 1 or len(reads) != 1 or bindings[0].lineno >= loop.lineno:
        return None
    value = bindings[0].value
    if not (isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and value.func.attr == "nonzero"
            and not value.keywords):
        return None
    return bindings[0]


def _list_alias(statement: ast.stmt, indexes: set[str]) -> tuple[str, str] | None:
    """(alias, index) for `alias = index.tolist()`."""
    if not (isinstance(statement, ast.Assign) and len(statement.targets) == 1
            and isinstance(statement.targets[0], ast.Name) and isinstance(statement.value, ast.Call)):
        return None
    call = statement.value
    if not call.args and not call.keywords and isinstance(call.func, ast.Attribute) and call.func.attr == "tolist" \
            and isinstance(call.func.value, ast.Name) and call.func.value.id in indexes:
        return statement.targets[0].id, call.func.value.id
    return None


def _skips_no_rows(statement: ast.stmt, rows: set[str]) -> bool:
    """`if row.shape[0] == 0: continue` (or `row.numel() == 0`, `len(row) == 0`)."""
    if not (isinstance(statement, ast.If) and not statement.orelse and len(statement.body) == 1
            and isinstance(statement.body[0], ast.Continue) and isinstance(statement.test, ast.Compare)
            and len(statement.test.ops) == 1 and isinstance(statement.test.ops[0], ast.Eq)
            and isinstance(statement.test.comparators[0], ast.Constant) and statement.test.comparators[0].value == 0):
        return False
    size = statement.test.left
    if isinstance(size, ast.Subscript) and isinstance(size.value, ast.Attribute) and size.value.attr == "shape" \
            and isinstance(size.slice, ast.Constant) and size.slice.value == 0:
        owner = size.value.value
    elif isinstance(size, ast.Call) and not size.keywords and (
            (isinstance(size.func, ast.Attribute) and size.func.attr == "numel" and not size.args)
            or (isinstance(size.func, ast.Name) and size.func.id == "len" and len(size.args) == 1)):
        owner = size.args[0] if size.args else size.func.value
    else:
        return False
    return isinstance(owner, ast.Name) and owner.id in rows


def _binds(statement: ast.stmt, names: set[str]) -> bool:
    return any(isinstance(n, ast.Name) and n.id in names and isinstance(n.ctx, (ast.Store, ast.Del))
               for n in ast.walk(statement))


def _row_spans(statement: ast.stmt, slots: set[str], rows: set[str], weights: set[str], edits: LineEdits):
    """(byte spans to rewrite [(start, end, text)], ids of the slot/row names they cover, the number
    of `index_add_` turned into `add_`); a use left uncovered refuses the loop."""
    spans: list[tuple[int, int, str]] = []
    covered: set[int] = set()
    added = 0

    def at(line, column):
        return edits.offset(line, column)

    def is_in(node, names):
        return isinstance(node, ast.Name) and node.id in names

    for node in ast.walk(statement):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "index_add_" \
                and len(node.args) == 3 and not node.keywords and is_in(node.args[1], rows) \
                and isinstance(node.args[0], ast.Constant) and node.args[0].value == 0:
            base = node.func.value
            spans.append((at(base.end_lineno, base.end_col_offset), at(node.args[2].lineno, node.args[2].col_offset),
                          ".add_("))
            covered.add(id(node.args[1]))
            added += 1
        elif isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Load):
            index, base = node.slice, node.value
            after_base = at(base.end_lineno, base.end_col_offset)
            end = at(node.end_lineno, node.end_col_offset)
            if is_in(index, rows):
                spans.append((after_base, end, ""))
                covered.add(id(index))
            elif isinstance(index, ast.Tuple) and len(index.elts) in (2, 3) and is_in(index.elts[0], rows) \
                    and is_in(index.elts[1], slots) and isinstance(base, ast.Name) \
                    and all(isinstance(e, ast.Constant) and e.value is None for e in index.elts[2:]):
                weights.add(base.id)
                shape = "[:, None]" if len(index.elts) == 3 else ""
                spans.append((at(node.lineno, node.col_offset), end, "\0COMBINE\0" + shape))
                covered.update(id(e) for e in index.elts[:2])
            elif isinstance(index, ast.Tuple) and sum(is_in(e, rows) for e in index.elts) == 1 \
                    and all(is_in(e, rows) or (isinstance(e, ast.Constant) and e.value is None) for e in index.elts):
                kept = ["None"] * (len(index.elts) - 1)
                spans.append((after_base, end, f"[{', '.join(kept)}]"))
                covered.update(id(e) for e in index.elts if is_in(e, rows))
    return spans, covered, added
