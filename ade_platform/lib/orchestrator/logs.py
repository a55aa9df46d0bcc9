"""Log text made safe and bounded for an agent: secrets scrubbed, capped at a length keeping the tail."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

MAX_LOG_CHARS = 50_000
REDACTED = "***"

# Token shapes worth scrubbing even when nobody configured them as secrets.
_TOKEN_SHAPES = (
    re.compile(r"(?i)\b(bearer|basic)\s+[A-Za-z0-9._~+/=-]{8,}"),
    re.compile(r"\beyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}"),  # JWT
    re.compile(r"\b(?:AKIA|ASIA)[A-Z0-9]{16}\b"),  # AWS access key id
    re.compile(r"\bgh[pousr]_[A-Za-z0-9]{30,}\b"),  # GitHub token
    re.compile(r"\bpnu_[A-Za-z0-9]{20,}\b"),  # Prefect API key
    re.compile(r"\bdbtu_[A-Za-z0-9_-]{20,}\b"),  # dbt Cloud token
    re.compile(r"\bxox[abposr]-[A-Za-z0-9-]{10,}\b"),  # Slack token
    re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?-----END [A-Z ]*PRIVATE KEY-----"),
)
# key=value / key: value where the key names a secret: keep the key, drop the value.
_SECRET_ASSIGNMENT = re.compile(
    r"(?i)\b([\w-]*(?:password|passwd|secret|token|api[_-]?key|private[_-]?key|credential)[\w-]*)"
    r"(\"?\s*[:=]\s*)(\"[^\"]*\"|'[^']*'|[^\s,;&]+)"
)
# user:password@ in connection URLs.
_URL_PASSWORD = re.compile(r"(\b[a-z][a-z0-9+.-]*://[^:/@\s]+:)([^@\s]+)(@)")


@dataclass(frozen=True)
class CappedLog:
    text: str
    length_chars: int
    truncated: bool


def scrub_secrets(text: str, secrets: Iterable[str] = ()) -> str:
    """Replace configured secret values and common credential shapes with ***."""
    for secret in sorted({s for s in secrets if s and len(s) >= 4}, key=len, reverse=True):
        text = text.replace(secret, REDACTED)
    for shape in _TOKEN_SHAPES:
        text = shape.sub(
            lambda m: f"{m.group(1)} {REDACTED}" if m.re.groups else REDACTED,
            text,
        )
    text = _SECRET_ASSIGNMENT.sub(lambda m: f"{m.group(1)}{m.group(2)}{REDACTED}", text)
    return _URL_PASSWORD.sub(lambda m: f"{m.group(1)}{REDACTED}{m.group(3)}", text)


def cap_log(text: str, secrets: Iterable[str] = (), max_chars: int = MAX_LOG_CHARS) -> CappedLog:
    """Scrub, then keep the last max_chars characters (errors are at the end), cut at a line start."""
    clean = scrub_secrets(text, secrets)
    if len(clean) <= max_chars:
        return CappedLog(clean, len(clean), False)
    tail = clean[-max_chars:]
    newline = tail.find("\n")
    if 0 <= newline < 2_000:
        tail = tail[newline + 1 :]
    return CappedLog(tail, len(clean), True)
