"""Which module each key of an `nn.ModuleDict` holds, from how the dict is built.

`nn.ModuleDict(dict(wte=nn.Embedding(...), h=nn.ModuleList([Block() ...])))` or
`nn.ModuleDict({"h": ..., "ln_f": ...})`: reading `self.transformer.h` (or
`self.transformer["h"]`) gives the `h` entry, a ModuleList of blocks, not any of the dict's
modules. The walker keeps the kind of each entry; other files follow `transformer.h` as one
step of an attribute path (ClassInfo.attr_classes names it with the dot).
"""

from __future__ import annotations

import libcst as cst

MODULE_DICTS = frozenset({"torch.nn.ModuleDict", "torch.nn.modules.container.ModuleDict"})


def module_dict_entries(call: cst.Call) -> list[tuple[str, cst.BaseExpression]] | None:
    """(key, value expression) for each entry of the mapping a ModuleDict call is given, when
    every key is spelt out (`dict(k=v)`, `{"k": v}`); None otherwise (built in a loop, `**`)."""
    if len(call.args) != 1 or call.args[0].keyword is not None or call.args[0].star:
        return None
    mapping = call.args[0].value
    entries: list[tuple[str, cst.BaseExpression]] = []
    if type(mapping) is cst.Call and type(mapping.func) is cst.Name and mapping.func.value == "dict":
        for arg in mapping.args:
            if arg.keyword is None or arg.star:
                return None
            entries.append((arg.keyword.value, arg.value))
    elif type(mapping) is cst.Dict:
        for element in mapping.elements:
            if type(element) is not cst.DictElement or type(element.key) is not cst.SimpleString:
                return None
            key = element.key.evaluated_value
            if not isinstance(key, str):
                return None
            entries.append((key, element.value))
    else:
        return None
    return entries


def entry_key(index: cst.BaseSlice) -> str | None:
    """`"h"` in `self.transformer["h"]`: the key a subscript reads, when it is a literal."""
    if type(index) is cst.Index and type(index.value) is cst.SimpleString:
        value = index.value.evaluated_value
        return value if isinstance(value, str) else None
    return None
