"""The rule registry: every rule, keyed by code, selectable by code prefix (ruff's convention)."""

from __future__ import annotations

from graphsafe.rules import (branch, config, device, distributed, gpu_only, lazy_init, lengths, megatron, memory,
                             optimizer, rng, scalars, static_inputs, streams, sync)
from graphsafe.rules.base import Rule
from graphsafe.rules.internal_error import InternalError
from graphsafe.rules.parse_error import ParseError
from graphsafe.rules.unused_noqa import UnusedNoqa

# Families by code: GS0 input, GS1 sync-free, GS2 data-dependent control flow, GS3 Python
# scalars, GS4 static memory, GS5 GPU-only, GS6 RNG, GS7 configuration (GS710-GS712: lazy initialisation
# reached first during capture), GS8 Megatron/TE, GS9 streams, collectives, devices and their set-up.
ALL_RULES: tuple[type[Rule], ...] = (
    ParseError, UnusedNoqa, InternalError, *sync.RULES, *branch.RULES, *scalars.RULES, *static_inputs.RULES, *memory.RULES, *lengths.RULES, *gpu_only.RULES, *rng.RULES, *optimizer.RULES, *config.RULES,
    *lazy_init.RULES, *megatron.RULES, *streams.RULES, *device.RULES, *distributed.RULES,
)
BY_CODE: dict[str, type[Rule]] = {rule.code: rule for rule in ALL_RULES}
BY_NAME: dict[str, type[Rule]] = {rule.name: rule for rule in ALL_RULES}

# Rules the walker runs (the engine produces GS000, when a file cannot be parsed, and GS001; the
# walker produces GS002 itself when its own analysis of a function fails).
CHECK_RULES = tuple(rule for rule in ALL_RULES if rule not in (ParseError, UnusedNoqa, InternalError))


def lookup(code_or_name: str) -> type[Rule] | None:
    return BY_CODE.get(code_or_name.upper()) or BY_NAME.get(code_or_name.lower())


def matches(code: str, prefix: str) -> bool:
    """`prefix` (a code, a prefix of codes, or ALL; any case) names `code`."""
    prefix = prefix.upper()
    return prefix == "ALL" or code.startswith(prefix)


def unknown_codes(prefixes) -> list[str]:
    """The prefixes that name no rule (typos: a silent no-op otherwise)."""
    return [p for p in prefixes if not any(matches(code, p) for code in BY_CODE)]


def selected(select: list[str] | None, ignore: list[str] | None, extend_select: list[str] | None = None) -> set[str]:
    """Codes enabled by --select/--extend-select/--ignore prefixes (ALL: every rule; no select:
    every rule on by default); GS000 is always on (a file that could not be analysed is said,
    as ruff always reports syntax errors)."""
    if select:
        codes = {c for c in BY_CODE if any(matches(c, p) for p in select)}
    else:
        codes = {c for c, rule in BY_CODE.items() if rule.enabled_by_default}
    if extend_select:
        codes |= {c for c in BY_CODE if any(matches(c, p) for p in extend_select)}
    if ignore:
        codes = {c for c in codes if not any(matches(c, p) for p in ignore)}
    codes.add(ParseError.code)
    return codes
