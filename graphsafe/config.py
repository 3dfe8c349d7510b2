"""`[tool.graphsafe]` in pyproject.toml, merged with command-line options."""

from __future__ import annotations

import hashlib
import tomllib
from dataclasses import dataclass, field, replace
from pathlib import Path


class ConfigError(Exception):
    """A configuration problem the user must fix; the CLI prints it and exits 2."""


@dataclass(frozen=True)
class Settings:
    select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    regions: tuple[str, ...] = ()  # fnmatch patterns on `Class.method`, optionally `path::pattern`
    exclude: tuple[str, ...] = ()
    extend_exclude: tuple[str, ...] = ()
    per_file_ignores: tuple[tuple[str, tuple[str, ...]], ...] = ()
    respect_gitignore: bool = True
    root: Path = field(default_factory=Path.cwd)  # where the config was found; paths are relative to it
    config_file: Path | None = None

    def with_cli(self, *, select=None, ignore=None, regions=None, extend_exclude=None) -> "Settings":
        changes: dict = {}
        if select:
            changes["select"] = tuple(select)
        if ignore:
            changes["ignore"] = tuple(self.ignore) + tuple(ignore)
        if regions:
            changes["regions"] = tuple(self.regions) + tuple(regions)
        if extend_exclude:
            changes["extend_exclude"] = tuple(self.extend_exclude) + tuple(extend_exclude)
        return replace(self, **changes)

    def fingerprint(self) -> str:
        """Changes whenever a setting that affects results changes (for caches of results)."""
        text = repr((self.select, self.ignore, self.regions, self.per_file_ignores))
        return hashlib.blake2b(text.encode(), digest_size=8).hexdigest()


_KEYS = {
    "select", "ignore", "regions", "exclude", "extend-exclude", "per-file-ignores", "respect-gitignore",
}


def find_config(start: Path) -> Path | None:
    """The nearest pyproject.toml at or above `start` that has a [tool.graphsafe] table."""
    start = start.resolve()
    for directory in [start, *start.parents] if start.is_dir() else [start.parent, *start.parent.parents]:
        candidate = directory / "pyproject.toml"
        if candidate.is_file():
            try:
                data = tomllib.loads(candidate.read_text(encoding="utf-8"))
            except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
                continue
            if "graphsafe" in data.get("tool", {}):
                return candidate
    return None


def _strings(value, key: str, path: Path) -> tuple[str, ...]:
    if isinstance(value, str):
        return (value,)
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return tuple(value)
    raise ConfigError(f"{path}: [tool.graphsafe] {key} must be a list of strings")


def load_settings(config_file: Path | None) -> Settings:
    if config_file is None:
        return Settings()
    try:
        data = tomllib.loads(config_file.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as error:
        raise ConfigError(f"{config_file}: invalid TOML: {error}") from None
    except (OSError, UnicodeDecodeError) as error:
        raise ConfigError(f"{config_file}: cannot read: {error}") from None
    table = data.get("tool", {}).get("graphsafe", {})
    if not isinstance(table, dict):
        raise ConfigError(f"{config_file}: [tool.graphsafe] must be a table")
    unknown = sorted(set(table) - _KEYS)
    if unknown:
        raise ConfigError(f"{config_file}: unknown [tool.graphsafe] key(s): {', '.join(unknown)}")
    per_file = table.get("per-file-ignores", {})
    if not isinstance(per_file, dict):
        raise ConfigError(f"{config_file}: [tool.graphsafe] per-file-ignores must be a table of pattern = [codes]")
    respect = table.get("respect-gitignore", True)
    if not isinstance(respect, bool):
        raise ConfigError(f"{config_file}: [tool.graphsafe] respect-gitignore must be true or false")
    return Settings(
        select=_strings(table.get("select", []), "select", config_file),
        ignore=_strings(table.get("ignore", []), "ignore", config_file),
        regions=_strings(table.get("regions", []), "regions", config_file),
        exclude=_strings(table.get("exclude", []), "exclude", config_file),
        extend_exclude=_strings(table.get("extend-exclude", []), "extend-exclude", config_file),
        per_file_ignores=tuple(
            (pattern, _strings(codes, f"per-file-ignores.{pattern}", config_file)) for pattern, codes in per_file.items()
        ),
        respect_gitignore=respect,
        root=config_file.parent.resolve(),
        config_file=config_file,
    )
