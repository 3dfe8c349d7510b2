"""Settings written in Python: config attributes, constructor keywords, dict literals,
argument lists and command strings, and environment variables.

One pass over the module, done once per file and shared by every GS8 rule. Each setting is
grouped by the top-level function or class that writes it (one recipe function, one
provider class); see `PythonCollector.recipes`.
"""

from __future__ import annotations

import libcst as cst

from graphsafe.analyzer.names import dotted
from graphsafe.analyzer.nodes import children
from graphsafe.rules.megatron.settings import (
    ENV_NAMES,
    NAMES,
    UNKNOWN,
    Origin,
    Recipe,
    Setting,
    normalise,
)
from graphsafe.rules.megatron.tokens import SEPARATOR, settings_from_words
from graphsafe.rules.syntax import literal

_ENVIRON = frozenset({"os.environ", "environ"})
_ENUMS = frozenset({"CudaGraphScope", "CudaGraphModule"})  # Megatron-Core's enums for scope values
_ENV_CALLS = frozenset({"os.environ.setdefault", "environ.setdefault", "os.putenv", "putenv"})


def value_of(expr: cst.BaseExpression) -> object:
    """A literal's value (str/int/bool/None, or a list of them); UNKNOWN otherwise."""
    if isinstance(expr, (cst.List, cst.Tuple)):
        values = [value_of(e.value) for e in expr.elements if isinstance(e, cst.Element)]
        return UNKNOWN if UNKNOWN in values else values
    if isinstance(expr, cst.Attribute) and (dotted(expr.value) or "").rpartition(".")[2] in _ENUMS:
        return expr.attr.value  # CudaGraphScope.full_iteration → "full_iteration"
    if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, cst.Minus):
        inner = value_of(expr.expression)
        return -inner if type(inner) is int else UNKNOWN
    value = literal(expr)
    return UNKNOWN if value is ... else value


def _text(expr: cst.BaseExpression) -> str | None:
    """A string literal's text; an f-string's with `$` where it interpolates (unknown)."""
    if isinstance(expr, cst.SimpleString):
        value = expr.evaluated_value
        return value if isinstance(value, str) else None
    if isinstance(expr, cst.FormattedString):
        return "".join(p.value if isinstance(p, cst.FormattedStringText) else "${}" for p in expr.parts)
    if isinstance(expr, cst.ConcatenatedString):
        left, right = _text(expr.left), _text(expr.right)
        return None if left is None or right is None else left + right
    return None


def _looks_like_arguments(text: str) -> bool:
    return "--" in text or "=" in text


class PythonCollector:
    """Walks a module once; `recipes()` gives one Recipe per group."""

    def __init__(self) -> None:
        self.settings: list[Setting] = []
        self.group: str | None = None
        self.statement: cst.CSTNode | None = None
        self.in_class_body = False

    # ------------------------------------------------------------------ walking
    def collect(self, module: cst.Module) -> None:
        for statement in module.body:
            self._statement(statement, top=True)

    def _statement(self, statement: cst.CSTNode, top: bool = False) -> None:
        saved = (self.group, self.statement, self.in_class_body)
        if top and isinstance(statement, (cst.FunctionDef, cst.ClassDef)):
            self.group = statement.name.value
        self.statement = statement
        if isinstance(statement, cst.ClassDef):
            self.in_class_body = True
            for inner in statement.body.body:
                self._statement(inner)
        elif isinstance(statement, cst.FunctionDef):
            self.in_class_body = False
            for decorator in statement.decorators:
                self._expression(decorator.decorator)
            self._block(statement.body)
        elif isinstance(statement, cst.SimpleStatementLine):
            for small in statement.body:
                self._small(small)
        elif isinstance(statement, cst.BaseCompoundStatement):
            for child in children(statement):
                if isinstance(child, cst.BaseSuite):
                    self._block(child)
                elif isinstance(child, cst.BaseExpression):
                    self._expression(child)
                else:
                    self._nested(child)
        self.group, self.statement, self.in_class_body = saved

    def _block(self, block: cst.BaseSuite) -> None:
        if isinstance(block, cst.IndentedBlock):
            for inner in block.body:
                self._statement(inner)
        elif isinstance(block, cst.SimpleStatementSuite):
            for small in block.body:
                self._small(small)

    def _nested(self, node: cst.CSTNode) -> None:
        """Else/except/finally clauses and with-items: walk what they hold."""
        for child in children(node):
            if isinstance(child, cst.BaseSuite):
                self._block(child)
            elif isinstance(child, cst.BaseStatement):
                self._statement(child)
            elif isinstance(child, cst.BaseExpression):
                self._expression(child)
            else:
                self._nested(child)

    def _small(self, small: cst.CSTNode) -> None:
        if isinstance(small, cst.Expr) and isinstance(small.value, (cst.SimpleString, cst.ConcatenatedString)):
            return  # a docstring: prose, not settings
        if isinstance(small, cst.Assign):
            for target in small.targets:
                self._assignment(target.target, small.value)
        elif isinstance(small, cst.AnnAssign) and small.value is not None:
            self._assignment(small.target, small.value)
        for child in children(small):
            if isinstance(child, cst.BaseExpression):
                self._expression(child)
            else:
                self._nested(child)

    def _expression(self, expr: cst.CSTNode) -> None:
        stack = [expr]
        while stack:
            node = stack.pop()
            if isinstance(node, (cst.Lambda,)):
                continue
            if isinstance(node, cst.Call):
                self._call(node)
            elif isinstance(node, cst.Dict):
                self._dict(node)
            elif isinstance(node, (cst.List, cst.Tuple)):
                if self._argument_list(node):
                    continue
            elif isinstance(node, (cst.SimpleString, cst.FormattedString, cst.ConcatenatedString)):
                self._command_string(node)
                continue
            stack.extend(reversed(list(children(node))))

    # ------------------------------------------------------------------ forms
    def _add(self, key: str, value: object, written: str, origin: Origin, node: cst.CSTNode) -> None:
        setting = Setting(key, normalise(key, value), written, origin, (node, self.statement), self.group)
        self._keep(setting)

    def _keep(self, setting: Setting) -> None:
        setting.order = len(self.settings)
        self.settings.append(setting)

    def _assignment(self, target: cst.BaseExpression, value: cst.BaseExpression) -> None:
        if isinstance(target, cst.Subscript) and dotted(target.value) in _ENVIRON and len(target.slice) == 1:
            index = target.slice[0].slice
            name = _text(index.value) if isinstance(index, cst.Index) else None
            if name in ENV_NAMES:
                self._add(ENV_NAMES[name], _env_value(value), f'os.environ["{name}"]', Origin.ENV, target)
            return
        if isinstance(target, cst.Attribute):
            name = target.attr.value
            written = dotted(target) or name
        elif isinstance(target, cst.Name) and self.in_class_body:
            name = written = target.value  # a dataclass field default in a provider subclass
        else:
            return
        key = NAMES.get(name)
        if key is not None:
            self._add(key, _config_value(key, value), written, Origin.CONFIG, target)

    def _call(self, call: cst.Call) -> None:
        callee = dotted(call.func) or ""
        if callee in _ENV_CALLS and len(call.args) >= 2:
            name = _text(call.args[0].value)
            if name in ENV_NAMES:
                self._add(ENV_NAMES[name], _env_value(call.args[1].value), f'os.environ["{name}"]', Origin.ENV, call)
        for arg in call.args:
            if arg.keyword is not None and arg.keyword.value in NAMES:
                key = NAMES[arg.keyword.value]
                self._add(key, _config_value(key, arg.value), f"{arg.keyword.value}=", Origin.CONFIG, arg)

    def _dict(self, node: cst.Dict) -> None:
        for element in node.elements:
            if not isinstance(element, cst.DictElement):
                continue
            name = _text(element.key)
            if name in ENV_NAMES:
                self._add(ENV_NAMES[name], _env_value(element.value), f'"{name}"', Origin.ENV, element)
            elif name in NAMES:
                key = NAMES[name]
                self._add(key, _config_value(key, element.value), f'"{name}"', Origin.CONFIG, element)

    def _argument_list(self, node: cst.List | cst.Tuple) -> bool:
        """`["--cuda-graph-impl", "local", ...]`: read as launcher words. True if it was one."""
        words: list[tuple[str, object] | None] = []
        flagged = False
        for element in node.elements:
            if not isinstance(element, cst.Element):
                words.append(SEPARATOR)
                continue
            text = _text(element.value)
            if text is None:
                words.append(("${}", None))
                continue
            flagged = flagged or text.startswith("--") or ("=" in text and "." in text.partition("=")[0])
            parts = text.split() or [text]
            words.extend((part, element.value) for part in parts)
        if not flagged:
            return False
        for setting in settings_from_words(words):
            if setting.anchor is not None:
                setting.anchor, setting.group = (setting.anchor, self.statement), self.group
                self._keep(setting)
        return True

    def _command_string(self, node: cst.BaseExpression) -> None:
        """`cmd = "torchrun pretrain_gpt.py --cuda-graph-impl local ..."`."""
        text = _text(node)
        if text is None or not _looks_like_arguments(text):
            return
        words: list[tuple[str, object] | None] = []
        for line in text.replace("\\\n", " ").splitlines():
            words.extend((part, node) for part in line.split())
            words.append(SEPARATOR)
        for setting in settings_from_words(words):
            setting.anchor, setting.group = (node, self.statement), self.group
            self._keep(setting)

    # ------------------------------------------------------------------ recipes
    def recipes(self) -> list[Recipe]:
        """One recipe per top-level function or class, plus one for the module's own config
        settings. Module-level environment variables belong to every recipe (they are set for
        the whole process); other module-level settings do not leak into functions."""
        shared = [s for s in self.settings if s.group is None and s.origin is Origin.ENV]
        groups: dict[str | None, list[Setting]] = {}
        for setting in self.settings:
            if setting.group is not None or setting.origin is not Origin.ENV:
                groups.setdefault(setting.group, []).append(setting)
        if not groups:
            return [Recipe(shared)] if shared else []
        return [Recipe(_in_order(shared + own)) for own in groups.values()]


def _in_order(settings: list[Setting]) -> list[Setting]:
    return sorted(settings, key=lambda s: s.order)


def _env_value(expr: cst.BaseExpression) -> object:
    text = _text(expr)
    return UNKNOWN if text is None or "$" in text else text


def _config_value(key: str, expr: cst.BaseExpression) -> object:
    if key == "packed_specs":  # `PackedSequenceSpecs(...)` turns packing on; None leaves it off
        if isinstance(expr, cst.Call):
            return True
        value = value_of(expr)
        return UNKNOWN if value is not None else None
    return value_of(expr)
