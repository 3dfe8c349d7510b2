"""GS000: the file could not be analysed (syntax error, undecodable bytes, unreadable)."""

from __future__ import annotations

from graphsafe.model import Consequence, Principle
from graphsafe.rules.base import Rule


class ParseError(Rule):
    """## What it does
    Reports a file graphsafe could not analyse: a syntax error, a file it cannot read or
    decode, or one too large. It is reported even under `--ignore ALL`, as ruff reports
    syntax errors.

    ## Why is this bad?
    Hazards in that file, and calls through it, cannot be seen: the rest of the project is
    still checked, but this file is a blind spot.

    ## Example
    ```python
    def step(x)
        return x
    ```

    ## Use instead
    Fix the syntax error (or exclude the file in `[tool.graphsafe] exclude`).

    ## Fix safety
    No fix.

    ## Precise semantics
    A file is not analysed when it has a syntax error, holds bytes that are not valid in the
    file's encoding, cannot be read (permissions, a broken symlink), is not a regular file (a
    FIFO, a device, a socket named `*.py`: never read), is over 10 MiB, or is too large to
    analyse in the time allowed.
    """

    code = "GS000"
    name = "parse-error"
    principle = Principle.INPUT
    consequence = Consequence.NOT_ANALYSED
    summary = "the file could not be parsed or read"
    message = "{detail}"
