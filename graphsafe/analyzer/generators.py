"""Generators handed through parameters (GS601 on a draw whose `generator=` is a parameter).

`def add_noise(x, generator=None): return x + torch.randn(x.shape, generator=generator, device=x.device)`
draws from whatever its callers pass. The walker records a `torch.Generator` object passed to a
project call as a "G" argument slot (Unit.arg_kinds) unless its file registers it with a graph; GS601 reports such a draw on a condition
the project pass decides (`holds`): some reached call passes a generator object for that
parameter, directly or by handing on a parameter of its own that does, or the parameter is one
a region root receives from its user (it may be a CUDA generator: we cannot tell, so it counts).
A call passing nothing, or None, does not count.
"""

from __future__ import annotations

import functools
import re

import libcst as cst

# Hit condition: (GENERATOR_PARAM, function unit key, parameter name)
GENERATOR_PARAM = "generator-param"
GENERATOR_SLOT = "G"  # an argument slot: a torch.Generator object


def is_generator(kind) -> bool:
    """A walker kind for a `torch.Generator(...)` object (built here, or a local/attribute bound to one)."""
    return kind.tag == "object" and tuple(kind.refs) == ("torch.Generator",)


def holds(project, condition: tuple[str, ...], roots: frozenset) -> bool:
    return _passed(project, condition[1], condition[2], roots, set())


def _passed(project, function: str, param: str, roots: frozenset, seen: set) -> bool:
    """Does a reached call give `function`'s parameter `param` a generator object?"""
    if (function, param) in seen or function not in project.units:
        return False
    seen.add((function, param))
    if function in roots:
        return True  # the user's generator: may be a CUDA one
    params = list(project.units[function].unit.params)
    position = str(params.index(param)) if param in params else None
    for slots, given in project.reached_call_sites(function):
        for slot, kind in slots:
            if slot != param and slot != position:
                continue
            if kind == GENERATOR_SLOT:
                return True
            source = dict(given).get(slot, "")
            handed, _, rest = source.rpartition(":")  # `<function>:<parameter>=<default>`
            if handed and "=" in rest and _passed(project, handed, rest.partition("=")[0], roots, seen):
                return True
    return False


def unregistered(expr, source: str) -> bool:
    """Is the generator `expr` (`gen`, `self.gen`) never given to `register_generator_state` in
    its file? A registration of something other than a plain name or attribute could be any."""
    keys = _registered(source)
    return keys is not None and _dotted(expr) not in keys


@functools.lru_cache(maxsize=8)
def _registered(source: str) -> frozenset[str] | None:
    found = set()
    for match in _REGISTER.finditer(source):
        argument = match.group(1).strip()
        if not _DOTTED.fullmatch(argument):
            return None
        found.add(argument)
    return frozenset(found)


def _dotted(expr) -> str:
    if type(expr) is cst.Name:
        return expr.value
    if type(expr) is cst.Attribute:
        inner = _dotted(expr.value)
        return f"{inner}.{expr.attr.value}" if inner else ""
    return ""


_REGISTER = re.compile(r"register_generator_state\(([^()]*)\)")
_DOTTED = re.compile(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)*")
