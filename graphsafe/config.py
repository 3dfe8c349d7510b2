"""`[tool.graphsafe]` in pyproject.toml, merged with command-line options."""

from __future__ import annotations

import hashlib
import tomllib
from dataclasses import dataclass, field, replace
from pathlib import Path

from graphsafe.analyzer.reading import read_source


class ConfigError(Exception):
    """A configuration problem the user must fix; the CLI prints it and exits 2."""


@dataclass(frozen=True)
class Settings:
    select: tuple[str, ...] = ()
    extend_select: tuple[str, ...] = ()  # added to `select` (or to the default rules)
    ignore: tuple[str, ...] = ()
    fixable: tuple[str, ...] | None = None  # codes whose fixes are kept (None: every code)
    unfixable: tuple[str, ...] = ()  # codes whose fixes are dropped
    regions: tuple[str, ...] = ()  # fnmatch patterns on `Class.method`, optionally `path::pattern`
    # only the `regions` patterns are regions (marked blocks and decorators ignored): `graphsafe graph`
    # fixes the core it split off, not the host wrapper a capture block in the file also reaches
    pattern_regions_only: bool = False
    exclude: tuple[str, ...] = ()  # added to discovery.DEFAULT_EXCLUDE, unless the next is set
    default_exclude: bool = True  # False after `--exclude` on the command line: it replaces them
    extend_exclude: tuple[str, ...] = ()
    force_exclude: bool = False  # excludes apply to paths named on the command line too
    per_file_ignores: tuple[tuple[str, tuple[str, ...]], ...] = ()
    respect_gitignore: bool = True
    root: Path = field(default_factory=Path.cwd)  # where the config was found; paths are relative to it
    config_file: Path | None = None
    # run-time facts (`graphsafe trace --save-facts`); None: <root>/.graphsafe/facts.json if there is one
    facts_file: Path | None = None
    # follow calls into installed libraries (site-packages) that a region reaches (analyzer/libraries.py)
    follow_libraries: bool = True

    def with_cli(self, *, select=None, ignore=None, regions=None, extend_exclude=None, extend_select=None,
                 fixable=None, unfixable=None, exclude=None, force_exclude=None, respect_gitignore=None,
                 follow_libraries=None) -> "Settings":
        """Command-line options over the config file's, as ruff merges them: `--select`,
        `--fixable` and `--exclude` replace, the others add; None or empty leaves a setting."""
        changes: dict = {}
        if select:
            changes["select"] = tuple(select)
            changes["extend_select"] = ()  # ruff: a command-line select starts over
        if extend_select:
            changes["extend_select"] = tuple(changes.get("extend_select", self.extend_select)) + tuple(extend_select)
        if ignore:
            changes["ignore"] = tuple(self.ignore) + tuple(ignore)
        if fixable:
            changes["fixable"] = tuple(fixable)
        if unfixable:
            changes["unfixable"] = tuple(self.unfixable) + tuple(unfixable)
        if exclude:
            changes["exclude"], changes["default_exclude"] = tuple(exclude), False
        if force_exclude is not None:
            changes["force_exclude"] = force_exclude
        if respect_gitignore is not None:
            changes["respect_gitignore"] = respect_gitignore
        if follow_libraries is not None:
            changes["follow_libraries"] = follow_libraries
        if regions:
            changes["regions"] = tuple(self.regions) + tuple(regions)
        if extend_exclude:
            changes["extend_exclude"] = tuple(self.extend_exclude) + tuple(extend_exclude)
        return replace(self, **changes)

    def fingerprint(self) -> str:
        """Changes whenever a setting that affects results changes (for caches of results)."""
        text = repr((self.select, self.extend_select, self.ignore, self.regions, self.per_file_ignores, self.fixable,
                     self.unfixable, self.follow_libraries))
        return hashlib.blake2b(text.encode(), digest_size=8).hexdigest()


_KEYS = {
    "select", "extend-select", "ignore", "fixable", "unfixable", "regions", "exclude", "extend-exclude",
    "force-exclude", "per-file-ignores", "respect-gitignore", "follow-libraries",
}


def find_config(start: Path) -> Path | None:
    """The nearest pyproject.toml at or above `start` that has a [tool.graphsafe] table.

    One that cannot be read or parsed is an error, not skipped: it may be the one that holds
    the user's settings, and running without them would pass silently."""
    start = start.resolve()
    for directory in [start, *start.parents] if start.is_dir() else [start.parent, *start.parent.parents]:
        candidate = directory / "pyproject.toml"
        if candidate.is_file() and "graphsafe" in _tool_table(_read_toml(candidate), candidate):
            return candidate
    return None


def _read_toml(path: Path) -> dict:
    content = read_source(path)
    if isinstance(content, str):
        raise ConfigError(f"{path}: cannot read: {content}")
    try:
        return tomllib.loads(content.decode("utf-8"))
    except UnicodeDecodeError as error:
        line = content.count(b"\n", 0, error.start) + 1
        column = error.start - content.rfind(b"\n", 0, error.start)
        raise ConfigError(f"{path}: not UTF-8 text: byte {content[error.start]:#04x} at line {line}, column {column}") from None
    except tomllib.TOMLDecodeError as error:
        raise ConfigError(f"{path}: invalid TOML: {error}") from None


def _tool_table(data: dict, path: Path) -> dict:
    tool = data.get("tool", {})
    if not isinstance(tool, dict):
        raise ConfigError(f"{path}: [tool] must be a table")
    return tool


def _strings(value, key: str, path: Path) -> tuple[str, ...]:
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return tuple(value)
    raise ConfigError(f"{path}: [tool.graphsafe] {key} must be a list of strings, not {_toml_type(value)}")


def _codes(value, key: str, path: Path) -> tuple[str, ...]:
    from graphsafe.rules import unknown_codes  # the rule registry costs ~0.4 s; Settings alone must not

    codes = _strings(value, key, path)
    unknown = unknown_codes(codes)
    if unknown:
        raise ConfigError(f"{path}: [tool.graphsafe] {key}: unknown rule code or prefix: {', '.join(unknown)} "
                          "(see `graphsafe rules`)")
    return codes


def _toml_type(value) -> str:
    names = {str: "a string", bool: "a boolean", int: "an integer", float: "a float", dict: "a table", list: "an array"}
    return names.get(type(value), type(value).__name__)


def _boolean(table: dict, key: str, default: bool, path: Path) -> bool:
    value = table.get(key, default)
    if not isinstance(value, bool):
        raise ConfigError(f"{path}: [tool.graphsafe] {key} must be true or false, not {_toml_type(value)}")
    return value


def load_settings(config_file: Path | None) -> Settings:
    """The settings of a pyproject.toml's [tool.graphsafe]; raises ConfigError on anything wrong."""
    if config_file is None:
        return Settings()
    table = _tool_table(_read_toml(config_file), config_file).get("graphsafe", {})
    if not isinstance(table, dict):
        raise ConfigError(f"{config_file}: [tool.graphsafe] must be a table")
    unknown = sorted(set(table) - _KEYS)
    if unknown:
        raise ConfigError(f"{config_file}: unknown [tool.graphsafe] key(s): {', '.join(unknown)}")
    per_file = table.get("per-file-ignores", {})
    if not isinstance(per_file, dict):
        raise ConfigError(f"{config_file}: [tool.graphsafe] per-file-ignores must be a table of pattern = [codes]")
    respect = _boolean(table, "respect-gitignore", True, config_file)
    return Settings(
        select=_codes(table.get("select", []), "select", config_file),
        extend_select=_codes(table.get("extend-select", []), "extend-select", config_file),
        ignore=_codes(table.get("ignore", []), "ignore", config_file),
        fixable=_codes(table["fixable"], "fixable", config_file) if "fixable" in table else None,
        unfixable=_codes(table.get("unfixable", []), "unfixable", config_file),
        force_exclude=_boolean(table, "force-exclude", False, config_file),
        regions=_strings(table.get("regions", []), "regions", config_file),
        exclude=_strings(table.get("exclude", []), "exclude", config_file),
        extend_exclude=_strings(table.get("extend-exclude", []), "extend-exclude", config_file),
        per_file_ignores=tuple(
            (pattern, _codes(codes, f"per-file-ignores.{pattern}", config_file)) for pattern, codes in per_file.items()
        ),
        respect_gitignore=respect,
        follow_libraries=_boolean(table, "follow-libraries", True, config_file),
        root=config_file.parent.resolve(),
        config_file=config_file,
    )
