"""Import-alias resolution: `th.cuda.synchronize` → `torch.cuda.synchronize`.

We resolve names ourselves instead of using libcst's QualifiedNameProvider (which costs
several times the parse): a file's imports are a small table from local name to dotted path.
"""

from __future__ import annotations

import libcst as cst


def dotted(expr: cst.BaseExpression) -> str | None:
    """`a.b.c` as a string, or None when the expression is not a plain attribute chain."""
    parts: list[str] = []
    while type(expr) is cst.Attribute:  # not isinstance: libcst classes check through ABCMeta (slow)
        parts.append(expr.attr.value)
        expr = expr.value
    if type(expr) is cst.Name:
        parts.append(expr.value)
        return ".".join(reversed(parts))
    return None


def bound_names(target: cst.BaseExpression):
    """The plain names an assignment or loop target binds (`a`, `a, (b, *c)`), as Name nodes."""
    if type(target) is cst.Name:
        yield target
    elif type(target) in (cst.Tuple, cst.List):
        for element in target.elements:
            yield from bound_names(element.value)
    elif type(target) is cst.StarredElement:
        yield from bound_names(target.value)


def module_of_relative(module: str, is_package: bool, level: int, name: str | None) -> str:
    """Absolute module for `from ..x import y` seen in `module`."""
    parts = module.split(".") if module else []
    if not is_package:
        parts = parts[:-1]
    if level > 1:
        parts = parts[: len(parts) - (level - 1)] if level - 1 <= len(parts) else []
    if name:
        parts.append(name)
    return ".".join(parts)


STAR_PREFIX = "*"  # aliases key prefix of a star import's module (`from m import *`)
# aliases key suffix of a module-level table of functions (`CENTER_FUNCTIONS = {"mean": f}`):
# its entries, "|"-joined, for code in other files that picks one (`CENTER_FUNCTIONS[mode]`)
TABLE_SUFFIX = "[]"


class ImportTable:
    """Local name → dotted target, for one scope (module-level, extended inside functions)."""

    __slots__ = ("aliases", "module", "is_package", "renames")

    def __init__(self, module: str, is_package: bool, aliases: dict[str, str] | None = None,
                 renames: dict[str, str] | None = None) -> None:
        self.module = module
        self.is_package = is_package
        self.aliases: dict[str, str] = dict(aliases or {})
        self.renames = renames or {}  # top-level module names of this file's root, made unique

    def child(self) -> "ImportTable":
        return ImportTable(self.module, self.is_package, self.aliases, self.renames)

    def _absolute(self, name: str) -> str:
        head, sep, rest = name.partition(".")
        renamed = self.renames.get(head)
        return renamed + sep + rest if renamed else name

    def add(self, node: cst.Import | cst.ImportFrom) -> None:
        if isinstance(node, cst.Import):
            for alias in node.names:
                full = dotted(alias.name)
                if full is None:
                    continue
                if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
                    self.aliases[alias.asname.name.value] = self._absolute(full)
                else:
                    # `import torch.nn` binds `torch`
                    head = full.split(".", 1)[0]
                    self.aliases.setdefault(head, self._absolute(head))
            return
        if node.module is None:
            base = ""
        else:
            base = dotted(node.module) or ""
        level = len(node.relative)
        if level:
            base = module_of_relative(self.module, self.is_package, level, base or None)
        elif base:
            base = self._absolute(base)
        if isinstance(node.names, cst.ImportStar):
            # `from .affine import *` re-exports the module's names: kept under a key no local
            # name can have (`*0`, `*1`, ...) so that callgraph.resolve_symbol can look there
            self.aliases[f"{STAR_PREFIX}{sum(k.startswith(STAR_PREFIX) for k in self.aliases)}"] = base
            return
        for alias in node.names:
            name = alias.name.value if isinstance(alias.name, cst.Name) else dotted(alias.name)
            if name is None:
                continue
            local = name
            if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
                local = alias.asname.name.value
            self.aliases[local] = f"{base}.{name}" if base else name

    def resolve_dotted(self, name: str) -> str:
        head, sep, rest = name.partition(".")
        target = self.aliases.get(head)
        if target is None:
            return name
        return target + sep + rest

    def resolve(self, expr: cst.BaseExpression) -> str | None:
        """The dotted path an expression names, through import aliases; None if not a name."""
        name = dotted(expr)
        if name is None:
            return None
        return self.resolve_dotted(name)

    def is_imported(self, local: str) -> bool:
        return local in self.aliases
