"""The plain data every face of graphsafe shares: rules, regions, diagnostics and fixes.

Everything here is a frozen dataclass of strings and numbers, so it pickles (process pool,
on-disk cache), serialises (json, sarif, LSP) and compares without reference to a syntax tree.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass


class Principle(enum.Enum):
    """Which of the CUDA-graph principles a hazard breaks (DESIGN.md)."""

    SYNC_FREE = "sync-free"
    STATIC = "static"
    GPU_ONLY = "gpu-only"
    CONFIG = "config"
    INPUT = "input"  # the file itself could not be analysed
    SUPPRESSION = "suppression"  # a `# noqa` comment itself (GS001)


class Severity(enum.Enum):
    ERROR = "error"
    WARNING = "warning"


class Consequence(enum.Enum):
    """What happens on capture/replay, in the words a diagnostic uses."""

    CAPTURE_FAILS = "capture fails"
    SILENTLY_WRONG = "replay is silently wrong"
    SLOWER = "slower or risky"
    REJECTED = "Megatron rejects the configuration at start-up"  # a config assertion, after minutes of start-up
    NOT_ANALYSED = "not analysed"
    STALE = "it suppresses nothing"  # a `# noqa` code no diagnostic needs (GS001)

    @property
    def severity(self) -> Severity:
        return Severity.WARNING if self in (Consequence.SLOWER, Consequence.STALE) else Severity.ERROR


class Applicability(enum.Enum):
    SAFE = "safe"  # same eager semantics: applied by `graphsafe fix`
    UNSAFE = "unsafe"  # may change behaviour: only with --unsafe-fixes


@dataclass(frozen=True, order=True)
class Position:
    """1-based line, 0-based character column (libcst's convention); output layers convert."""

    line: int
    column: int


@dataclass(frozen=True)
class Edit:
    start: Position
    end: Position
    content: str


@dataclass(frozen=True)
class Fix:
    title: str
    edits: tuple[Edit, ...]
    applicability: Applicability = Applicability.SAFE
    # why the fix may change behaviour (unsafe), or why none is offered (no edits: withheld)
    reason: str = ""

    @property
    def offered(self) -> bool:
        return bool(self.edits)


class RegionKind(enum.Enum):
    GRAPH_BLOCK = "torch.cuda.graph block"
    CAPTURE_BEGIN = "CUDAGraph.capture_begin/capture_end"
    GRAPHED_CALLABLE = "make_graphed_callables argument"
    TE_GRAPHED_CALLABLE = "Transformer Engine make_graphed_callables argument"
    COMPILE_REDUCE_OVERHEAD = 'torch.compile(mode="reduce-overhead")'
    COMMENT = "# graphsafe: region comment"
    DECORATOR = "@graphsafe.region decorator"
    PATTERN = "--region / [tool.graphsafe] regions pattern"


class Confidence(enum.Enum):
    CERTAIN = "certain"  # the user or the capture API names it directly
    LIKELY = "likely"  # resolved through a variable or attribute binding


@dataclass(frozen=True)
class Region:
    """A capture-region root: the function (or block) whose execution is captured."""

    function: str  # the unit key, e.g. "train.train_step" or "train.main.<graph@40>"
    display: str  # what users see: "train_step", "capture block in main (line 40)"
    kind: RegionKind
    confidence: Confidence
    path: str  # file that marks it
    line: int
    # the class whose instances run it, where that is not the class defining the function: a
    # pattern `RandomAffine.forward` on a `forward` inherited from a base (None: the defining class)
    receiver: str | None = None


@dataclass(frozen=True)
class CallSite:
    """Where one step of a call chain calls the next: a line of the caller's file (0: not known,
    e.g. a forward that module surgery runs)."""

    path: str
    line: int


@dataclass(frozen=True)
class Diagnostic:
    code: str
    message: str
    path: str
    start: Position
    end: Position
    region: Region | None = None
    chain: tuple[str, ...] = ()  # display names, region root first
    fix: Fix | None = None
    # The same hazard's other uses (Rule.groups_uses: one per-step value read at several places
    # of one function), each with its own position and fix, grouped under this, the first;
    # `message` then lists their lines (analyzer/grouping.py).
    also: tuple[Diagnostic, ...] = ()
    call_sites: tuple[CallSite, ...] = ()  # call_sites[i]: where chain[i] calls chain[i + 1]

    @property
    def sort_key(self) -> tuple:
        return (self.path, self.start.line, self.start.column, self.code)


@dataclass(frozen=True)
class Example:
    """A rule example that doubles as a unit test.

    `code` is a snippet; unless `region` is False it is wrapped into a function marked as a
    capture region, so the snippet is reachable. `fixed` is the expected fix output, if any.
    """

    code: str
    region: bool = True
    fixed: str | None = None
    expect: int = 1  # how many diagnostics of the rule the snippet produces (INVALID only)
    module: bool = False  # the snippet is a whole module (classes, several functions): not wrapped


@dataclass(frozen=True)
class Hit:
    """A hazard candidate found in one function, before reachability is known."""

    code: str
    message: str
    start: Position
    end: Position
    fix: Fix | None = None
    # Only a hazard when this unit is itself a region root (e.g. a Python-float parameter:
    # inside a callee it is whatever the root passes).
    root_only: bool = False
    # Only a hazard if, project-wide, class `condition[0]`'s attribute `condition[1]` changes
    # between steps (the class may live in another file).
    # (a 3-tuple ("param", function, name): only if that number parameter gets per-step values)
    condition: tuple[str, ...] | None = None
    # (function, parameter, ...): the hit runs only when a call passes every one of these
    # parameters of that function, whose defaults turn it off (analyzer/default_guards.py)
    guard: tuple[str, ...] = ()
