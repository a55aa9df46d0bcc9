"""What every settings section shares: the strict frozen model, the configuration error, common validators."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

REPO_ROOT = Path(__file__).resolve().parents[2]
DEFAULT_CONFIG = REPO_ROOT / "ade.yaml"


class ConfigError(Exception):
    """A bad ade.yaml: names the key and the reason. Start-up stops on it."""


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def empty_is_none(value: Any) -> Any:
    """An empty string is an unset value (`${VAR:-}` when VAR is not set)."""
    return None if value == "" else value


MIN_TOKEN_LENGTH = 32


def long_enough_token(value: Any) -> Any:
    """A bearer token of at least MIN_TOKEN_LENGTH characters (None passes: unset)."""
    if value is not None and len(value.get_secret_value()) < MIN_TOKEN_LENGTH:
        raise ValueError(f"must be at least {MIN_TOKEN_LENGTH} characters (e.g. `openssl rand -hex 24`)")
    return value


def off_while_empty(section: Any, key: str) -> Any:
    """A section whose address `key` is given empty is off (None): the demo's `${ADE_..._URL:-}` when the emulator
    or server it names is not running, so every command works on the demo configuration alone."""
    if isinstance(section, dict) and key in section and not section[key]:
        return None
    return section


def check_regex(value: str, *, name_it: bool = False) -> str:
    """The value if it compiles as a Python regular expression; otherwise a ValueError naming the reason."""
    try:
        re.compile(value)
    except re.error as exc:
        prefix = f"{value!r} is not" if name_it else "not"
        raise ValueError(f"{prefix} a valid regular expression: {exc}") from None
    return value
