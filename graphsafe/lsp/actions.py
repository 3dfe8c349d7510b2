"""Code actions from diagnostics: quick fixes, `# noqa` edits and `source.fixAll.graphsafe`.

Pure functions of (text, diagnostics, request): the server supplies the analysis.
"""

from __future__ import annotations

from typing import Iterable

from lsprotocol import types

from graphsafe.fixes import applicable, noqa_edit
from graphsafe.lsp import convert
from graphsafe.model import Applicability, Diagnostic

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
) -> list[types.CodeAction]:
    """A quick fix per fixable diagnostic under `request`, then one "Disable CODE for this line" per line and code."""
    if not kind_wanted(QUICKFIX, only):
        return []
    fixes: list[types.CodeAction] = []
    noqa: list[types.CodeAction] = []
    seen: set[tuple[int, str]] = set()
    for d in diagnostics:
        lsp = convert.to_diagnostic(d, lines, encoding, uri_of)
        if not convert.range_overlaps(lsp.range, request):
            continue
        if applicable(d, unsafe=True):
            edits = convert.to_text_edits(d.fix.edits, lines, encoding)
            fixes.append(types.CodeAction(
                title=fix_title(d),
                kind=QUICKFIX,
                diagnostics=[lsp],
                edit=workspace_edit(uri, version, edits, versioned),
                is_preferred=d.fix.applicability is Applicability.SAFE,
            ))
        if d.code == "GS000" or (d.start.line, d.code) in seen:
            continue  # GS000 cannot be suppressed: the file was not analysed
        seen.add((d.start.line, d.code))
        edit = noqa_edit(text, d.start.line, d.code)
        noqa.append(types.CodeAction(
            title=f"Disable {d.code} for this line",
            kind=QUICKFIX,
            diagnostics=[lsp],
            edit=workspace_edit(uri, version, convert.to_text_edits([edit], lines, encoding), versioned),
        ))
    return fixes + noqa


def fix_all_action(
    uri: str, version: int | None, text: str, fixed: str, encoding: str, *, versioned: bool = False
) -> types.CodeAction | None:
    """`source.fixAll.graphsafe`: the fully fixed text as one edit over the lines that changed."""
    edit = convert.minimal_edit(text, fixed, encoding)
    if edit is None:
        return None
    return types.CodeAction(title=FIX_ALL_TITLE, kind=FIX_ALL, edit=workspace_edit(uri, version, [edit], versioned))


def has_safe_fix(diagnostics: Iterable[Diagnostic]) -> bool:
    return any(applicable(d, unsafe=False) for d in diagnostics)
