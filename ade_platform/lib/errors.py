"""The one base of every expected failure the platform raises: a stable code, a detail safe to show an agent.

Every layer's error class subclasses `CodedError` (`StoreError`, `ArtifactError`, `WarehouseError`, `BiError`,
`OrchestratorError`, `DbtCloudError`, `SnowflakeError`, `SnowfakeryError`, ...), so the gateway maps any of them
to the structured error result in one place (`mcp_bridge.errors.to_tool_error`): `code` becomes `error`,
`detail` and `hint` are shown as they are, `fields()` are added next to them. A code must be registered in
`mcp_bridge.errors.ERROR_CODES` (`tests/contract/test_error_codes.py` checks the codes raised here).

`detail` never holds a credential, a path outside the workspace, a traceback or a row of data: it is what an
agent reads. Anything else a caller needs (an HTTP status, a raw message to scrub) is an attribute of the
subclass, never part of `extra`.
"""

from __future__ import annotations

from typing import Any, ClassVar


class CodedError(Exception):
    """An expected failure: `code` (stable, registered), `detail` (agent-safe), an optional `hint`, and
    `extra` fields shown next to them in the structured error."""

    # A hint per code for this system's errors, where the shared default (ERROR_CODES) would mislead.
    hints: ClassVar[dict[str, str]] = {}

    def __init__(self, code: str, detail: str, hint: str | None = None, **extra: Any) -> None:
        super().__init__(detail)
        self.code = code
        self.detail = detail
        self.hint = hint or self.hints.get(code)
        self.extra = extra

    def fields(self) -> dict[str, Any]:
        """What the structured error shows next to `error`, `detail` and `hint` (by default `extra`)."""
        return dict(self.extra)
