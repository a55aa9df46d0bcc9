"""Failures the Snowflake services raise. Their ``detail`` is safe to show an agent: no values, no paths."""

from __future__ import annotations

from typing import Any

# Spec error table (section 6.1) first, in its order; then the guardrail refusals and run-time failures.
E_CODES: dict[str, str] = {
    "EXCLUDED_OBJECT": "E1001",
    "QUERY_CLASSIFIED": "E1002",
    "AUTH_FAILED": "E1003",
    "OBJECT_NOT_FOUND": "E1004",
    "PERMISSION_DENIED": "E1005",
    "CLI_NOT_FOUND": "E1006",
    "WRITE_REFUSED": "E1007",
    "MULTI_STATEMENT": "E1008",
    "NOT_DDL": "E1009",
    "QUERY_FAILED": "E1010",
    "QUERY_TIMEOUT": "E1011",
    "SNOWFLAKE_NOT_CONFIGURED": "E1012",
    "SESSION_STATE_REFUSED": "E1013",
}
# Failures after which a multi-call collection (discovery, sync) stops instead of skipping the one object.
FATAL_CODES = frozenset({"AUTH_FAILED", "CLI_NOT_FOUND", "QUERY_TIMEOUT"})


class SnowflakeError(Exception):
    """``code`` is one of E_CODES (or a generic bridge code such as ``invalid_argument``)."""

    def __init__(self, code: str, detail: str, **extra: Any):
        super().__init__(f"{code}: {detail}")
        self.code = code
        self.detail = detail
        self.extra = extra

    @property
    def e_code(self) -> str | None:
        return E_CODES.get(self.code)


class CliFailure(SnowflakeError):
    """The `snow` CLI failed. ``raw`` is its unscrubbed message: never show it without scrub_error."""

    def __init__(self, code: str, raw: str, sf_code: str | None = None):
        super().__init__(code, "the snow CLI reported an error")
        self.raw = raw
        self.sf_code = sf_code
