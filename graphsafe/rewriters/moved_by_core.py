"""Host values the core itself moves to the device: the maker moves to the wrapper, the `.to` stays.

    def forward(self, tokens, state):              def forward(self, tokens, state):
        x = self.emb[tokens[-1]]   # CPU table         x = self.emb[tokens[-1]]
        for i in range(n):                  →          return self.forward_core(x, state)
            x = x.to(device=self.dev[i])  # GS402
            ...                                    def forward_core(self, x, state):
                                                       for i in range(n):
                                                           x = x.to(device=self.dev[i])

A host-to-device copy `N = N.to(...)` / `N = N.cuda(...)` (GS402 on its line, static or observed
at run time) of a value made on the host earlier in the region cannot move to the wrapper: only
the core knows the device (rwkv's per-layer strategy). The statement that makes `N` can: it is
attributed the host copy here (its line gets GS402), so rewriters/host_inputs.py treats it as a
producer (moved to the wrapper when it commutes with the core's work before it, else refused with
the reason), and the copy's own GS402 is dropped: graphed() keeps a CPU tensor argument whose use
while capturing is a `.to` onto the device in a device buffer it fills before each replay
(runtime/host_arguments.py; host work on such an argument is refused at capture with its name).

Only when: the copy rebinds the name it copies, at the top level of the region or of a top-level
`for` loop in it; the maker is a top-level statement assigning that one name, whose own hazards are
host work only (PRODUCER_CODES); nothing between the maker and the copy reads the name (the core's
first use of the argument is the `.to`).
"""

from __future__ import annotations

import libcst as cst

from graphsafe.rewriters.boundary import _effects, _find, _overlaps, _peel_grad_mode
from graphsafe.rewriters.host_inputs import HOST_COPY, PRODUCER_CODES, _assigned_names


def host_values_moved_by_core(source: str, qualname: str, own: dict[int, set[str]]
                              ) -> tuple[dict[int, set[str]], list[tuple[int, int, str]]]:
    """(maker line → {"GS402"}, [(copy line, maker line, name)]) for the function `qualname` of `source`;
    `own`: the region's own diagnostics (line → codes)."""
    try:
        module = cst.parse_module(source)
    except cst.ParserSyntaxError:
        return {}, []
    positions = cst.MetadataWrapper(module, unsafe_skip_copy=True).resolve(cst.metadata.PositionProvider)
    found = _find(module, qualname)
    if found is None:
        return {}, []
    body, _ = _peel_grad_mode(found[1])

    def line(node: cst.CSTNode) -> int:
        return positions[node].start.line

    def codes(node: cst.CSTNode) -> set[str]:
        return set().union(*(own.get(n, set()) for n in range(line(node), positions[node].end.line + 1)))

    makers: dict[int, set[str]] = {}
    notes: list[tuple[int, int, str]] = []
    for index, statement in enumerate(body):
        inner = list(statement.body.body) if isinstance(statement, cst.For) and isinstance(
            statement.body, cst.IndentedBlock) else [statement]
        for position, copy in enumerate(inner):
            name = _copied_name(copy)
            if name is None or HOST_COPY not in codes(copy):
                continue
            if isinstance(statement, cst.For) and _overlaps({name}, _effects(statement.target)[0]):
                continue
            maker = next((s for s in reversed(body[:index]) if _overlaps({name}, _effects(s)[1])), None)
            if maker is None or _assigned_names(maker) != [name] or not isinstance(maker, cst.SimpleStatementLine) \
                    or not codes(maker) <= PRODUCER_CODES:
                continue
            between = body[body.index(maker) + 1:index] + inner[:position]
            if any(_overlaps({name}, _effects(s)[0]) for s in between):
                continue  # the core reads the host value before it moves it
            makers[line(maker)] = {HOST_COPY}
            notes.append((line(copy), line(maker), name))
    return makers, notes


def device_move_note(copy: int, maker: int, name: str, moved: bool) -> str:
    """What graph says about a copy of a host value the core makes (`moved`: its maker went to the wrapper)."""
    if moved:
        return (f"`{name}`, made on the host at line {maker}, is moved to the device here by the core: line {maker} "
                "moves to the wrapper, the core takes the value, and graphed() fills the device buffer of this `.to` "
                "before each replay (runtime/host_arguments.py)")
    return (f"a host-to-device copy stays in the core: `{name}` is made on the host at line {maker}, which the split "
            "did not move to the wrapper (see its reason), so the core copies host memory while capturing")


def _copied_name(statement: cst.CSTNode) -> str | None:
    """`x = x.to(...)` / `x = x.cuda(...)`: "x"; else None."""
    if not isinstance(statement, cst.SimpleStatementLine) or len(_assigned_names(statement) or []) != 1:
        return None
    value = statement.body[0].value
    if not (isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute)
            and value.func.attr.value in ("to", "cuda") and isinstance(value.func.value, cst.Name)):
        return None
    name = _assigned_names(statement)[0]
    return name if value.func.value.value == name else None
