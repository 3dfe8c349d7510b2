"""Parameter types a function's docstring declares, for parameters without annotations.

Much real code documents its parameters instead of annotating them:

    def update_and_allocate(self, global_step):
        '''
        Args:
            global_step (`int`): The current training step.
            scores (torch.FloatTensor of shape `(batch, n)`): ...
        '''

(Google style; numpy style `global_step : int` under `Parameters` and Sphinx `:type x: int` too).
Such a declaration is read like the annotation it stands for (`global_step: int`): the type text
is reduced to the names it is made of (`int`, `torch.FloatTensor`; `float, optional` → `float`,
`int or float` → `int | float`) and parsed as an expression. Text that is not a plain type is
ignored: nothing is guessed from prose.
"""

from __future__ import annotations

import re

import libcst as cst

_SECTION = re.compile(r"^\s*(Args|Arguments|Parameters|Params|Keyword Args|Keyword Arguments)\s*:?\s*$")
_NUMPY_RULE = re.compile(r"^\s*-{3,}\s*$")
_GOOGLE_ITEM = re.compile(r"^\s*\**(\w+)\s*\(([^()]*(?:\([^()]*\)[^()]*)*)\)\s*:")
_NUMPY_ITEM = re.compile(r"^\s*(\w+)\s*:\s*(\S.*)$")
_SPHINX_TYPE = re.compile(r":type\s+(\w+)\s*:\s*(.+)$")
_SPHINX_PARAM = re.compile(r":param\s+([\w.\[\], |]+?)\s+(\w+)\s*:")
# words that qualify a type without being one
_QUALIFIERS = re.compile(r"\b(optional|required|keyword-only|default[s]?\b.*|of shape\b.*|with shape\b.*|shape\b.*)",
                         re.IGNORECASE)
_TYPE_PART = re.compile(r"^[A-Za-z_][\w.]*(\[[\w., \[\]|]*\])?$")


def declared_types(function: cst.FunctionDef, names: set[str]) -> dict[str, cst.BaseExpression]:
    """`names` (parameters without annotations) → the annotation the docstring declares for each."""
    docstring = function.get_docstring(clean=True) if names else None
    if not docstring:
        return {}
    found: dict[str, str] = {}
    lines = docstring.splitlines()
    in_section = False
    for index, line in enumerate(lines):
        sphinx = _SPHINX_TYPE.search(line) or _SPHINX_PARAM.search(line)
        if sphinx is not None:
            name, text = (sphinx.group(1), sphinx.group(2)) if sphinx.re is _SPHINX_TYPE else (
                sphinx.group(2), sphinx.group(1))
            if name in names:
                found.setdefault(name, text)
            continue
        if _SECTION.match(line):
            in_section = True
            continue
        if not in_section or _NUMPY_RULE.match(line):
            continue
        if line.strip() and not line.startswith((" ", "\t")) and not _NUMPY_ITEM.match(line):
            in_section = False  # the next section (`Returns:`, `Example`)
            continue
        item = _GOOGLE_ITEM.match(line) or _numpy_item(lines, index)
        if item is not None and item.group(1) in names:
            found.setdefault(item.group(1), item.group(2))
    declared = {}
    for name, text in found.items():
        annotation = _annotation(text)
        if annotation is not None:
            declared[name] = annotation
    return declared


def _numpy_item(lines: list[str], index: int) -> re.Match | None:
    """`global_step : int` followed by its description, indented deeper."""
    item = _NUMPY_ITEM.match(lines[index])
    if item is None or index + 1 >= len(lines):
        return None
    indent = len(lines[index]) - len(lines[index].lstrip())
    following = lines[index + 1]
    return item if following.strip() and len(following) - len(following.lstrip()) > indent else None


def _annotation(text: str) -> cst.BaseExpression | None:
    """`int`, "`torch.FloatTensor` of shape `(b, n)`", "float, optional", "int or float" → the
    expression of that type; None for text that is not one."""
    text = _QUALIFIERS.sub("", text.replace("`", "").replace("*", "").replace("~", ""))
    parts = [part.strip() for part in re.split(r",|\bor\b|\|", text)]
    parts = [part for part in parts if part and part != "None"]
    if not parts or len(parts) > 3 or not all(_TYPE_PART.match(part) for part in parts):
        return None
    if any(part.rpartition(".")[2].lower() in ("any", "object") for part in parts):
        return None  # declares nothing: what callers pass decides, as without a docstring
    try:
        return cst.parse_expression(" | ".join(dict.fromkeys(parts)))
    except cst.ParserSyntaxError:
        return None
