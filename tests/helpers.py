"""Small helpers shared by the analyzer tests."""

from __future__ import annotations

import textwrap
from pathlib import Path

from graphsafe.analyzer.engine import check_paths, check_source
from graphsafe.analyzer.grouping import each_use
from graphsafe.config import Settings
from graphsafe.rules.base import Example

PRELUDE = "import torch\nimport torch.nn.functional as F\n\n\n"
SIGNATURE = "def step(self, x: torch.Tensor, y: torch.Tensor, n: int):"


def wrap(example: Example) -> str:
    """An example snippet as the body of a function, marked as a region unless region=False."""
    if example.module:
        return PRELUDE + textwrap.dedent(example.code).strip("\n") + "\n"
    body = textwrap.indent(textwrap.dedent(example.code).strip("\n"), "    ")
    marker = "  # graphsafe: region" if example.region else ""
    return f"{PRELUDE}{SIGNATURE}{marker}\n{body}\n"


def diagnostics(source: str, filename: str = "example.py", **settings):
    return check_source(source, filename, Settings(**settings)).diagnostics


def lines_of(source: str, code: str) -> list[int]:
    """The lines where `code` is reported in a (dedented) single-file source (each use of a
    grouped hazard: see analyzer/grouping.py)."""
    return sorted(d.start.line for d in each_use(diagnostics(textwrap.dedent(source))) if d.code == code)


def codes(source: str, **settings) -> list[str]:
    return [d.code for d in diagnostics(textwrap.dedent(source), **settings)]


def project_diagnostics(tmp_path, files: dict[str, str], **settings):
    """Write a small multi-file program into `tmp_path` and check it whole (no cache)."""
    for name, text in files.items():
        target = tmp_path / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(textwrap.dedent(text))
    return check_paths([tmp_path], Settings(root=tmp_path, **settings), use_cache=False, jobs=1).diagnostics


def project_findings(tmp_path, files: dict[str, str], code: str | None = None) -> set[tuple[str, int, str]]:
    """(file name, line, code) of each diagnostic of a small multi-file program (only `code`'s if given)."""
    return {(Path(d.path).name, d.start.line, d.code) for d in project_diagnostics(tmp_path, files)
            if code is None or d.code == code}


def run_cli(capsys, *args) -> tuple[int, str, str]:
    """`graphsafe ARGS` in-process: (exit code, stdout, stderr)."""
    from graphsafe.cli import main

    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err
