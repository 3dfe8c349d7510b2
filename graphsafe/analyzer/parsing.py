"""Bytes → FileFacts for one file, turning every kind of bad input into one GS000 diagnostic
(and a failure of our own analysis outside any function into one GS002)."""

from __future__ import annotations

import ast
import gc
import io
import signal
import threading
import tokenize
from contextlib import contextmanager

import libcst as cst

from graphsafe.analyzer.facts import FileFacts
from graphsafe.analyzer.walker import FileWalker
from graphsafe.lines import position_at
from graphsafe.model import Diagnostic, Position
from graphsafe.rules.internal_error import InternalError
from graphsafe.rules.parse_error import ParseError

# Files this large without any definition or capture call are data, not code: skip parsing
# them (libcst's cost grows with tokens; a 1 MB literal takes minutes).
LARGE_FILE_BYTES = 512 * 1024
RELEVANT_TOKENS = (b"def ", b"graph", b"capture", b"compile", b"import")
TIME_LIMIT_S = 120


class _TimeLimit(BaseException):
    """Not an Exception: the walker's per-function guard (GS002) must not swallow it."""


class _ParseTooDeep(Exception):
    """The parser itself ran out of recursion: the file cannot be parsed (GS000)."""


@contextmanager
def _time_limit(seconds: int):
    """Stop pathological files; signals only work in a process's main thread."""
    if threading.current_thread() is not threading.main_thread() or not hasattr(signal, "SIGALRM"):
        yield
        return

    def expire(signum, frame):
        raise _TimeLimit()

    previous = signal.signal(signal.SIGALRM, expire)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


@contextmanager
def no_cyclic_gc():
    """Pause the cycle collector while one file is analysed.

    A parsed module is ~100k objects; every allocation burst of the walk would otherwise
    trigger collections that scan all of them (measured: 20-30 ms of a 120 ms analysis of
    torch/_tensor.py). Syntax trees hold no reference cycles, so nothing piles up; the
    collector resumes afterwards."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


@contextmanager
def lasting_objects(freeze: bool = True):
    """Pause the cycle collector while many long-lived, acyclic objects are made (a project's
    facts read from the cache, its call graph), then hand everything alive to the permanent
    generation (gc.freeze) so that no later collection traverses it again.

    Merely pausing would only defer the work: every object made meanwhile would still be in
    the youngest generation, and the first collection afterwards would traverse them all
    (measured: the facts of 900 cached torch files, ~0.25 s of a 1.4 s warm run). Frozen
    objects are still freed by reference counting as usual; only cyclic garbage alive at
    that moment would stay (facts and call graphs hold no cycles). A long-lived process that
    collects before it freezes (the language server) passes `freeze=False`: pause only."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            if freeze:
                gc.freeze()
            gc.enable()


def error_facts(path: str, module: str, detail: str, line: int = 1, column: int = 0,
                code: str = ParseError.code) -> FileFacts:
    start = Position(max(line, 1), max(column, 0))
    diagnostic = Diagnostic(code, detail, path, start, start)
    return FileFacts(path, module, (), (), (), (), (), errors=(diagnostic,))


def source_encoding(content: bytes) -> str:
    """The encoding PEP 263 gives the file (coding cookie, BOM); raises SyntaxError for a bad cookie."""
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(content).readline)
    except SyntaxError as error:
        if "invalid or missing encoding declaration" not in str(error):
            raise
        encoding = "utf-8"  # no cookie and not UTF-8: decoding says which byte
    return encoding


def decode(content: bytes) -> str:
    """Source text per PEP 263 (coding cookie, BOM); raises UnicodeDecodeError/SyntaxError."""
    return content.decode(source_encoding(content))


def undecodable(content: bytes, error: UnicodeDecodeError) -> tuple[str, Position]:
    """What GS000 says of the first undecodable byte, and where it is, in characters like every
    other position. `error` counts in the bytes after a BOM (utf-8-sig drops it); the bytes
    before the bad one decode: that is how far decoding got."""
    encoding = source_encoding(content)
    before = error.object[: error.start].decode(encoding, "replace")
    detail = f"cannot decode file as {encoding}: byte {error.object[error.start]:#04x} is invalid"
    return detail, position_at(before, len(before))


def analyze_bytes(path: str, module: str, is_package: bool, content: bytes, rules, renames=None, external=None) -> FileFacts:
    try:
        text = decode(content)
    except UnicodeDecodeError as error:
        detail, where = undecodable(content, error)
        return error_facts(path, module, detail, where.line, where.column)
    except SyntaxError as error:  # a bad coding cookie
        return error_facts(path, module, f"bad encoding declaration: {error.msg if hasattr(error, 'msg') else error}")
    return analyze_text(path, module, is_package, text, rules, renames, external)


def analyze_text(path: str, module: str, is_package: bool, text: str, rules, renames=None, external=None,
                 parse=cst.parse_module) -> FileFacts:
    """`parse` turns text into a libcst module (an editor passes an incremental parser); `external`
    holds the kinds of other files' calls found by the project pass (a second, targeted walk)."""
    other = other_language(path)
    if other is not None:
        return _analyze_other(other, path, module, text, rules)
    if len(text) > LARGE_FILE_BYTES:
        encoded = text.encode("utf-8", "surrogateescape")
        if not any(token in encoded for token in RELEVANT_TOKENS):
            return FileFacts(path, module, (), (), (), (), ())
    try:
        with _time_limit(TIME_LIMIT_S), no_cyclic_gc():
            return _walk(path, module, is_package, text, rules, renames, external, parse)
    except cst.ParserSyntaxError as error:
        return _syntax_error_facts(path, module, text, error)
    except _TimeLimit:
        return error_facts(path, module, f"analysis took longer than {TIME_LIMIT_S} s; file skipped")
    except _ParseTooDeep:
        return error_facts(path, module, "expression nesting too deep to parse; file skipped")
    except MemoryError:
        raise
    except Exception as error:  # our bug outside any function (each function has its own guard): GS002
        detail = f": {error}" if str(error) and not isinstance(error, RecursionError) else ""
        return error_facts(path, module, f"internal error while analysing this file outside its functions "
                                         f"({type(error).__name__}{detail}); file skipped", code=InternalError.code)


def _walk(path: str, module: str, is_package: bool, text: str, rules, renames, external, parse) -> FileFacts:
    """Parse and walk in a frame of their own: the syntax tree and the walker are freed when it
    returns, before the cycle collector resumes (its first collection would otherwise traverse
    the whole tree, ~5-10 ms for a 1.7k-line file, only to find it alive)."""
    walker = FileWalker(path, module, is_package, rules, dict(renames or ()), external)
    try:
        tree = parse(text)
    except RecursionError as error:
        raise _ParseTooDeep() from error
    return walker.run(tree, text)


# Files that are not Python but carry settings some rules check: suffix → "module:function"
# returning FileFacts (file-level hits only). Discovery walks these suffixes too.
OTHER_LANGUAGES = {".sh": "graphsafe.rules.megatron.shell:analyze_shell"}


def other_language(path: str) -> str | None:
    """The analyzer of a non-Python file this tool reads (a launch script), if any."""
    dot = path.rfind(".")
    return OTHER_LANGUAGES.get(path[dot:]) if dot != -1 else None


def _analyze_other(target: str, path: str, module: str, text: str, rules) -> FileFacts:
    import importlib

    module_name, _, function = target.partition(":")
    try:
        analyze = getattr(importlib.import_module(module_name), function)
        return analyze(path, module, text, rules)
    except RecursionError:
        return error_facts(path, module, "nesting too deep to analyse; file skipped")
    except Exception as error:  # an analyzer bug must not take the run down; report it in place
        return error_facts(path, module, f"internal error while analysing this file: {type(error).__name__}: {error}")


def _syntax_error_facts(path: str, module: str, text: str, error: cst.ParserSyntaxError) -> FileFacts:
    """Python's own parser pinpoints syntax errors better than libcst's; ask it (error path only)."""
    try:
        ast.parse(text)
    except SyntaxError as precise:
        line = precise.lineno or 1
        column = (precise.offset or 1) - 1
        return error_facts(path, module, f"syntax error: {precise.msg}", line, column)
    except (ValueError, RecursionError, MemoryError):
        pass
    message = error.message.removeprefix("parser error: ")
    return error_facts(path, module, f"libcst cannot parse this file: {message}", error.raw_line, error.raw_column)
