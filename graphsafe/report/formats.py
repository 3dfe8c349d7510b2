"""Output formats for diagnostics, ruff's: full and concise text, json (ruff's schema), json-lines,
sarif, github; junit and gitlab are in ci_formats.py."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from graphsafe import __version__
from graphsafe.model import Applicability, Diagnostic, Position, RegionKind
from graphsafe.report.snippet import render_snippet
from graphsafe.report.style import PLAIN, Style
from graphsafe.rules import BY_CODE


def _loc(position: Position) -> dict:
    # ruff: 1-based rows and columns
    return {"row": position.line, "column": position.column + 1}


def _region_text(d: Diagnostic) -> str | None:
    if d.region is None:
        return None
    region = d.region
    if region.kind in (RegionKind.GRAPH_BLOCK, RegionKind.CAPTURE_BEGIN):
        return region.display  # "torch.cuda.graph block in main (line 36)" says it all
    if not region.line:  # a function named by a --region/config pattern: no marker to point at
        return f"{region.display} ({region.kind.value})"
    return f"{region.display} ({region.kind.value}, {region.path}:{region.line})"


def chain_text(d: Diagnostic) -> str:
    """`root → f (called at a.py:12) → g (called at b.py:40)`: each step after the root with the
    line that calls it."""
    steps = [d.chain[0]] if d.chain else []
    for i, name in enumerate(d.chain[1:]):
        site = d.call_sites[i] if i < len(d.call_sites) else None
        steps.append(f"{name} (called at {site.path}:{site.line})" if site is not None and site.line else name)
    return " → ".join(steps)


def diagnostic_notes(d: Diagnostic) -> list[str]:
    """The lines under a diagnostic's header: its capture region and its call chain, each call
    with its line (a grouped hazard's other uses are listed in its message)."""
    if not d.chain:
        return []
    notes = [f"in capture region: {_region_text(d)}"]
    if len(d.chain) > 1:
        notes.append(f"call chain: {chain_text(d)}")
    return notes


def severity_of(code: str) -> str:
    rule = BY_CODE.get(code)
    return rule.severity().value if rule else "error"


def fix_help(fix) -> str:
    """`Title`, `Title (unsafe: why)`, or `no fix offered: why` for a withheld one."""
    if not fix.offered:
        return f"no fix offered: {fix.reason}"
    if fix.applicability is Applicability.UNSAFE:
        return f"{fix.title} (unsafe: {fix.reason})" if fix.reason else f"{fix.title} (unsafe)"
    return fix.title


@dataclass(frozen=True)
class TextOptions:
    """How `full` and `concise` text is written (ruff's printer flags)."""

    show_source: bool = False  # `full`: a snippet with carets under each diagnostic's range
    unsafe_fixes: bool = False  # unsafe fixes count as available (`--unsafe-fixes`)
    hint_unsafe: bool = False  # say how many unsafe fixes `--unsafe-fixes` would enable
    fix_command: str = "`graphsafe fix`"  # what the `[*] N fixable with ...` line names
    show_fix_status: bool = True  # `[*]` markers; off after `--fix` (what is left was not fixed by it)
    fixed: int = 0  # fixed by this run (`check --fix`): the summary counts them
    style: Style = PLAIN
    sources: Callable[[str], list[str] | None] | None = None  # a file's lines, for snippets


def fixable(d: Diagnostic, unsafe_fixes: bool = False) -> bool:
    """The diagnostic carries a fix that `--fix` applies (unsafe ones only with `--unsafe-fixes`)."""
    return d.fix is not None and d.fix.offered and (d.fix.applicability is Applicability.SAFE or unsafe_fixes)


def _hidden_unsafe(d: Diagnostic) -> bool:
    return d.fix is not None and d.fix.offered and d.fix.applicability is Applicability.UNSAFE


def format_text(diagnostics: list[Diagnostic], *, show_fixes: bool = True, files: int | None = None,
                options: TextOptions = TextOptions()) -> str:
    """`concise` (one header line per diagnostic, then its region, chain and help lines), or
    `full` with `options.show_source` (ruff >= 0.5's default: a source snippet under each);
    then the summary."""
    return text_body(diagnostics, options, show_fixes=show_fixes) + "\n".join(text_summary(diagnostics, options)) + "\n"


def text_body(diagnostics: list[Diagnostic], options: TextOptions = TextOptions(), *, show_fixes: bool = True) -> str:
    """The diagnostics of format_text, without the summary."""
    style = options.style
    lines: list[str] = []
    for d in diagnostics:
        marker = " " + style.fixable("[*]") if options.show_fix_status and fixable(d, options.unsafe_fixes) else ""
        lines.append(f"{style.bold(d.path)}:{d.start.line}:{d.start.column + 1}: {style.code(d.code)}{marker} {d.message}")
        notes = diagnostic_notes(d)
        help_line = f"help: {fix_help(d.fix)}" if d.fix is not None and show_fixes else None
        if not options.show_source:
            lines.extend(f"  {note}" for note in notes)
            if help_line:
                lines.append(f"  {help_line}")
            continue
        source = options.sources(d.path) if options.sources else None
        lines.extend(render_snippet(source or [], d.start, d.end, style.code(d.code), style))
        lines.extend(f"  = note: {note}" for note in notes)
        if help_line:
            lines.append(f"  = {help_line}")
        lines.append("")
    return "".join(line + "\n" for line in lines)


def text_summary(diagnostics: list[Diagnostic], options: TextOptions) -> list[str]:
    """ruff's closing lines: how many were found (and fixed), and what `--fix` would do."""
    remaining, fixed = len(diagnostics), options.fixed
    lines = []
    if fixed:
        total = fixed + remaining
        lines.append(f"Found {total} error{'s' if total != 1 else ''} ({fixed} fixed, {remaining} remaining).")
    elif remaining:
        lines.append(f"Found {remaining} {'error' if remaining == 1 else 'errors'}.")
    else:
        lines.append(options.style.passed("All checks passed!"))
    available = sum(fixable(d, options.unsafe_fixes) for d in diagnostics)
    hidden = 0 if options.unsafe_fixes or not options.hint_unsafe else sum(_hidden_unsafe(d) for d in diagnostics)
    marker = options.style.fixable("[*]")
    hint = f"{hidden} hidden fix{'es' if hidden != 1 else ''} can be enabled with the `--unsafe-fixes` option"
    if available and hidden:
        lines.append(f"{marker} {available} fixable with {options.fix_command} ({hint}).")
    elif available:
        lines.append(f"{marker} {available} fixable with {options.fix_command}.")
    elif hidden:
        lines.append(f"No fixes available ({hint}).")
    return lines


def fix_summary(applied: list[Diagnostic], style: Style = PLAIN) -> str:
    """`--show-fixes` after `--fix`: what was fixed, per file and code (ruff's enumeration)."""
    if not applied:
        return ""
    by_file: dict[str, dict[str, int]] = {}
    for d in applied:
        counts = by_file.setdefault(d.path, {})
        counts[d.code] = counts.get(d.code, 0) + 1
    width = len(str(max(n for counts in by_file.values() for n in counts.values())))
    lines = [f"{style.passed('Fixed')} {len(applied)} error{'s' if len(applied) != 1 else ''}:"]
    for path in sorted(by_file):
        lines.append(f"- {style.bold(path)}:")
        for code, count in sorted(by_file[path].items()):
            rule = BY_CODE.get(code)
            lines.append(f"    {str(count).rjust(width)} × {style.code(code)} ({rule.name if rule else code})")
    return "\n".join(lines) + "\n"


def _fix_json(d: Diagnostic) -> dict | None:
    if d.fix is None or not d.fix.offered:
        return None
    return {
        "applicability": d.fix.applicability.value,
        "message": d.fix.title,
        "edits": [
            {"content": e.content, "location": _loc(e.start), "end_location": _loc(e.end)} for e in d.fix.edits
        ],
    }


def to_json_objects(diagnostics: list[Diagnostic]) -> list[dict]:
    out = []
    for d in diagnostics:
        rule = BY_CODE.get(d.code)
        out.append(
            {
                "cell": None,
                "code": d.code,
                "end_location": _loc(d.end),
                "filename": d.path,
                "fix": _fix_json(d),
                "location": _loc(d.start),
                "message": d.message,
                "noqa_row": d.start.line,
                "url": rule.url() if rule else None,
                "severity": severity_of(d.code),
                "region": None
                if d.region is None
                else {
                    "name": d.region.display,
                    "kind": d.region.kind.value,
                    "confidence": d.region.confidence.value,
                    "filename": d.region.path,
                    "row": d.region.line,
                },
                "chain": list(d.chain),
                "call_sites": [{"filename": site.path, "row": site.line} for site in d.call_sites],
                # the same hazard's other uses (grouped: see analyzer/grouping.py), each with its fix
                "also": [{"location": _loc(u.start), "end_location": _loc(u.end), "fix": _fix_json(u)} for u in d.also],
            }
        )
    return out


_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def valid_utf8(json_text: str) -> str:
    """A file name that is not UTF-8 holds surrogate escapes (PEP 383); as JSON `\\udcXX`
    escapes the output stays valid UTF-8, and json.loads gives back the very name Python uses."""
    return _LONE_SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", json_text)


def format_json(diagnostics: list[Diagnostic]) -> str:
    """A JSON array with one diagnostic per line (the C encoder: an indented dump of a whole
    tree's diagnostics took longer than reading them from the cache)."""
    objects = to_json_objects(diagnostics)
    if not objects:
        return "[]\n"
    return valid_utf8("[\n" + ",\n".join(json.dumps(o, ensure_ascii=False) for o in objects) + "\n]\n")


def _sarif_region(start: Position, end: Position) -> dict:
    region = {"startLine": max(start.line, 1), "startColumn": start.column + 1}
    if end.line >= start.line and end.line > 0:
        region["endLine"] = end.line
        region["endColumn"] = end.column + 1
    return region


def _uri(path: str) -> str:
    return Path(path).as_posix()


def _sarif_related(d: Diagnostic) -> list[dict]:
    """The capture region's marker, each call of the chain, and the hazard's other uses."""
    places: list[tuple[str, str, dict]] = []
    if d.region is not None and d.region.path and d.region.line:
        places.append((f"capture region: {d.region.display}", d.region.path, {"startLine": d.region.line}))
    for i, site in enumerate(d.call_sites):
        if site.line and i + 1 < len(d.chain):
            places.append((f"called from here: {d.chain[i]} calls {d.chain[i + 1]}", site.path, {"startLine": site.line}))
    for use in d.also:
        places.append(("also used here", use.path, _sarif_region(use.start, use.end)))
    return [
        {
            "id": i,
            "message": {"text": text},
            "physicalLocation": {"artifactLocation": {"uri": _uri(path), "uriBaseId": "%SRCROOT%"}, "region": region},
        }
        for i, (text, path, region) in enumerate(places)
    ]


def format_sarif(diagnostics: list[Diagnostic]) -> str:
    codes = sorted({d.code for d in diagnostics} | set())
    rule_index = {code: i for i, code in enumerate(codes)}
    rules = []
    for code in codes:
        rule = BY_CODE.get(code)
        if rule is None:
            rules.append({"id": code})
            continue
        rules.append(
            {
                "id": code,
                "name": rule.name,
                "shortDescription": {"text": rule.summary},
                "fullDescription": {"text": rule.docs()},
                "help": {"text": rule.docs(), "markdown": rule.docs()},
                "helpUri": rule.url(),
                "defaultConfiguration": {"level": "warning" if rule.severity().value == "warning" else "error"},
                "properties": {"principle": rule.principle.value, "consequence": rule.consequence.value},
            }
        )
    results = []
    for d in diagnostics:
        text = d.message
        if d.chain:
            text += f" (region {_region_text(d)}; chain: {chain_text(d)})"
        result = {
            "ruleId": d.code,
            "ruleIndex": rule_index[d.code],
            "level": "warning" if severity_of(d.code) == "warning" else "error",
            "message": {"text": text},
            "locations": [
                {
                    "physicalLocation": {
                        "artifactLocation": {"uri": _uri(d.path), "uriBaseId": "%SRCROOT%"},
                        "region": _sarif_region(d.start, d.end),
                    }
                }
            ],
        }
        related = _sarif_related(d)
        if related:
            result["relatedLocations"] = related
        if d.fix is not None and d.fix.offered:
            result["fixes"] = [
                {
                    "description": {"text": fix_help(d.fix)},
                    "artifactChanges": [
                        {
                            "artifactLocation": {"uri": _uri(d.path), "uriBaseId": "%SRCROOT%"},
                            "replacements": [
                                {
                                    "deletedRegion": _sarif_region(e.start, e.end),
                                    "insertedContent": {"text": e.content},
                                }
                                for e in d.fix.edits
                            ],
                        }
                    ],
                }
            ]
        results.append(result)
    log = {
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "graphsafe",
                        "version": __version__,
                        "informationUri": "https://github.com/graphsafe/graphsafe",
                        "rules": rules,
                    }
                },
                "results": results,
                # what our rows and columns count (graphsafe.lines); SARIF's default line breaks
                # are "\r\n" and "\n" only, which would misplace results in a file with "\r" endings
                "columnKind": "unicodeCodePoints",
                "newlineSequences": ["\r\n", "\r", "\n"],
            }
        ],
    }
    return valid_utf8(json.dumps(log, indent=2, ensure_ascii=False) + "\n")


def _escape_property(value: str) -> str:
    return value.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A").replace(":", "%3A").replace(",", "%2C")


def _escape_data(value: str) -> str:
    return value.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def format_github(diagnostics: list[Diagnostic]) -> str:
    lines = []
    for d in diagnostics:
        level = "warning" if severity_of(d.code) == "warning" else "error"
        message = f"{d.code} {d.message}"
        if d.chain:
            message += f" (chain: {chain_text(d)})"
        props = (
            f"title={_escape_property('graphsafe (' + d.code + ')')},file={_escape_property(d.path)},"
            f"line={d.start.line},col={d.start.column + 1},endLine={d.end.line},endColumn={d.end.column + 1}"
        )
        lines.append(f"::{level} {props}::{_escape_data(message)}")
    return "\n".join(lines) + ("\n" if lines else "")


def format_json_lines(diagnostics: list[Diagnostic]) -> str:
    """One JSON object a line, the `json` schema (ruff's `json-lines`)."""
    return valid_utf8("".join(json.dumps(o, ensure_ascii=False) + "\n" for o in to_json_objects(diagnostics)))


from graphsafe.report.ci_formats import format_gitlab, format_junit  # noqa: E402  (they use severity_of)

# The machine-readable formats; `full` and `concise` are text (format_text), written by the CLI.
FORMATTERS = {
    "json": format_json, "json-lines": format_json_lines, "junit": format_junit, "gitlab": format_gitlab,
    "sarif": format_sarif, "github": format_github,
}
OUTPUT_FORMATS = ("full", "concise", *FORMATTERS)
