"""`[tool.graphsafe]` for a workspace folder, with configuration errors as messages, not exceptions;
and the editor's own settings (the `factsFile` option)."""

from __future__ import annotations

import os
import tomllib
from dataclasses import dataclass, replace
from pathlib import Path

from graphsafe.config import ConfigError, Settings, find_config, load_settings

CONFIG_NAME = "pyproject.toml"
FACTS_FILE = "factsFile"  # initialization option, and key of the `graphsafe` workspace settings section


@dataclass(frozen=True)
class Resolved:
    settings: Settings
    error: str | None = None  # shown to the user; on a configuration error `settings` are the fallback


def _nearest_pyproject(folder: Path) -> Path | None:
    for directory in [folder, *folder.parents]:
        candidate = directory / CONFIG_NAME
        if candidate.is_file():
            return candidate
    return None


def facts_file_option(value) -> tuple[str | None, str | None]:
    """The `factsFile` setting: (the path as the user gave it, None for the default
    `<root>/.graphsafe/facts.json`; a message when the value is not a path)."""
    if value is None or value == "":
        return None, None
    if not isinstance(value, str) or "\0" in value:
        return None, (f"setting {FACTS_FILE} must be a path (a string), got {value!r}; "
                      "using <project root>/.graphsafe/facts.json when there is one")
    return value, None


def resolve(folder: Path, fallback: Settings | None = None, facts_file: str | None = None) -> Resolved:
    """The settings that apply to files under `folder`, with the editor's `factsFile` (relative
    to `folder`) as their facts file; a named file that is not there is said, and the analysis
    runs without run-time facts."""
    resolved = _resolve_config(folder, fallback)
    path = Path(folder).resolve() / Path(os.path.expanduser(facts_file)) if facts_file is not None else None
    settings = resolved.settings
    if settings.facts_file != path:
        settings = replace(settings, facts_file=path)
    error = resolved.error
    if path is not None and not path.is_file() and error is None:
        error = (f"{FACTS_FILE} {path} is not a file (write it with `graphsafe trace --save-facts "
                 f"{path}`); analysing without run-time facts")
    return Resolved(settings, error)


def _resolve_config(folder: Path, fallback: Settings | None = None) -> Resolved:
    """The `[tool.graphsafe]` settings that apply to files under `folder`.

    `find_config` skips a pyproject.toml it cannot parse; in an editor that would silently
    drop the user's configuration mid-edit, so the nearest one that does not parse is an error.
    On an error the previous settings (or the defaults) stay in force.
    """
    folder = folder.resolve()
    default = fallback or Settings(root=folder)
    nearest = _nearest_pyproject(folder)
    if nearest is not None:
        try:
            tomllib.loads(nearest.read_text(encoding="utf-8"))
        except tomllib.TOMLDecodeError as error:
            return Resolved(default, f"{nearest}: invalid TOML: {error}")
        except (OSError, UnicodeDecodeError) as error:
            return Resolved(default, f"{nearest}: cannot read: {error}")
    try:
        config = find_config(folder)
        if config is None:
            return Resolved(Settings(root=folder))
        return Resolved(load_settings(config))
    except ConfigError as error:
        return Resolved(default, str(error))
    except Exception as error:  # a config loader bug must not take the server down
        return Resolved(default, f"cannot load configuration: {type(error).__name__}: {error}")


def is_config(path: str | Path) -> bool:
    return Path(path).name == CONFIG_NAME
