"""What both Snowflake transports (the `snow` CLI, cli.py; the connector, connector.py) share: the statement text
they refuse before anything runs, and how a failure's message maps to an error code."""

from __future__ import annotations

import re
from dataclasses import dataclass

from ade_platform.lib.snowflake.errors import SnowflakeError


@dataclass(frozen=True)
class SnowContext:
    """A snow connection name (None: the configuration's default) and the context its statements run in: what
    both transports are pinned to."""

    connection: str | None = None
    config_file: str | None = None
    timeout: float = 60.0
    database: str | None = None
    schema: str | None = None
    role: str | None = None
    warehouse: str | None = None


# A snow CLI client command starts a statement: after optional whitespace and comments, a '!'.
_CLIENT_COMMAND = re.compile(r"(^|[\n;]|\*/)\s*!", re.M)
_SF_CODE = re.compile(r"\b(\d{6})\s*\(")
_AUTH = re.compile(
    r"not configured|could not connect|incorrect username or password|authenticat|\b39\d{4}\b|\b25000[1-6]\b|"
    r"jwt|private key|saml|oauth|mfa|password",
    re.I,
)
_CONNECTION_FAILURE = re.compile(r"could not connect|\b25000[1-6]\b|\b25100\d\b", re.I)


def classify_failure(message: str) -> tuple[str, str | None]:
    """(code, Snowflake error number) for a failed CLI call."""
    match = _SF_CODE.search(message)
    sf_code = match.group(1) if match else None
    if _CONNECTION_FAILURE.search(message) or (sf_code and sf_code.startswith("39")):
        return "AUTH_FAILED", sf_code
    if sf_code in ("003001", "003008", "003013", "003028") or "insufficient privileges" in message.lower():
        return "PERMISSION_DENIED", sf_code
    if sf_code in ("002003", "002043") or "does not exist" in message.lower():
        return "OBJECT_NOT_FOUND", sf_code
    if sf_code is None and _AUTH.search(message):
        return "AUTH_FAILED", sf_code
    return "QUERY_FAILED", sf_code


def check_statement_text(sql: str) -> None:
    if _CLIENT_COMMAND.search(sql):
        raise SnowflakeError(
            "WRITE_REFUSED", "snow CLI client commands (!source, !result, ...) are not accepted"
        )
    if ";>" in sql:
        raise SnowflakeError("WRITE_REFUSED", "asynchronous execution (;>) is not accepted")
