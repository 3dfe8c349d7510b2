"""What the tracer found, as plain data: findings aggregated per (code, file, line), the report
that holds them, its text and JSON forms, and the merge with static diagnostics.

No torch import here: the CLI's `--static` merge and the formats are pure Python.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Mapping

from graphsafe.runtime.codes import RULES, RuntimeRule

MAX_DETAILS = 5  # distinct details kept per finding (ops, argument names); the rest are counted


@dataclass(frozen=True)
class StackFrame:
    filename: str
    line: int
    function: str

    def __str__(self) -> str:
        return f"{_display_path(self.filename)}:{self.line} in {self.function}"


@dataclass(frozen=True)
class Site:
    """Where a finding happened: the first frame in user code, and the user frames around it."""

    filename: str
    line: int
    column: int  # 1-based; 1 when only the line is known
    function: str
    stack: tuple[StackFrame, ...] = ()  # outermost first, the reported frame last


@dataclass(frozen=True)
class Finding:
    code: str
    name: str
    message: str
    filename: str
    line: int
    column: int
    function: str
    hits: int
    stack: tuple[StackFrame, ...]
    details: tuple[str, ...] = ()  # what exactly: the op (`aten.nonzero`), the argument (`lr: 0.1 → 0.05`)
    seen_by: tuple[str, ...] = ()  # torch-function, dispatch, sync-debug, explicit-sync, inputs

    @property
    def text(self) -> str:
        hits = "1 hit" if self.hits == 1 else f"{self.hits} hits"
        detail = f" — {'; '.join(self.details)}" if self.details else ""
        return f"{_display_path(self.filename)}:{self.line}:{self.column}: {self.code} {self.message}{detail} ({hits})"

    def to_json(self) -> dict:
        return {
            "code": self.code,
            "name": self.name,
            "message": self.message,
            "details": list(self.details),
            "filename": self.filename,
            "location": {"row": self.line, "column": self.column},
            "function": self.function,
            "hits": self.hits,
            "stack": [{"filename": f.filename, "row": f.line, "function": f.function} for f in self.stack],
            "seen_by": list(self.seen_by),
        }


@dataclass
class TraceReport:
    findings: list[Finding]
    steps: int
    seconds: float
    result: Any = None  # the return value of the last traced step
    regions: dict[str, int] = field(default_factory=dict)  # traced function -> traced calls

    def by_code(self, code: str) -> list[Finding]:
        return [f for f in self.findings if f.code == code]

    def to_text(self) -> str:
        lines = []
        for finding in self.findings:
            lines.append(finding.text)
            lines.extend(f"    {frame}" for frame in finding.stack)
        lines.append(self.summary())
        return "\n".join(lines) + "\n"

    def summary(self) -> str:
        steps = "1 traced call" if self.steps == 1 else f"{self.steps} traced calls"
        where = f" of {', '.join(self.regions)}" if self.regions else ""
        if not self.findings:
            return f"No hazards found in {steps}{where} ({self.seconds:.2f} s)."
        noun = "hazard" if len(self.findings) == 1 else "hazards"
        return f"Found {len(self.findings)} {noun} in {steps}{where} ({self.seconds:.2f} s)."

    def to_json(self) -> list[dict]:
        return [finding.to_json() for finding in self.findings]


class _Entry:
    __slots__ = ("code", "site", "hits", "details", "extra_details", "seen_by")

    def __init__(self, code: str, site: Site):
        self.code = code
        self.site = site
        self.hits = 0
        self.details: list[str] = []
        self.extra_details = 0
        self.seen_by: list[str] = []


Key = tuple  # (code, filename, line)


class Recorder:
    """Aggregates hits per (code, file, line). `describe` builds the Site only for a new key, so
    a hazard hit on every step costs a dict lookup, not a stack walk."""

    def __init__(self, rules: Mapping[str, RuntimeRule] | None = None) -> None:
        self._rules = {**RULES, **rules} if rules else RULES  # codes.RULES and the tracer's own (trace_streams)
        self._entries: dict[Key, _Entry] = {}
        self._by_line: dict[tuple[str, int], Key] = {}

    def record(
        self, code: str, filename: str, line: int, describe: Callable[[], Site], *, detail: str | None = None,
        source: str = "", count: bool = True,
    ) -> Key:
        key = (code, filename, line)
        entry = self._entries.get(key)
        if entry is None:
            entry = self._entries[key] = _Entry(code, describe())
            self._by_line.setdefault((filename, line), key)
        if count:
            entry.hits += 1
        if detail is not None and detail not in entry.details:
            if len(entry.details) < MAX_DETAILS:
                entry.details.append(detail)
            else:
                entry.extra_details += 1
        if source and source not in entry.seen_by:
            entry.seen_by.append(source)
        return key

    def confirm(self, key: Key, source: str) -> None:
        """Note that another mechanism (the sync debug mode) saw the same hazard."""
        entry = self._entries[key]
        if source not in entry.seen_by:
            entry.seen_by.append(source)

    def key_at(self, filename: str, line: int) -> Key | None:
        return self._by_line.get((filename, line))

    def findings(self) -> list[Finding]:
        out = []
        for entry in self._entries.values():
            rule = self._rules[entry.code]
            details = list(entry.details)
            if entry.extra_details:
                details.append(f"+{entry.extra_details} more")
            site = entry.site
            out.append(
                Finding(
                    code=entry.code, name=rule.name, message=rule.message, filename=site.filename, line=site.line,
                    column=site.column, function=site.function, hits=entry.hits, stack=site.stack,
                    details=tuple(details), seen_by=tuple(entry.seen_by),
                )
            )
        out.sort(key=lambda f: (f.filename, f.line, f.column, f.code))
        return out


def _display_path(path: str) -> str:
    """Relative to the working directory when inside it, as ruff prints paths."""
    try:
        rel = os.path.relpath(path)
    except ValueError:  # another drive on Windows
        return path
    return path if rel.startswith("..") else rel


# --- merge with static diagnostics -------------------------------------------------------------

BOTH, STATIC_ONLY, RUNTIME_ONLY = "both", "static only", "runtime only"


def merge_with_static(trace_findings: Iterable, static_diagnostics: Iterable[dict], root: str | None = None,
                      facts_diagnostics: Iterable[dict] | None = None) -> dict:
    """Classify each (code, file, line) as seen by both, the static analyzer only, or the tracer only.

    `trace_findings`: Finding objects or their `to_json()` dicts. `static_diagnostics`: dicts with
    `code`, `filename` and `row` (or ruff-style `location: {row}`), e.g. `graphsafe check
    --format json` output. Relative paths are resolved against `root` (default: the working
    directory). Returns {"both": [...], "static only": [...], "runtime only": [...], "counts": {...}},
    each entry {code, filename, row, runtime, static}, sorted by file, row and code.

    `facts_diagnostics`: the same check run with this run's facts (analyzer/run_facts.py). A
    hazard it adds counts as seen statically, and each entry says who saw it statically
    (`static_by`: "static alone", "facts", or None: only the run); "by facts" counts them.
    """
    runtime: dict[tuple, dict] = {}
    for finding in trace_findings:
        item = finding.to_json() if isinstance(finding, Finding) else dict(finding)
        runtime.setdefault(_merge_key(item, root), item)
    static = _static_by_key(static_diagnostics, root)
    alone = set(static)
    for key, diagnostic in _static_by_key(facts_diagnostics or (), root).items():
        static.setdefault(key, diagnostic)

    merged: dict[str, list[dict]] = {BOTH: [], STATIC_ONLY: [], RUNTIME_ONLY: []}
    for key in sorted(set(runtime) | set(static), key=lambda k: (k[1], k[2], k[0])):
        in_runtime, in_static = key in runtime, key in static
        status = BOTH if in_runtime and in_static else (RUNTIME_ONLY if in_runtime else STATIC_ONLY)
        code, filename, row = key
        entry = {"code": code, "filename": filename, "row": row, "runtime": runtime.get(key), "static": static.get(key)}
        if facts_diagnostics is not None:
            entry["static_by"] = "static alone" if key in alone else "facts" if in_static else None
        merged[status].append(entry)
    result = {**merged, "counts": {status: len(entries) for status, entries in merged.items()}}
    if facts_diagnostics is not None:
        result["by facts"] = sum(e["static_by"] == "facts" for entries in merged.values() for e in entries)
    return result


def _static_by_key(diagnostics: Iterable[dict], root: str | None) -> dict[tuple, dict]:
    static: dict[tuple, dict] = {}
    for diagnostic in diagnostics:
        # a grouped hazard (json "also": its other uses) is seen on each of its uses' lines
        for use in [diagnostic, *({"code": diagnostic.get("code"), "filename": diagnostic.get("filename"),
                                   "row": other["location"]["row"]} for other in diagnostic.get("also", ()))]:
            static.setdefault(_merge_key(use, root), dict(diagnostic))
    return static


def _merge_key(item: dict, root: str | None) -> tuple[str, str, int]:
    try:
        code = str(item["code"])
        filename = str(item["filename"])
        row = item["row"] if "row" in item else item["location"]["row"]
    except (KeyError, TypeError) as error:
        raise ValueError(f"not a diagnostic (needs code, filename, row): {item!r}") from error
    if not os.path.isabs(filename):
        filename = os.path.join(root or os.getcwd(), filename)
    return code, os.path.normcase(os.path.realpath(filename)), int(row)
