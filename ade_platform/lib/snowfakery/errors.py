"""Expected failures of the snowfakery library, each with a stable code the MCP toolset passes through."""

from __future__ import annotations

from typing import Any

from ade_platform.lib.errors import CodedError


class SnowfakeryError(CodedError):
    """An expected failure: `code` is stable (listed in the bridge's ERROR_CODES), `detail` is safe to show.

    `extra` carries structured detail (for example the `errors` list with filename and line).
    """

    def fields(self) -> dict[str, Any]:
        """The spec's error object (section 11) flattened next to `error`/`detail`: `kind`, `message` and
        `location` {filename, line} for every error about a recipe (one with an `errors` list), not only runs."""
        out = dict(self.extra)
        errors = [e for e in out.get("errors") or [] if isinstance(e, dict)]
        out.setdefault("message", self.detail)
        if errors:
            first = errors[0]
            out.setdefault("kind", first.get("kind"))
            out.setdefault("location", {"filename": first.get("filename"), "line": first.get("line")})
        return out


def path_not_allowed(path: str) -> SnowfakeryError:
    return SnowfakeryError("path_not_allowed", f"{path!r} is outside the snowfakery workspace")
