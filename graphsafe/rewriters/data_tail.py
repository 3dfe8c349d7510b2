"""A data-dependent tail: the region's last statements that turn device tensors into what the user
reads, run by the wrapper after the graph.

    def eval_step(model, x, lengths):                def eval_step(model, x, lengths):
        logits = model(x)                                logits = eval_step_core(model, x, lengths)
        hyps, conf = decode(logits, lengths)   →         hyps, conf = decode(logits, lengths)
        return hyps, conf.mean()                         return hyps, conf.mean()

                                                     def eval_step_core(model, x, lengths):
                                                         logits = model(x)
                                                         return logits

`decode` reads token lists with `.tolist()` and selects frames with `masked_select`: results of a
data-dependent size, or host values. No graph holds them (a graph fixes every shape at capture);
the fixed-capacity alternative changes what the program returns. Such a statement — its own line
or what its calls reach has a data-dependent shape (GS107, GS108) or a host value read (GS101-GS103),
nothing else but host work — whose results only later tail statements, host work or the return
read is handed to the wrapper as host work (boundary.split_region places it after the core when it
commutes with the core statements after it). The return then reads the tail's results in the
wrapper too. Same code, same values: only where it runs changes (eagerly, on the tensors the graph
returns). Nothing is marked when the tail would be the whole step (nothing would be left to graph:
the smaller-region note says so).

Static path: libcst only, no torch."""

from __future__ import annotations

import libcst as cst

from graphsafe.rewriters.boundary import HOST_CODES, _effects, _overlaps, region_statements

DATA_SHAPES = frozenset({"GS107", "GS108"})  # a data-dependent output shape
# host values the user reads: .item(), .tolist(), .cpu() / .to("cpu"). Not `int()` / `bool()` alone (GS105):
# those are mostly sizes and branch decisions inside tensor work, which graphed()'s guards or the trim
# of rewriters/trimmed_inputs.py take; a tail statement may still reach one beside a trigger.
HOST_READS = frozenset({"GS101", "GS102", "GS103"})
AS_HOST = "GS105"  # what a data-dependent shape is to the split: a size read on the host


def data_dependent_tail(source: str, qualname: str, own: dict[int, set[str]],
                        reached: dict[int, set[str]]) -> dict[int, set[str]]:
    """Line → the codes the split reads there, for every line of the tail's statements (and of the
    return when it reads their results): host codes only, so that split_region moves them. `own`:
    the region's own diagnostics (line → codes); `reached`: codes of what each line's calls reach."""
    region = region_statements(source, qualname)
    if region is None:
        return {}
    body, positions = region
    statements = [_Fact(s, positions[s].start.line, positions[s].end.line, own, reached) for s in body]
    returns = statements[-1] if statements and _is_return(body[-1]) else None
    facts = statements[:-1] if returns is not None else statements
    candidates = {i for i, f in enumerate(facts) if f.candidate}
    while True:
        tail, ret_in_wrapper = _tail(facts, returns, candidates)
        if not any(i not in tail and not f.host and not f.docstring for i, f in enumerate(facts)):
            if not tail:
                return {}  # the return alone, or nothing: the split's own rules
            candidates.discard(min(tail))  # the whole step: the earliest work stays in the core, graphed
            continue
        break
    if not tail and not ret_in_wrapper:
        return {}
    marked = [facts[i] for i in sorted(tail)] + ([returns] if ret_in_wrapper else [])
    return {line: (f.codes & HOST_CODES) | {AS_HOST} for f in marked for line in range(f.first, f.last + 1)}


def _tail(facts: list[_Fact], returns: _Fact | None, candidates: set[int]) -> tuple[set[int], bool]:
    """The candidates whose results only later tail statements, host work or the return read (to a
    fixed point), and whether the return then runs in the wrapper."""
    tail = set(candidates)
    while True:
        written = set().union(*(facts[i].writes for i in tail)) if tail else set()
        ret_in_wrapper = returns is not None and (returns.candidate or (
            bool(tail) and _overlaps(written, returns.reads) and returns.codes <= HOST_CODES | DATA_SHAPES))
        dropped = {i for i in tail if any(
            j not in tail and not facts[j].host and _overlaps(facts[i].writes, facts[j].reads | facts[j].writes)
            for j in range(i + 1, len(facts)))}
        if returns is not None and not ret_in_wrapper:
            dropped |= {i for i in tail if _overlaps(facts[i].writes, returns.reads)}
        if not dropped:
            return tail, ret_in_wrapper
        tail -= dropped


class _Fact:
    def __init__(self, node: cst.BaseStatement, first: int, last: int, own, reached) -> None:
        self.first, self.last = first, last
        lines = range(first, last + 1)
        here = set().union(*(own.get(n, set()) for n in lines))
        self.codes = here | set().union(*(reached.get(n, set()) for n in lines))
        self.host = bool(here) and here <= HOST_CODES  # the split's own rule: host work already
        self.candidate = bool(self.codes & (DATA_SHAPES | HOST_READS)) and self.codes <= HOST_CODES | DATA_SHAPES \
            and not self.host and _binds_or_returns(node)
        self.reads, self.writes = _effects(node)
        self.docstring = isinstance(node, cst.SimpleStatementLine) and len(node.body) == 1 \
            and isinstance(node.body[0], cst.Expr) and isinstance(node.body[0].value, cst.SimpleString)


def _binds_or_returns(node: cst.BaseStatement) -> bool:
    """A plain assignment (or the return): the tail hands values on; a bare call, a branch or a
    loop is left to the split's own rules."""
    return isinstance(node, cst.SimpleStatementLine) and len(node.body) == 1 \
        and isinstance(node.body[0], (cst.Assign, cst.AnnAssign, cst.Return))


def _is_return(node: cst.BaseStatement) -> bool:
    return isinstance(node, cst.SimpleStatementLine) and len(node.body) == 1 and isinstance(node.body[0], cst.Return)
