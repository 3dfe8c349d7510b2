"""Bytes → FileFacts for one file, turning every kind of bad input into one GS000 diagnostic
(and a failure of our own analysis outside any function into one GS002)."""

from __future__ import annotations

import ast
import gc
import io
import tokenize
import warnings
from contextlib import contextmanager

import libcst as cst

from graphsafe.analyzer import limits
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


class _ParseTooDeep(Exception):
    """The parser itself ran out of recursion: the file cannot be parsed (GS000)."""


# CPython's own verdicts on nesting (its tokenizer's, parser's and compiler's limits): a file it
# rejects with one of these cannot run, whatever libcst (which has no such limits) makes of it
_NESTING_MESSAGES = ("too many nested", "too many levels of indentation", "too many statically nested blocks",
                     "nested too deeply", "too deeply nested", "too complex")
# Python frames per level of libcst nesting in the walk (measured: a 2,993-term sum needs ~9,000)
_FRAMES_PER_LINK = 8


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
    rejected = cpython_nesting_error(path, module, text)
    if rejected is not None:
        return rejected
    stack = limits.stack_bytes(text)
    try:
        with no_cyclic_gc():
            return limits.run_limited(_walk_deep, path, module, is_package, text, rules, renames, external, parse,
                                      stack, stack=stack)
    except cst.ParserSyntaxError as error:
        return _syntax_error_facts(path, module, text, error)
    except limits.CpuTimeExceeded:
        return error_facts(path, module, limits.cpu_limit_message())
    except _ParseTooDeep:
        return error_facts(path, module, "expression nesting too deep to parse; file skipped")
    except MemoryError:
        return error_facts(path, module, limits.memory_limit_message())
    except Exception as error:  # our bug outside any function (each function has its own guard): GS002
        detail = f": {error}" if str(error) and not isinstance(error, RecursionError) else ""
        return error_facts(path, module, f"internal error while analysing this file outside its functions "
                                         f"({type(error).__name__}{detail}); file skipped", code=InternalError.code)


def cpython_nesting_error(path: str, module: str, text: str) -> FileFacts | None:
    """A GS000 with CPython's message when CPython's compile() rejects `text` for its nesting
    (parentheses, indentation, blocks, recursion), else None. Other syntax errors are left to
    libcst, which reads newer syntax than the running interpreter (then ast pinpoints them).
    compile() costs ~5% of an analysis and stops in a few megabytes what costs libcst gigabytes."""
    try:
        with warnings.catch_warnings():  # its SyntaxWarnings (`x is 1`) are not ours to print
            warnings.simplefilter("ignore")
            compile(text, path, "exec", dont_inherit=True)
    except RecursionError as error:
        return error_facts(path, module, f"CPython cannot compile this file: {error} (nesting too deep); file skipped")
    except MemoryError:  # CPython's parser says so when its stack of nested rules overflows
        return error_facts(path, module, "CPython cannot compile this file: MemoryError (its parser's nesting limit); "
                                         "file skipped")
    except SyntaxError as error:
        if any(words in str(error.msg) for words in _NESTING_MESSAGES):
            return error_facts(path, module, f"CPython rejects this file: {error.msg}; file skipped",
                               error.lineno or 1, (error.offset or 1) - 1)
    except (ValueError, OverflowError):  # NUL bytes and the like: libcst's and ast's verdict follows
        pass
    return None


def _walk_deep(path: str, module: str, is_package: bool, text: str, rules, renames, external, parse, stack: int) -> FileFacts:
    """`_walk`, again with a raised recursion limit when the tree is deeper than the default
    allows (a 2,000-term sum, which CPython compiles); the thread's stack is sized for it."""
    try:
        return _walk(path, module, is_package, text, rules, renames, external, parse, False)
    except (RecursionError, _ParseTooDeep):
        pass
    depth = (stack // limits.STACK_PER_LINK) * _FRAMES_PER_LINK
    return limits.run_with_recursion_limit(depth, _walk, path, module, is_package, text, rules, renames, external,
                                           parse, True)


def _walk(path: str, module: str, is_package: bool, text: str, rules, renames, external, parse,
          last_try: bool = True) -> FileFacts:
    """Parse and walk in a frame of their own: the syntax tree and the walker are freed when it
    returns, before the cycle collector resumes (its first collection would otherwise traverse
    the whole tree, ~5-10 ms for a 1.7k-line file, only to find it alive). Before the last try a
    function's RecursionError is not its GS002 but a reason to try again with a deeper stack."""
    walker = FileWalker(path, module, is_package, rules, dict(renames or ()), external)
    walker.reraise_recursion = not last_try
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
