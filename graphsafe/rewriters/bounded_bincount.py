"""`bincount` at its `minlength` (`graphsafe graph`, what still blocks a core: GS107):

    counts = torch.bincount(experts.flatten(), minlength=self.n_experts)
        →   counts = torch.nn.functional.one_hot((experts.flatten()).long(), self.n_experts).sum(0)

`bincount`'s length is `max(minlength, largest value + 1)`: a host read, and capture fails. A
one-hot summed over the values counts the same values at a fixed length: for values in
`[0, minlength)` the counts, the dtype (int64) and the length are bincount's (an empty input
gives `minlength` zeros in both). Unsafe: a value at or past `minlength`, which made the result
longer, is now an error (a device-side assert on a GPU), as a negative value was and still is;
the one-hot takes `len(x) * minlength` elements of memory for a moment. Refused: `weights=`, no
`minlength=`, a call spanning several lines. Keeps the line count (the split's lines).

Reads only the text: no torch (the static path)."""

from __future__ import annotations

import ast

from graphsafe.rewriters.statement_lines import source_of


def bincount_at_minlength(source: str, lines: set[int]) -> tuple[str | None, list[int]]:
    """The source with each `<torch>.bincount(x, minlength=n)` on one of `lines` (GS107s)
    counted with a one-hot, and the lines rewritten; (None, []) when none is."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return None, []
    text = source.splitlines(keepends=True)
    edits: list[tuple[int, int, int, str]] = []
    for call in ast.walk(tree):
        if not (isinstance(call, ast.Call) and call.lineno in lines and call.lineno == call.end_lineno
                and isinstance(call.func, ast.Attribute) and call.func.attr == "bincount"
                and isinstance(call.func.value, ast.Name) and len(call.args) == 1
                and [k.arg for k in call.keywords] == ["minlength"]):
            continue
        torch = call.func.value.id
        values = source_of(text, call.args[0])
        length = source_of(text, call.keywords[0].value)
        edits.append((call.lineno, call.col_offset, call.end_col_offset,
                      f"{torch}.nn.functional.one_hot(({values}).long(), {length}).sum(0)"))
    if not edits:
        return None, []
    for line, start, end, new in sorted(edits, key=lambda e: (e[0], -e[1])):
        raw = text[line - 1].encode("utf-8")
        text[line - 1] = (raw[:start] + new.encode("utf-8") + raw[end:]).decode("utf-8")
    return "".join(text), sorted({e[0] for e in edits})
