"""The rule model: one class per rule, carrying its code, docs, examples and checks.

A rule's docstring is its documentation in ruff's sections (What it does / Why is this bad? /
Example / Use instead / Fix safety); `graphsafe rule CODE`, docs/rules.md, the LSP hover and
the unit tests are all generated from the class, so they cannot drift apart.

Checks are methods named after the libcst node type they look at (`visit_Call`,
`visit_If`, ...). The walker calls them with the node and a `Context` (see
analyzer/walker.py) that answers "is this a tensor?", "what does this name resolve to?" and
takes reports. A rule holds no per-file state of its own.
"""

from __future__ import annotations

import inspect
import re
from typing import ClassVar

from graphsafe.model import Consequence, Example, Principle, Severity


class Rule:
    code: ClassVar[str]
    name: ClassVar[str]  # kebab-case, e.g. "item-sync"
    principle: ClassVar[Principle]
    consequence: ClassVar[Consequence]
    summary: ClassVar[str]  # one line, for `graphsafe rules`
    message: ClassVar[str]  # str.format template; {consequence} is filled in by the walker
    valid: ClassVar[tuple[Example | str, ...]] = ()
    invalid: ClassVar[tuple[Example | str, ...]] = ()
    fixable: ClassVar[bool] = False

    @classmethod
    def severity(cls) -> Severity:
        return cls.consequence.severity

    @classmethod
    def docs(cls) -> str:
        return inspect.cleandoc(cls.__doc__ or "")

    @classmethod
    def doc_sections(cls) -> dict[str, str]:
        """The docstring split by its `## Heading` lines."""
        sections: dict[str, str] = {}
        current = None
        for line in cls.docs().splitlines():
            m = re.match(r"^##\s+(.*?)\s*$", line)
            if m:
                current = m.group(1)
                sections[current] = ""
            elif current is not None:
                sections[current] += line + "\n"
        return {k: v.strip() for k, v in sections.items()}

    @classmethod
    def url(cls) -> str:
        return f"https://github.com/graphsafe/graphsafe/blob/main/docs/rules.md#{cls.code.lower()}-{cls.name}"

    @classmethod
    def format_message(cls, **fields: str) -> str:
        values = {"consequence": cls.consequence.value, **fields}  # a rule may state its own
        return cls.message.format(**values)


def as_example(example: Example | str) -> Example:
    return example if isinstance(example, Example) else Example(code=example)
