"""The rule model: one class per rule, carrying its code, docs, examples and checks.

A rule's docstring is its documentation in ruff's sections (What it does / Why is this bad? /
Example / Use instead / Fix safety), then, where the exact scope needs more than a few lines,
Precise semantics. "What it does" comes first and says what is flagged in at most four lines
(tests/test_docs.py checks it); every case and exception goes in Precise semantics.
`graphsafe rule CODE`, docs/rules.md, the LSP hover and the unit tests are all generated from
the class, so they cannot drift apart.

Checks are methods named after the libcst node type they look at (`visit_Call`,
`visit_If`, ...). The walker calls them with the node and a `Context` (see
analyzer/walker.py) that answers "is this a tensor?", "what does this name resolve to?" and
takes reports. A rule holds no per-file state of its own.
"""

from __future__ import annotations

import inspect
import re
from typing import ClassVar, Iterable

from graphsafe.model import Consequence, Example, Principle, Severity


class Callees:
    """The calls a rule's `visit_Call` can act on, so that the walker hands it no other.

    A call matches when its method name (`x.m(...)`), its bare name (`f(...)`) or the last part
    of the name its callee resolves to (`eq(...)` after `from torch import equal as eq`) is in
    `names`, when that resolved name starts with one of `prefixes`, or when it passes one of
    `keywords` as a keyword argument (`generator=g`, whatever the callee). Declare it only where the
    handler does nothing at all for any other call: no report, no state, and no `ctx.kind`
    question either (kinds are memoised at their first question, so a skipped question could
    change a later answer). Skipping is then invisible, and tests/test_call_filter.py checks it."""

    __slots__ = ("names", "prefixes", "keywords")

    def __init__(self, names: Iterable[str] = (), prefixes: Iterable[str] = (), keywords: Iterable[str] = ()) -> None:
        self.names = frozenset(names)
        self.prefixes = tuple(prefixes)
        self.keywords = tuple(keywords)

    def match(self, name: str | None, resolved: str | None, keywords: Iterable[str] = ()) -> bool:
        """`name`: the method or bare name of the callee; `resolved`: the name it resolves to;
        `keywords`: the call's keyword arguments."""
        tail = None if resolved is None else resolved.rpartition(".")[2]
        prefixes = () if resolved is None else tuple(p for p in self.prefixes if resolved.startswith(p))
        return self.match_parts(name, tail, prefixes, tuple(keywords))

    def match_parts(self, name: str | None, tail: str | None, prefixes: tuple[str, ...], keywords: tuple[str, ...]) -> bool:
        """`match` from the parts it reads: the last part of the resolved name, and the prefixes
        and keywords (of any rule) that the resolved name starts with and the call passes."""
        return (name in self.names or tail in self.names or any(p in prefixes for p in self.prefixes)
                or any(k in keywords for k in self.keywords))


def last_parts(names: Iterable[str]) -> frozenset[str]:
    """`{"torch.equal", "numpy.save"}` → `{"equal", "save"}`, for a Callees of full names."""
    return frozenset(n.rpartition(".")[2] for n in names)


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
    # One diagnostic per hazard, not per use: the rule's reports in one function with the same
    # message (it names the value) are grouped at the first (analyzer/grouping.py).
    groups_uses: ClassVar[bool] = False
    # off unless selected by its code or a prefix of it (ruff's RUF100: `--extend-select GS001`)
    enabled_by_default: ClassVar[bool] = True
    # The walker's pre-filters (they change nothing a rule reports, only what it is shown):
    calls: ClassVar[Callees | None] = None  # the calls `visit_Call` can act on (None: every call)
    # the rule has nothing to do in a file that mentions none of these (no handler of it runs there)
    words: ClassVar[tuple[str, ...]] = ()

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
