"""GS002: graphsafe failed while analysing one function; the rest of the file was analysed."""

from __future__ import annotations

from graphsafe.model import Consequence, Principle
from graphsafe.rules.base import Rule


class InternalError(Rule):
    """## What it does
    Reports a function that graphsafe failed to analyse because of an error in graphsafe
    itself (a `RecursionError`, say). The file's other functions are analysed as usual.

    ## Why is this bad?
    Hazards in that function, and calls made from it, cannot be seen: it is a blind spot in an
    otherwise analysed file. It is graphsafe's bug, not yours: please report it with the code
    that triggers it.

    ## Example
    ```python
    def setup(model):
        ...  # a shape of code that graphsafe's analysis fails on
    ```

    ## Use instead
    Nothing to change in your code. Until graphsafe is fixed, `# noqa: GS002` on the `def`
    line (or `--ignore GS002`) silences the notice; the function stays unanalysed.

    ## Fix safety
    No fix. While any function of a file has this notice, no fix is offered for the other
    hazards of that file either (each says why): a rewrite can depend on every use in the file
    (GS301's buffer rewrites each caller of a method), and the failed function's uses are unknown.

    ## Precise semantics
    Reported at the `def` line of the innermost function whose analysis failed, naming it and
    the error's type. An error outside any function (in a class body or at module level, or
    in the file's final summary) is reported at line 1 and the file's facts are lost, as with
    GS000; GS000 itself is kept for files that cannot be read, decoded or parsed. GS001
    (unused noqa) says nothing about a file with this notice: what its `# noqa` comments hold
    back is unknown.
    """

    code = "GS002"
    name = "internal-error"
    principle = Principle.INPUT
    consequence = Consequence.NOT_ANALYSED
    summary = "graphsafe failed to analyse a function (its hazards are unknown)"
    message = "{detail}"
