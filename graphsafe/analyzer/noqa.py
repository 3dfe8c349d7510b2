"""`# noqa` and `# noqa: GS101, GS2` comments, found by a cheap scan of the lines (ruff's syntax)."""

from __future__ import annotations

import re

_NOQA = re.compile(r"#\s*noqa(?::\s*(?P<codes>[A-Z]+[0-9]*(?:\s*,\s*[A-Z]+[0-9]*)*))?", re.IGNORECASE)


def noqa_lines(lines: list[str]) -> tuple[tuple[int, tuple[str, ...] | None], ...]:
    """(line number, codes or None for a bare `# noqa`) for every line carrying a noqa comment."""
    found = []
    for number, line in enumerate(lines, start=1):
        if "noqa" not in line and "NOQA" not in line:
            continue
        m = _NOQA.search(line)
        if m is None:
            continue
        codes = m.group("codes")
        found.append((number, tuple(c.strip().upper() for c in codes.split(",")) if codes else None))
    return tuple(found)


def suppressed(code: str, line: int, noqa: dict[int, tuple[str, ...] | None]) -> bool:
    """A code is suppressed by a bare noqa, or by a listed code that is a prefix of it."""
    if line not in noqa:
        return False
    codes = noqa[line]
    return codes is None or any(code.startswith(c) for c in codes)
