"""GS001: a `# noqa: GS...` code that suppresses nothing (ruff's RUF100). Off by default."""

from __future__ import annotations

from graphsafe.model import Consequence, Example, Principle
from graphsafe.rules.base import Rule


class UnusedNoqa(Rule):
    """## What it does
    Flags a graphsafe code in a `# noqa: ...` comment that suppresses no diagnostic on its
    line. Off by default, like ruff's RUF100: enable it with `--extend-select GS001`.

    ## Why is this bad?
    A stale suppression hides the next hazard written on that line: a new `.item()` there
    would never be reported.

    ## Example
    ```python
    def step(x):  # graphsafe: region
        y = x * 2  # noqa: GS101
    ```

    ## Use instead
    ```python
    def step(x):  # graphsafe: region
        y = x * 2
    ```

    ## Fix safety
    The fix is safe: it removes the unused codes, and the whole comment when none is left
    (other tools' codes and any text after the codes stay).

    ## Precise semantics
    A code is unused when the hazard was fixed or moved, when it names a rule that is not
    enabled, or when it names no rule at all. Codes of other tools (`E501`, `F401`) and a bare
    `# noqa` are left alone: they may serve ruff or flake8. It can also be enabled with `select`
    or `extend-select` in `[tool.graphsafe]`.

    Run it on the whole project: a hazard is reported only where a capture region reaches it,
    so checking one file without the file that holds its region makes every noqa in it look
    unused.
    """

    code = "GS001"
    name = "unused-noqa"
    principle = Principle.SUPPRESSION
    consequence = Consequence.STALE
    summary = "a `# noqa` code that suppresses nothing (off by default)"
    message = "Unused `noqa` directive ({detail})"
    enabled_by_default = False
    fixable = True
    valid = (Example("v = x.item()  # noqa: GS101"), Example("y = x * 2  # noqa: E501"))
    invalid = (Example("y = x * 2  # noqa: GS101", fixed="y = x * 2"),
               Example("v = x.item()  # noqa: GS101, GS106", fixed="v = x.item()  # noqa: GS101"))
