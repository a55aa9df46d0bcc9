"""Failures the Snowflake services raise. Their ``detail`` is safe to show an agent: no values, no paths."""

from __future__ import annotations

from typing import Any

from ade_platform.lib.errors import CodedError

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
    "DDL_KIND_REFUSED": "E1014",
    "DDL_BODY_REFUSED": "E1015",
}
# Failures after which a multi-call collection (discovery, sync) stops instead of skipping the one object.
FATAL_CODES = frozenset({"AUTH_FAILED", "CLI_NOT_FOUND", "QUERY_TIMEOUT"})


class SnowflakeError(CodedError):
    """``code`` is one of E_CODES (or a generic bridge code such as ``invalid_argument``); ``extra`` holds the
    guard's classification, reasons and refusal, when it refused the statement."""

    def __init__(self, code: str, detail: str, **extra: Any):
        super().__init__(code, detail, **extra)

    @property
    def e_code(self) -> str | None:
        return E_CODES.get(self.code)

    def fields(self) -> dict[str, Any]:
        """Shaped as the spec's error (6.2) too: `message` is the detail, `code` the E-code."""
        out: dict[str, Any] = {**self.extra, "message": self.detail}
        if self.e_code:
            out["code"] = self.e_code
        return out


class CliFailure(SnowflakeError):
    """The `snow` CLI failed. ``raw`` is its unscrubbed message: never show it without scrub_error."""

    def __init__(self, code: str, raw: str, sf_code: str | None = None):
        super().__init__(code, "the snow CLI reported an error")
        self.raw = raw
        self.sf_code = sf_code
