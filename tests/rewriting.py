"""Helpers for the rewriters' differential tests: fix a snippet, then run both versions."""

from __future__ import annotations

import textwrap

from graphsafe.config import Settings
from graphsafe.fixer import fix_text


def fixed_source(source: str, unsafe: bool = False) -> tuple[str, str]:
    """(original, fixed) text of a dedented snippet, `import torch` prepended."""
    original = "import torch\n" + textwrap.dedent(source)
    outcome = fix_text(original, "case.py", Settings(), [], unsafe=unsafe)
    assert outcome.error is None
    return original, outcome.fixed


def load(source: str, name: str = "f"):
    """The function `name` defined by `source`."""
    namespace: dict = {}
    exec(compile(source, "case.py", "exec"), namespace)
    return namespace[name]
