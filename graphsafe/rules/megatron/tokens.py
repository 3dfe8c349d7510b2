"""Launcher arguments → settings: `--flag value`, `--flag=value`, `--no-flag`, `VAR=value`
and Bridge overrides `model.cuda_graph_impl=local`, from a sequence of words.

Shared by the shell scanner (words with line/column anchors) and the Python collector
(argument lists and command strings, anchored at their nodes). `SEPARATOR` ends a command
(a newline, `;`, `&&`, `|`): a multi-valued flag's values stop there.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from graphsafe.rules.megatron.settings import (
    ENV_NAMES,
    MULTI_VALUE,
    NAMES,
    UNKNOWN,
    VALUE_FLAGS,
    Origin,
    Setting,
    normalise,
)

SEPARATOR = None
_ASSIGNMENT = re.compile(r"^\+{0,2}(?P<name>[A-Za-z_][A-Za-z0-9_.]*)=(?P<value>.*)$", re.DOTALL)


def _value(text: str) -> object:
    """A word's value; anything expanded at run time (`$IMPL`, `` `cmd` ``) is unknown."""
    if "$" in text or "`" in text:
        return UNKNOWN
    return text


def _flag_key(name: str) -> tuple[str | None, bool]:
    """(canonical key, negated) of a flag name without its dashes."""
    plain = name.replace("-", "_")
    key = NAMES.get(plain)
    if key is not None:
        return key, False
    if plain.startswith("no_") and plain[3:] in NAMES:
        return NAMES[plain[3:]], True
    return None, False


def settings_from_words(words: Iterable[tuple[str, object] | None]) -> list[Setting]:
    """Settings from `(text, anchor)` words (`None` separates commands)."""
    items = list(words)
    found: list[Setting] = []
    i = 0
    while i < len(items):
        item = items[i]
        i += 1
        if item is SEPARATOR:
            continue
        text, anchor = item
        if text.startswith("--") and len(text) > 2:
            name, has_inline, inline = text[2:].partition("=")
            key, negated = _flag_key(name)
            if key is None:
                continue
            origin = Origin.BRIDGE_FLAG if "_" in name and "-" not in name else Origin.MEGATRON_FLAG
            if negated:
                value: object = False
            elif key in VALUE_FLAGS:
                if has_inline:
                    values = [_value(inline)]
                else:
                    values = []
                    while i < len(items) and items[i] is not SEPARATOR and not items[i][0].startswith("-"):
                        if values and _ASSIGNMENT.match(items[i][0]):
                            break
                        values.append(_value(items[i][0]))
                        i += 1
                        if key not in MULTI_VALUE:
                            break
                if not values:
                    value = UNKNOWN
                elif key in MULTI_VALUE:
                    value = UNKNOWN if UNKNOWN in values else values
                else:
                    value = values[0]
            else:
                value = _value(inline) if has_inline else True
            found.append(Setting(key, normalise(key, value), "--" + name, origin, anchor))
            continue
        m = _ASSIGNMENT.match(text)
        if m is None:
            continue
        name, raw = m.group("name"), m.group("value")
        if name in ENV_NAMES:
            key = ENV_NAMES[name]
            found.append(Setting(key, normalise(key, _value(raw)), name, Origin.ENV, anchor))
        elif "." in name and name.rpartition(".")[2] in NAMES:
            key = NAMES[name.rpartition(".")[2]]
            value = _value(raw)
            if key == "scope" and isinstance(value, str):
                value = [v.strip(" '\"") for v in value.strip("[]").split(",")]
            found.append(Setting(key, normalise(key, value), name, Origin.OVERRIDE, anchor))
    return found
