"""Expected failures of the snowfakery library, each with a stable code the MCP toolset passes through."""

from __future__ import annotations

from typing import Any


class SnowfakeryError(Exception):
    """An expected failure: `code` is stable (listed in the bridge's ERROR_CODES), `detail` is safe to show.

    `extra` carries structured detail (for example the `errors` list with filename and line).
    """

    def __init__(self, code: str, detail: str, hint: str | None = None, **extra: Any) -> None:
        super().__init__(detail)
        self.code = code
        self.detail = detail
        self.hint = hint
        self.extra = extra


def path_not_allowed(path: str) -> SnowfakeryError:
    return SnowfakeryError("path_not_allowed", f"{path!r} is outside the snowfakery workspace")
