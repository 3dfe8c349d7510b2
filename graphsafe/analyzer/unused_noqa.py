"""GS001 (unused noqa): the graphsafe codes of `# noqa: ...` comments that suppressed nothing,
with a fix that removes them (ruff's RUF100)."""

from __future__ import annotations

from graphsafe.analyzer.noqa import NoqaDirective
from graphsafe.model import Applicability, Diagnostic, Edit, Fix, Position
from graphsafe.rules import BY_CODE, matches
from graphsafe.rules.unused_noqa import UnusedNoqa

PREFIX = "GS"  # codes of other tools in the same comment are theirs


def unused_noqa(path: str, directives: tuple[NoqaDirective, ...], suppressed: dict[int, set[str]],
                enabled: set[str]) -> list[Diagnostic]:
    """A GS001 diagnostic per directive with graphsafe codes that suppressed nothing.

    `suppressed`: line → the codes of the enabled diagnostics a noqa comment held back there;
    `enabled`: the codes enabled for this run (a code of a rule that is off is "non-enabled",
    as ruff says, since it can suppress nothing either)."""
    found = []
    for directive in directives:
        first, last = directive.covers
        held = set().union(*(suppressed.get(n, set()) for n in range(first, last + 1)))
        kinds: dict[str, list[str]] = {"unused": [], "non-enabled": [], "unknown": []}
        for code, _, _ in directive.codes:
            if not code.startswith(PREFIX) or code == UnusedNoqa.code or any(matches(c, code) for c in held):
                continue
            if not any(matches(c, code) for c in BY_CODE):
                kinds["unknown"].append(code)
            elif not any(matches(c, code) for c in enabled):
                kinds["non-enabled"].append(code)
            else:
                kinds["unused"].append(code)
        stale = {code for codes in kinds.values() for code in codes}
        if not stale:
            continue
        detail = "; ".join(f"{kind}: " + ", ".join(f"`{c}`" for c in codes) for kind, codes in kinds.items() if codes)
        start, end = Position(directive.line, directive.start), Position(directive.line, directive.end)
        found.append(Diagnostic(UnusedNoqa.code, UnusedNoqa.format_message(detail=detail), path, start, end,
                                fix=_removal(directive, stale)))
    return found


def _removal(directive: NoqaDirective, stale: set[str]) -> Fix:
    """Drop the stale codes; drop the comment when no code is left (its text after the codes
    stays a comment; a line holding only the comment goes)."""
    line = directive.line
    kept = [code for code, _, _ in directive.codes if code not in stale]
    if kept:
        first, last = directive.codes[0][1], directive.codes[-1][2]
        edit = Edit(Position(line, first), Position(line, last), ", ".join(kept))
        title = "Remove unused codes from the `noqa` directive"
    elif directive.trailing:
        edit = Edit(Position(line, directive.start), Position(line, directive.end), "#")
        title = "Remove the unused `noqa` directive"
    elif directive.alone:
        edit = Edit(Position(line, 0), Position(line + 1, 0), "")
        title = "Remove the unused `noqa` comment"
    else:
        edit = Edit(Position(line, directive.lead), Position(line, directive.end), "")
        title = "Remove the unused `noqa` directive"
    return Fix(title, (edit,), Applicability.SAFE)
