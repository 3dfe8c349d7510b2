"""`[tool.graphsafe]` for a workspace folder, with configuration errors as messages, not exceptions."""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from pathlib import Path

from graphsafe.config import ConfigError, Settings, find_config, load_settings

CONFIG_NAME = "pyproject.toml"


@dataclass(frozen=True)
class Resolved:
    settings: Settings
    error: str | None = None  # shown to the user; `settings` are then the fallback


def _nearest_pyproject(folder: Path) -> Path | None:
    for directory in [folder, *folder.parents]:
        candidate = directory / CONFIG_NAME
        if candidate.is_file():
            return candidate
    return None


def resolve(folder: Path, fallback: Settings | None = None) -> Resolved:
    """The settings that apply to files under `folder`.

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
