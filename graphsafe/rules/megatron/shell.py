"""Launch scripts (`*.sh`) → Megatron settings → FileFacts, for the GS8 rules only.

A small lexer for the shell syntax launch scripts use: words with quotes ('…', "…", \\x),
backslash line continuations, comments, `;`/`&&`/`|` and newlines between commands,
arrays `ARGS=( … )`, `$(…)`/`${…}`/backticks kept verbatim (their value is unknown), and
here-documents skipped. Every character of a word keeps its source line and column, so a
diagnostic points at the flag itself, also inside `CG_FLAGS="--cuda-graph-impl local …"`.

A `# noqa` comment cannot follow a backslash continuation, so a noqa anywhere on a command
that spans several lines applies to all of its lines.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from graphsafe.analyzer.facts import FileFacts
from graphsafe.analyzer.noqa import noqa_directives, noqa_lines
from graphsafe.model import Diagnostic, Hit, Position
from graphsafe.rules.megatron.settings import TRIGGER_WORDS, Recipe
from graphsafe.rules.megatron.tokens import SEPARATOR, settings_from_words
from graphsafe.rules.parse_error import ParseError

_HEREDOC = re.compile(r"<<(-?)\s*(['\"]?)([A-Za-z_][A-Za-z0-9_]*)\2")
_SEPARATORS = ";&|()"


@dataclass(frozen=True)
class Span:
    start: Position
    end: Position


@dataclass
class Word:
    text: str
    spots: list[tuple[int, int]]  # (line, column) of each character of `text`
    end: tuple[int, int]

    def span(self, first: int = 0, last: int | None = None) -> Span:
        last = len(self.text) if last is None else last
        start = self.spots[first] if self.spots else self.end
        end = (self.spots[last - 1][0], self.spots[last - 1][1] + 1) if last > first and self.spots else self.end
        return Span(Position(*start), Position(*end))


class ShellSyntaxError(Exception):
    def __init__(self, message: str, line: int, column: int) -> None:
        super().__init__(message)
        self.line, self.column = line, column


class _Lexer:
    def __init__(self, text: str) -> None:
        self.text = text
        self.i = 0
        self.line, self.col = 1, 0
        self.items: list[Word | None] = []
        self.commands: list[tuple[int, int]] = []  # (first, last) line of continued commands
        self.command_start: int | None = None
        self.heredocs: list[tuple[str, bool]] = []

    def peek(self, ahead: int = 0) -> str:
        j = self.i + ahead
        return self.text[j] if j < len(self.text) else ""

    def advance(self) -> str:
        ch = self.text[self.i]
        self.i += 1
        if ch == "\n":
            self.line, self.col = self.line + 1, 0
        else:
            self.col += 1
        return ch

    def separator(self) -> None:
        if self.items and self.items[-1] is not SEPARATOR:
            self.items.append(SEPARATOR)

    def end_line(self) -> None:
        if self.command_start is not None and self.command_start < self.line:
            self.commands.append((self.command_start, self.line))
        self.command_start = None
        self.separator()

    def run(self) -> None:
        text = self.text
        while self.i < len(text):
            ch = self.peek()
            if ch == "\\" and self.peek(1) == "\n":
                self.advance()
                self.advance()
            elif ch in " \t\r":
                self.advance()
            elif ch == "\n":
                self.end_line()
                self.advance()
                self.skip_heredocs()
            elif ch == "#":
                while self.i < len(text) and self.peek() != "\n":
                    self.advance()
            elif ch in _SEPARATORS:
                self.advance()
                self.separator()
            elif ch == "<" and self.peek(1) == "<":
                m = _HEREDOC.match(text, self.i)
                if m and not text.startswith("<<<", self.i):
                    self.heredocs.append((m.group(3), m.group(1) == "-"))
                    for _ in range(m.end() - self.i):
                        self.advance()
                else:
                    self.advance()
                    self.advance()
            else:
                if self.command_start is None:
                    self.command_start = self.line
                self.word()
        self.end_line()

    def skip_heredocs(self) -> None:
        while self.heredocs:
            marker, _ = self.heredocs.pop(0)
            while self.i < len(self.text):
                end = self.text.find("\n", self.i)
                line = self.text[self.i:] if end == -1 else self.text[self.i:end]
                for _ in range(len(line) + (end != -1)):
                    self.advance()
                if line.strip() == marker:
                    break

    def word(self) -> None:
        chars: list[str] = []
        spots: list[tuple[int, int]] = []

        def take(ch: str, at: tuple[int, int]) -> None:
            chars.append(ch)
            spots.append(at)

        text = self.text
        while self.i < len(text):
            ch = self.peek()
            at = (self.line, self.col)
            if ch in " \t\r\n;&|()":
                break
            if ch == "\\":
                self.advance()
                if self.i < len(text):
                    nxt = self.advance()
                    if nxt != "\n":
                        take(nxt, at)
            elif ch == "'":
                self.advance()
                while True:
                    if self.i >= len(text):
                        raise ShellSyntaxError("unterminated single quote", *at)
                    spot = (self.line, self.col)
                    c = self.advance()
                    if c == "'":
                        break
                    take(c, spot)
            elif ch == '"':
                self.advance()
                while True:
                    if self.i >= len(text):
                        raise ShellSyntaxError("unterminated double quote", *at)
                    spot = (self.line, self.col)
                    c = self.advance()
                    if c == '"':
                        break
                    if c == "\\" and self.peek() in ('"', "\\", "$", "`", "\n"):
                        escaped = self.advance()
                        if escaped != "\n":
                            take(escaped, spot)
                        continue
                    take(c, spot)
            elif ch == "$" and self.peek(1) in "({":
                self.balanced(take)
            elif ch == "`":
                take(self.advance(), at)
                while True:
                    if self.i >= len(text):
                        raise ShellSyntaxError("unterminated backquote", *at)
                    spot = (self.line, self.col)
                    c = self.advance()
                    take(c, spot)
                    if c == "`":
                        break
            else:
                take(self.advance(), at)
        if chars:
            self.items.append(Word("".join(chars), spots, (self.line, self.col)))

    def balanced(self, take) -> None:
        """`$(…)` or `${…}`, kept verbatim (a `$` makes the value unknown)."""
        start = (self.line, self.col)
        take(self.advance(), start)
        opener = self.peek()
        closer = ")" if opener == "(" else "}"
        depth = 0
        while True:
            if self.i >= len(self.text):
                raise ShellSyntaxError(f"unterminated `${opener}`", *start)
            spot = (self.line, self.col)
            c = self.advance()
            take(c, spot)
            if c == opener:
                depth += 1
            elif c == closer:
                depth -= 1
                if depth == 0:
                    return


def lex(text: str) -> tuple[list[Word | None], list[tuple[int, int]]]:
    lexer = _Lexer(text)
    lexer.run()
    return lexer.items, lexer.commands


_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")


def words_for_settings(items: list[Word | None]) -> list[tuple[str, Span] | None]:
    """Words as (text, span); a word holding flags (`CG_FLAGS="--cuda-graph-impl …"`, the
    command of `bash -c "…"`) is also split into its own words, each with its own position."""
    out: list[tuple[str, Span] | None] = []
    for item in items:
        if item is SEPARATOR:
            out.append(SEPARATOR)
            continue
        out.append((item.text, item.span()))
        m = _ASSIGNMENT.match(item.text)
        start = m.end() if m else 0
        if "--" in item.text[start:] and any(c in item.text[start:] for c in " \t\n"):
            # flags inside one word: `FLAGS="--cuda-graph-impl local …"`, `bash -c "python … --flag"`
            out.append(SEPARATOR)
            for first, last in _pieces(item.text, start):
                out.append((item.text[first:last], item.span(first, last)))
            out.append(SEPARATOR)
    return out


def _pieces(text: str, start: int):
    for m in re.finditer(r"\S+", text[start:]):
        yield start + m.start(), start + m.end()


_NOT_INVOCATIONS = frozenset({"export", "declare", "local", "readonly", "typeset", "set", "unset"})


def _commands(words: list[tuple[str, Span] | None]) -> list[list[tuple[str, Span]]]:
    commands: list[list[tuple[str, Span]]] = [[]]
    for word in words:
        if word is SEPARATOR:
            if commands[-1]:
                commands.append([])
        else:
            commands[-1].append(word)
    return [c for c in commands if c]


def _is_invocation(command: list[tuple[str, Span]]) -> bool:
    """`torchrun …`, `python …`, `srun …`: not an assignment, an export or array elements."""
    for text, _ in command:
        if _ASSIGNMENT.match(text):
            continue  # `VAR=x torchrun …` still runs torchrun
        return not text.startswith("-") and text not in _NOT_INVOCATIONS
    return False


def recipes_of(text: str) -> tuple[list[Recipe], list[tuple[int, int]]]:
    """One recipe per program the script runs; variables, arrays and exports (file level)
    belong to every one of them."""
    items, continued = lex(text)
    shared: list = []
    runs: list[list] = []
    order = 0
    for command in _commands(words_for_settings(items)):
        settings = settings_from_words([*command, SEPARATOR])
        for setting in settings:
            setting.order = order
            order += 1
        (runs.append(settings) if _is_invocation(command) else shared.extend(settings))
    recipes = [Recipe(sorted(shared + own, key=lambda s: s.order)) for own in runs if own]
    if not recipes or not any(runs):
        recipes.append(Recipe(shared))
    return recipes, continued


def analyze_shell(path: str, module: str, text: str, rules) -> FileFacts:
    """FileFacts for a launch script: the GS8 rules' findings as file-level hits."""
    lines = text.splitlines()
    noqa = noqa_lines(lines)
    directives = noqa_directives(lines, python=False)
    if not any(word in text for word in TRIGGER_WORDS):
        return FileFacts(path, module, (), (), (), (), noqa, noqa_directives=directives)
    try:
        recipes, commands = recipes_of(text)
    except ShellSyntaxError as error:
        return _error(path, module, f"shell syntax: {error}; launch settings in this file were not checked",
                      error.line, error.column)
    except RecursionError:
        return _error(path, module, "shell script nesting too deep to analyse; file skipped")
    hits: list[Hit] = []
    seen: set[tuple[str, Position]] = set()
    for rule in rules:
        if not hasattr(rule, "findings"):
            continue
        checker = rule()
        for setting, fields in (f for recipe in recipes for f in checker.findings(recipe)):
            span: Span = setting.anchor
            if (rule.code, span.start) in seen:
                continue
            seen.add((rule.code, span.start))
            hits.append(Hit(rule.code, rule.format_message(**fields), span.start, span.end))
    return FileFacts(path, module, (), (), (), (), _spread_noqa(noqa, commands), always=tuple(hits),
                     noqa_directives=_spread_directives(directives, commands))


def _spread_noqa(noqa, commands: list[tuple[int, int]]):
    """A noqa on any line of a continued command covers every line of it."""
    by_line = dict(noqa)
    for first, last in commands:
        found = [by_line[n] for n in range(first, last + 1) if n in by_line]
        if not found:
            continue
        codes = None if any(c is None for c in found) else tuple(sorted({c for f in found for c in f}))
        for n in range(first, last + 1):
            by_line.setdefault(n, codes)
    return tuple(sorted(by_line.items()))


def _spread_directives(directives, commands: list[tuple[int, int]]):
    """Each directive covers the lines of its continued command, as _spread_noqa has it."""
    spans = {n: (first, last) for first, last in commands for n in range(first, last + 1)}
    return tuple(replace(d, covers=spans[d.line]) if d.line in spans else d for d in directives)


def _error(path: str, module: str, detail: str, line: int = 1, column: int = 0) -> FileFacts:
    start = Position(max(line, 1), max(column, 0))
    return FileFacts(path, module, (), (), (), (), (), errors=(Diagnostic(ParseError.code, detail, path, start, start),))
