"""`graphsafe fix`: apply fixes file by file, in rounds, and write only results that pass checks.

A file is written only if the fixed text parses, re-analysis no longer reports the fixed
hazards, the file did not change on disk since it was read, and its encoding, BOM and line
endings are kept. A file is fixed once whatever the names it is found under (links), and
written through symbolic links, keeping hard links (see writing.py).

Every edit of a Fix applies to the file of its diagnostic: a rewrite that spans functions (the
GS301 buffer: `__init__`, the region, its callers) is offered only when all of them are in that
file, so each file keeps these guarantees on its own.
"""

from __future__ import annotations

import difflib
import os
from dataclasses import dataclass, field
from pathlib import Path

from graphsafe.analyzer import run_facts
from graphsafe.analyzer.discovery import ModuleNaming, module_names
from graphsafe.analyzer.engine import CheckResult, check_paths, check_source, filter_diagnostics
from graphsafe.analyzer.facts import FileFacts
from graphsafe.analyzer.grouping import each_use
from graphsafe.analyzer.parsing import decode
from graphsafe.analyzer.reading import read_source
from graphsafe.config import Settings
from graphsafe.fixes import applicable, apply_fixes, parses
from graphsafe.model import Diagnostic
from graphsafe.writing import SourceEncoding, write_fixed

MAX_ROUNDS = 10


@dataclass
class FileOutcome:
    path: str
    original: str
    fixed: str
    applied: list[Diagnostic] = field(default_factory=list)
    remaining: list[Diagnostic] = field(default_factory=list)
    error: str | None = None  # why the fixed text was not written
    facts_invalidated: list[str] = field(default_factory=list)  # functions edited whose run-time facts now fail their hash
    encoding: SourceEncoding = field(default_factory=SourceEncoding)  # the file's, for writes and patches

    @property
    def changed(self) -> bool:
        return self.fixed != self.original and self.error is None

    def messages(self) -> list[str]:
        """What `fix` says about the file besides its diagnostics: why it was not written, or the
        functions whose run-time facts the fix leaves out of date."""
        if self.error is not None:
            return [self.error]
        if self.facts_invalidated and self.changed:
            names = ", ".join(self.facts_invalidated)
            return [f"the fix edits {names}: the run-time facts recorded for {'it' if len(self.facts_invalidated) == 1 else 'them'} "
                    "no longer apply; re-run `graphsafe trace --save-facts`"]
        return []


@dataclass
class FixResult:
    outcomes: list[FileOutcome]
    remaining: list[Diagnostic]  # diagnostics left in files without fixes, plus unfixed ones
    project: CheckResult | None = None  # the check the fixes started from

    @property
    def applied(self) -> list[Diagnostic]:
        """The diagnostics whose fixes were written (or, with write=False, would be)."""
        return [d for o in self.outcomes if o.error is None for d in o.applied]


def fix_text(text: str, path: str, settings: Settings, others: list[FileFacts], unsafe: bool,
             naming: ModuleNaming | None = None) -> FileOutcome:
    """Fix one buffer in rounds until no applicable fix is left (or rounds run out)."""
    outcome = FileOutcome(path, text, text)
    current = text
    for _ in range(MAX_ROUNDS):
        # with the run-time facts of the text before these fixes: a function the fix edits no
        # longer matches its recorded hash, and losing its facts would make the re-check pass
        diagnostics = check_source(current, path, settings, others, naming, facts_text=text).diagnostics
        todo = [d for d in each_use(diagnostics) if applicable(d, unsafe)]
        if not todo:
            outcome.remaining = diagnostics
            break
        result = apply_fixes(current, todo, unsafe=unsafe)
        if not result.fixed:
            outcome.remaining = diagnostics
            break
        if not parses(result.text):
            # Fixes that are fine alone can clash together (removing every statement of a
            # block): apply the first one alone; the next round re-analyses the rest.
            result = apply_fixes(current, [result.fixed[0]], unsafe=unsafe)
            if not parses(result.text):
                outcome.error = f"the fix for {result.fixed[0].code} produced invalid syntax; file left unchanged"
                return outcome
        outcome.applied.extend(result.fixed)
        current = result.text
    else:
        outcome.error = f"fixes did not converge in {MAX_ROUNDS} rounds; file left unchanged"
        return outcome
    still = [d for d in each_use(outcome.remaining) if applicable(d, unsafe)]
    if still:
        outcome.error = "re-analysis still reports fixable hazards; file left unchanged"
        return outcome
    outcome.fixed = current
    run = run_facts.for_settings(settings)
    if run is not None and current != text:
        outcome.facts_invalidated = run.invalidated(path, text, current)
    return outcome


def fix_paths(paths: list[Path], settings: Settings, *, unsafe: bool = False, write: bool = True,
              jobs: int | None = None, use_cache: bool = True, cache_dir: Path | None = None,
              project: CheckResult | None = None) -> FixResult:
    """Fix the files under `paths`; `project` is their check when the caller has run it already."""
    if project is None:
        project = check_paths(paths, settings, jobs=jobs, use_cache=use_cache, cache_dir=cache_dir)
    outcomes: list[FileOutcome] = []
    remaining: list[Diagnostic] = []
    naming = module_names([Path(f.path) for f in project.facts], Path.cwd())
    by_path: dict[str, list[Diagnostic]] = {}
    for d in project.diagnostics:
        by_path.setdefault(d.path, []).append(d)
    fixed_names = one_name_per_file(list(by_path))
    for path, diagnostics in sorted(by_path.items()):
        if path not in fixed_names:
            continue  # another name of a file fixed (and reported) under its chosen name
        if not any(applicable(d, unsafe) for d in each_use(diagnostics)):
            remaining.extend(diagnostics)
            continue
        file_path = Path(path)
        read = read_text(file_path)
        if isinstance(read, str):
            outcomes.append(FileOutcome(path, "", "", remaining=diagnostics, error=f"cannot read: {read}"))
            remaining.extend(diagnostics)
            continue
        original_bytes, text = read
        others = [f for f in project.facts if f.path != path]
        outcome = fix_text(text, path, settings, others, unsafe, naming.get(file_path))
        data = _encoded_like(outcome, original_bytes)
        if data is not None and write:
            outcome.error = write_fixed(file_path, data, original_bytes)
        if outcome.error is not None:
            outcome.remaining = diagnostics
        outcomes.append(outcome)
        remaining.extend(outcome.remaining)
    kept = filter_diagnostics(remaining, project.facts, settings, find_unused_noqa=False)  # filtered once
    return FixResult(outcomes, sorted(kept, key=lambda d: d.sort_key), project)


def read_text(path: Path) -> tuple[bytes, str] | str:
    """(the file's bytes, its text without a BOM), or why it cannot be read."""
    content = read_source(path)
    if isinstance(content, str):
        return content
    try:
        return content, decode(content).removeprefix("\ufeff")
    except (UnicodeDecodeError, SyntaxError) as error:
        return str(error)


def fix_buffer(content: bytes, filename: str, settings: Settings, unsafe: bool) -> tuple[FileOutcome, bytes]:
    """Fix a buffer (stdin) alone: the outcome and the bytes to print (the fixed buffer, or the
    buffer unchanged when the fix was refused). Raises UnicodeDecodeError/SyntaxError on bad input."""
    outcome = fix_text(decode(content).removeprefix("\ufeff"), filename, settings, [], unsafe)
    data = _encoded_like(outcome, content)
    return outcome, content if data is None else data


def _encoded_like(outcome: FileOutcome, original: bytes) -> bytes | None:
    """The fixed text in the encoding and BOM of `original` (recorded on the outcome); None when
    there is nothing to write or it cannot be encoded (then `outcome.error` says so)."""
    outcome.encoding = SourceEncoding.of(original)
    if outcome.error is not None or outcome.fixed == outcome.original:
        return None
    try:
        return outcome.encoding.encode(outcome.fixed)
    except UnicodeEncodeError:
        outcome.error = f"fixed text cannot be encoded as {outcome.encoding.encoding}; file left unchanged"
        return None


def one_name_per_file(paths: list[str]) -> set[str]:
    """Of several names of one file (symbolic links, hard links, the file itself), the one to
    fix: the file itself when it is among them, else the first. Fixing every name would fix the
    file once and then find it changed on disk under the next name."""
    chosen: dict[object, str] = {}
    for path in sorted(paths, key=lambda p: (os.path.islink(p), p)):
        try:
            info = os.stat(path)
            identity: object = (info.st_dev, info.st_ino)
        except OSError:  # unreadable: reported under its own name
            identity = path
        chosen.setdefault(identity, path)
    return set(chosen.values())


def unified_diff(outcome: FileOutcome) -> str:
    """The fix as a unified diff (text); `diff_bytes` is what `patch` and `git apply` take."""
    hunks = _hunks(outcome)
    return os.fsdecode(_headers(outcome.path)) + hunks if hunks else ""


def diff_bytes(outcome: FileOutcome) -> bytes:
    """The fix as a patch of the file on disk: its name as the file system spells it, its lines
    in the file's own encoding (and BOM), so that `patch -p1` and `git apply` take it."""
    hunks = _hunks(outcome)
    return _headers(outcome.path) + hunks.encode(outcome.encoding.encoding) if hunks else b""


_NO_NEWLINE = "\n\\ No newline at end of file\n"


def _hunks(outcome: FileOutcome) -> str:
    """The diff's hunks. Lines end at "\\n" only, as patch tools count them (splitlines also
    splits at \\r, \\f, \\x1c...: a form feed in a file would shift every hunk after it); a
    last line without a newline is followed by patch's marker saying so."""
    bom = "\ufeff" if outcome.encoding.bom else ""  # on disk, line 1 starts with it
    lines = difflib.unified_diff(_lines(bom + outcome.original), _lines(bom + outcome.fixed), lineterm="\n")
    body = [line if line.endswith("\n") else line + _NO_NEWLINE for line in list(lines)[2:]]
    return "".join(body)


def _lines(text: str) -> list[str]:
    lines = text.split("\n")
    return [line + "\n" for line in lines[:-1]] + ([lines[-1]] if lines[-1] else [])


def _headers(path: str) -> bytes:
    return b"--- " + _patch_name(b"a/", path) + b"\n+++ " + _patch_name(b"b/", path) + b"\n"


def _patch_name(prefix: bytes, path: str) -> bytes:
    """A file name as git writes it in a patch: C-quoted when it holds a quote, a backslash or a
    control character, followed by a tab when it holds a space (GNU patch ends names at one)."""
    name = prefix + os.fsencode(Path(path).as_posix())
    if any(byte in b'"\\' or byte < 0x20 or byte == 0x7F for byte in name):
        escapes = {ord("\""): b'\\"', ord("\\"): b"\\\\", ord("\n"): b"\\n", ord("\t"): b"\\t"}
        quoted = b"".join(escapes.get(byte) or (b"\\%03o" % byte if byte < 0x20 or byte == 0x7F else bytes([byte]))
                          for byte in name)
        return b'"' + quoted + b'"'
    return name + b"\t" if b" " in name else name
