"""Formats CI systems read: JUnit XML (test reports) and GitLab Code Quality (Code Climate JSON),
with the fields ruff's `junit` and `gitlab` output formats give them."""

from __future__ import annotations

import hashlib
import json
import os
import re
from pathlib import Path
from xml.etree import ElementTree

from graphsafe.model import Diagnostic
from graphsafe.report.formats import severity_of, valid_utf8

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
            failure.text = _xml_text(f"line {d.start.line}, col {d.start.column + 1}, {d.message}")
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
    while the finding does (code, message, file; a counter tells identical ones apart)."""
    issues, seen = [], {}
    for d in diagnostics:
        path = _gitlab_path(d.path)
        identity = f"{d.code}\0{d.message}\0{path}"
        seen[identity] = seen.get(identity, 0) + 1
        fingerprint = hashlib.blake2b(f"{identity}\0{seen[identity]}".encode("utf-8", "surrogateescape"),
                                      digest_size=8).hexdigest()
        issues.append({
            "check_name": d.code,
            "description": f"{d.code}: {d.message}",
            "severity": "minor" if severity_of(d.code) == "warning" else "major",
            "fingerprint": fingerprint,
            "location": {
                "path": path,
                "positions": {
                    "begin": {"line": d.start.line, "column": d.start.column + 1},
                    "end": {"line": max(d.end.line, d.start.line), "column": d.end.column + 1},
                },
            },
        })
    return valid_utf8(json.dumps(issues, indent=2, ensure_ascii=False) + "\n")
