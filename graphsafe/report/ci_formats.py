"""Formats CI systems read: JUnit XML (test reports) and GitLab Code Quality (Code Climate JSON),
with the fields ruff's `junit` and `gitlab` output formats give them."""

from __future__ import annotations

import hashlib
import json
import os
import re
from pathlib import Path
from xml.etree import ElementTree

from graphsafe.analyzer.grouping import uses
from graphsafe.model import Diagnostic
from graphsafe.report.formats import chain_text, diagnostic_notes, severity_of, valid_utf8

# XML 1.0 has no way to write these characters, not even as references
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def _xml_text(text: str) -> str:
    return _NOT_XML.sub("\ufffd", text)


def format_junit(diagnostics: list[Diagnostic]) -> str:
    """One test suite per file, one failed test case per diagnostic (ruff's layout); a clean
    run is one passing case, so that CI shows a test that ran."""
    suites = ElementTree.Element("testsuites", name="graphsafe", tests=str(len(diagnostics)),
                                 failures=str(len(diagnostics)), errors="0")
    by_file: dict[str, list[Diagnostic]] = {}
    for d in diagnostics:
        by_file.setdefault(d.path, []).append(d)
    if not by_file:
        suite = ElementTree.SubElement(suites, "testsuite", name="graphsafe", tests="1", disabled="0", errors="0",
                                       failures="0", package="org.graphsafe")
        ElementTree.SubElement(suite, "testcase", name="No errors found")
    for path, found in by_file.items():
        suite = ElementTree.SubElement(suites, "testsuite", name=_xml_text(path), tests=str(len(found)), disabled="0",
                                       errors="0", failures=str(len(found)), package="org.graphsafe")
        classname = _xml_text(Path(path).with_suffix("").as_posix().replace("/", "."))
        for d in found:
            case = ElementTree.SubElement(suite, "testcase", name=f"org.graphsafe.{d.code}", classname=classname,
                                          line=str(d.start.line), column=str(d.start.column + 1))
            failure = ElementTree.SubElement(case, "failure", message=_xml_text(d.message))
            failure.text = _xml_text("\n".join([f"line {d.start.line}, col {d.start.column + 1}, {d.message}",
                                                 *diagnostic_notes(d)]))
    ElementTree.indent(suites, space="    ")
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ElementTree.tostring(suites, encoding="unicode") + "\n"


def _gitlab_path(path: str) -> str:
    """Relative to the project checkout (CI_PROJECT_DIR, as ruff uses it), else as shown."""
    base = os.environ.get("CI_PROJECT_DIR")
    if base:
        try:
            return Path(os.path.abspath(path)).relative_to(os.path.abspath(base)).as_posix()
        except ValueError:
            pass
    return Path(path).as_posix()


def format_gitlab(diagnostics: list[Diagnostic]) -> str:
    """A Code Quality report: each issue with a fingerprint that stays the same across runs
    while the finding does (code, message, file; a counter tells identical ones apart). The
    message of a grouped hazard's first use, without the "also used at lines" that moves with
    unrelated edits; the other uses are its `other_locations` (Code Climate's field)."""
    issues, seen = [], {}
    for d in diagnostics:
        path = _gitlab_path(d.path)
        identity = f"{d.code}\0{uses(d)[0].message}\0{path}"
        seen[identity] = seen.get(identity, 0) + 1
        fingerprint = hashlib.blake2b(f"{identity}\0{seen[identity]}".encode("utf-8", "surrogateescape"),
                                      digest_size=8).hexdigest()
        description = f"{d.code}: {d.message}" + (f" (chain: {chain_text(d)})" if len(d.chain) > 1 else "")
        issue = {
            "check_name": d.code,
            "description": description,
            "severity": "minor" if severity_of(d.code) == "warning" else "major",
            "fingerprint": fingerprint,
            "location": _gitlab_location(path, d),
        }
        if d.also:
            issue["other_locations"] = [_gitlab_location(_gitlab_path(u.path), u) for u in d.also]
        issues.append(issue)
    return valid_utf8(json.dumps(issues, indent=2, ensure_ascii=False) + "\n")


def _gitlab_location(path: str, d: Diagnostic) -> dict:
    return {
        "path": path,
        "positions": {
            "begin": {"line": d.start.line, "column": d.start.column + 1},
            "end": {"line": max(d.end.line, d.start.line), "column": d.end.column + 1},
        },
    }
