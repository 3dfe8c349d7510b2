"""Code actions from diagnostics: quick fixes, `# noqa` edits and `source.fixAll.graphsafe`.

Pure functions of (text, diagnostics, request): the server supplies the analysis.
"""

from __future__ import annotations

import functools
from typing import Callable, Iterable

from lsprotocol import types

from graphsafe.analyzer.grouping import each_use, uses
from graphsafe.fixes import applicable, apply_edits, noqa_edit, parses
from graphsafe.lsp import convert
from graphsafe.model import Applicability, Diagnostic, Edit

QUICKFIX = types.CodeActionKind.QuickFix.value
FIX_ALL = "source.fixAll.graphsafe"
FIX_ALL_TITLE = "graphsafe: apply all safe fixes"


def kind_wanted(kind: str, only: list[str] | None) -> bool:
    """LSP kinds are hierarchical: asking for `source.fixAll` includes `source.fixAll.graphsafe`."""
    if not only:
        return True
    return any(kind == k or kind.startswith(k + ".") for k in (getattr(o, "value", o) for o in only))


def workspace_edit(uri: str, version: int | None, edits: list[types.TextEdit], versioned: bool) -> types.WorkspaceEdit:
    if versioned:
        document = types.OptionalVersionedTextDocumentIdentifier(uri=uri, version=version)
        return types.WorkspaceEdit(document_changes=[types.TextDocumentEdit(text_document=document, edits=edits)])
    return types.WorkspaceEdit(changes={uri: edits})


def _ignore(why: str) -> None:
    pass


# A cursor resting on a line asks for its actions again and again: parse each edited text once.
_parses = functools.lru_cache(maxsize=16)(parses)


def refusal(text: str, edits: Iterable[Edit], sent: list[types.TextEdit], encoding: str) -> str | None:
    """Why `sent`, the LSP form of `edits`, must not go to the client (None: it may). Applied to the
    buffer as the client applies them, they must give the text the fix means, and it must parse."""
    result = convert.apply_text_edits(text, sent, encoding)
    if result is None:
        return "its edits overlap"
    if result != apply_edits(text, edits):
        return "its edits would land elsewhere in the editor's buffer than in the analysed text"
    if not _parses(result):
        return "the edited text would not parse"
    return None


def fix_title(diagnostic: Diagnostic) -> str:
    fix = diagnostic.fix
    title = fix.title or f"Fix {diagnostic.code}"
    if fix.applicability is Applicability.SAFE:
        return title
    return f"(unsafe) {title}" + (f" — {fix.reason}" if fix.reason else "")


def diagnostic_actions(
    uri: str,
    version: int | None,
    text: str,
    lines: list[str],
    diagnostics: Iterable[Diagnostic],
    request: types.Range,
    encoding: str,
    *,
    only: list[str] | None = None,
    versioned: bool = False,
    uri_of=lambda path: None,
    listed: Iterable[types.Diagnostic] = (),
    reject: Callable[[str], None] = _ignore,
) -> list[types.CodeAction]:
    """A quick fix per fixable diagnostic under `request` or `listed` by the client for its lines,
    then one "Disable CODE for this line" per line and code. An action whose edits would not give
    a text that parses (see `refusal`) is left out, and `reject` is told why."""
    if not kind_wanted(QUICKFIX, only):
        return []
    listed = list(listed)
    fixes: list[types.CodeAction] = []
    noqa: list[types.CodeAction] = []
    seen: set[tuple[int, str]] = set()
    for grouped in diagnostics:
        lsp = convert.to_diagnostic(grouped, lines, encoding, uri_of)
        for index, d in enumerate(uses(grouped)):  # a hazard's other uses keep their own fix and line
            where = lsp.range if index == 0 else convert.to_range(lines, d.start, d.end, encoding)
            if convert.range_overlaps(where, request) or (index == 0 and listed_for(lsp, request, listed)):
                _use_actions(d, lsp, uri, version, text, lines, encoding, versioned, seen, fixes, noqa, reject)
    return fixes + noqa


def _use_actions(d: Diagnostic, lsp: types.Diagnostic, uri: str, version: int | None, text: str, lines: list[str],
                 encoding: str, versioned: bool, seen: set[tuple[int, str]], fixes: list, noqa: list,
                 reject: Callable[[str], None]) -> None:
    """The quick fix of one use (if any) into `fixes`, and its line's noqa action into `noqa`;
    each left out, and `reject` told why, when its edits fail `refusal`."""
    where = f"{d.code} at line {d.start.line}"
    if applicable(d, unsafe=True):
        edits = convert.to_text_edits(d.fix.edits, lines, encoding)
        why = refusal(text, d.fix.edits, edits, encoding)
        if why is None:
            fixes.append(types.CodeAction(
                title=fix_title(d),
                kind=QUICKFIX,
                diagnostics=[lsp],
                edit=workspace_edit(uri, version, edits, versioned),
                is_preferred=d.fix.applicability is Applicability.SAFE,
            ))
        else:
            reject(f"quick fix for {where} not offered: {why}")
    if d.code == "GS000" or (d.start.line, d.code) in seen:
        return  # GS000 cannot be suppressed: the file was not analysed
    seen.add((d.start.line, d.code))
    edit = noqa_edit(text, d.start.line, d.code)
    edits = convert.to_text_edits([edit], lines, encoding)
    why = refusal(text, [edit], edits, encoding)
    if why is not None:
        reject(f"`# noqa` for {where} not offered: {why}")
        return
    noqa.append(types.CodeAction(
        title=f"Disable {d.code} for this line",
        kind=QUICKFIX,
        diagnostics=[lsp],
        edit=workspace_edit(uri, version, edits, versioned),
    ))


def listed_for(diagnostic: types.Diagnostic, request: types.Range, listed: Iterable[types.Diagnostic]) -> bool:
    """The client listed `diagnostic` in the request's context: one of ours with its code, starting on a
    line of the request that the listed one spans. Code and line, not range and message: Neovim 0.7
    sends line diagnostics without them, for a cursor that need not touch the diagnostic's columns."""
    line = diagnostic.range.start.line
    if not request.start.line <= line <= request.end.line:
        return False
    return any(
        str(other.code) == str(diagnostic.code) and other.source in (None, convert.SOURCE)
        and other.range.start.line <= line <= other.range.end.line
        for other in listed
    )


def fix_all_action(
    uri: str, version: int | None, text: str, fixed: str, encoding: str, *, versioned: bool = False,
    reject: Callable[[str], None] = _ignore,
) -> types.CodeAction | None:
    """`source.fixAll.graphsafe`: the fully fixed text as one edit over the lines that changed
    (`fixed` parses: `graphsafe fix` checked it); None, and `reject` told why, when the edit
    applied to the buffer would not give exactly that text."""
    edit = convert.minimal_edit(text, fixed, encoding)
    if edit is None:
        return None
    if convert.apply_text_edits(text, [edit], encoding) != fixed:
        reject("fix-all not offered: its edit would not give the fixed text in the editor's buffer")
        return None
    return types.CodeAction(title=FIX_ALL_TITLE, kind=FIX_ALL, edit=workspace_edit(uri, version, [edit], versioned))


def has_safe_fix(diagnostics: Iterable[Diagnostic]) -> bool:
    return any(applicable(d, unsafe=False) for d in each_use(diagnostics))
