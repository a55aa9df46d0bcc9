"""The one secret scrubber for text that leaves the platform: logs, error details, audit run tags.

It knows two things:
- every secret configured anywhere in the settings (`configured_secrets` walks the whole model for `SecretStr`
  fields: dbt Cloud token, Looker/Metabase secrets, warehouse passwords, S3 keys, mcp.http.token, orchestrator
  credentials), and the forms they take in text: as written, split by a line break, URL-encoded, JSON/repr
  escaped and base64-encoded (alone or inside a longer base64 string, such as a Basic header);
- the common shapes of credentials nobody configured here: `Authorization:` headers and bearer/basic schemes,
  `password=`/`pwd:`/`--password x` and Python-repr `{'password': ...}`, URL userinfo, PEM private keys, and
  token formats (dbt Cloud `dbtc_`/`dbtu_`, JWTs, AWS, GitHub, Slack, Prefect, Metabase).

Every pattern runs on RE2 (google-re2): its matching time is linear in the text whatever the text holds, so a
hostile log cannot make scrubbing quadratic (the `regex`/`re` backtracking engines can).
"""

from __future__ import annotations

import base64
import functools
import json
import re
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import re2
from pydantic import BaseModel, SecretBytes, SecretStr

REDACTED = "***"
MIN_SECRET_CHARS = 4  # shorter values would scrub ordinary words
MIN_ENCODED_CHARS = 8  # a base64 fragment shorter than this is too likely to occur by chance
# A line break (and the indentation a wrapped log line gets) allowed between two characters of a secret.
_LINE_BREAK = r"(?:\\?\r?\n[ \t]*)?"

_SECRET_WORD = (
    r"password|passwd|pwd|passphrase|secret|token|api[_-]?key|apikey|access[_-]?key|private[_-]?key"
    r"|credentials?|auth[_-]?string|session[_-]?id"
)


def _options(max_mem: int = 64 << 20) -> Any:
    options = re2.Options()
    options.max_mem = max_mem
    options.log_errors = False  # RE2 would print every refused pattern on stderr
    return options


def _compile(pattern: str) -> Any:
    return re2.compile(pattern, _options())


def configured_secrets(settings: BaseModel) -> tuple[str, ...]:
    """Every secret value in a settings model (any depth), plus the password half of `user:password` values."""
    found: set[str] = set()
    for value in _secret_values(settings, depth=0):
        found.add(value)
        user, colon, password = value.partition(":")
        if colon and user and password and "/" not in value:
            found.add(password)
    return tuple(sorted(s for s in found if len(s) >= MIN_SECRET_CHARS))


def _secret_values(value: Any, depth: int) -> Iterator[str]:
    if depth > 20:
        return
    if isinstance(value, SecretStr):
        yield value.get_secret_value()
    elif isinstance(value, SecretBytes):
        yield value.get_secret_value().decode("utf-8", "replace")
    elif isinstance(value, BaseModel):
        for name in type(value).model_fields:
            yield from _secret_values(getattr(value, name, None), depth + 1)
    elif isinstance(value, dict):
        for item in value.values():
            yield from _secret_values(item, depth + 1)
    elif isinstance(value, list | tuple):
        for item in value:
            yield from _secret_values(item, depth + 1)


def _forms(secret: str) -> list[str]:
    """Regex alternatives for the ways a secret appears in text."""
    literal = [secret]
    for quote in (functools.partial(_url_quote, plus=False), functools.partial(_url_quote, plus=True)):
        encoded = quote(secret)
        literal += [encoded, re.sub(r"%[0-9A-F]{2}", lambda m: m.group().lower(), encoded)]
    literal += [json.dumps(secret)[1:-1], repr(secret)[1:-1]]
    literal += _base64_cores(secret.encode())
    forms = {re2.escape(form) for form in literal if len(form) >= MIN_SECRET_CHARS}
    if len(secret) >= 8:  # as written, or wrapped over two or more lines
        forms.add(_LINE_BREAK.join(re2.escape(c) for c in secret))
    return sorted(forms, key=len, reverse=True)


def _url_quote(secret: str, plus: bool) -> str:
    from urllib.parse import quote, quote_plus

    return quote_plus(secret, safe="") if plus else quote(secret, safe="")


def _base64_cores(raw: bytes) -> list[str]:
    """The base64 characters that depend on the secret's bytes only, for each of the three alignments it can
    have inside a longer encoded string (e.g. `user:secret` in a Basic header), in both alphabets."""
    cores = []
    for offset in range(3):
        encoded = base64.b64encode(b"\0" * offset + raw).decode()
        first = -(-8 * offset // 6)  # characters before this one mix in the bytes ahead of the secret
        last = 8 * (offset + len(raw)) // 6  # from here on they mix in the bytes after it (or padding)
        core = encoded[first:last]
        if len(core) >= MIN_ENCODED_CHARS:
            cores += [core, core.replace("+", "-").replace("/", "_")]
    return cores


def _keep(*groups: int) -> Callable[[Any], str]:
    """A replacement that keeps the named groups and replaces the value group (the last one) with ***,
    keeping its quotes when it was quoted."""

    def replace(match: Any) -> str:
        value = match.group(match.re.groups) or ""
        quote = value[:1] if value[:1] in ("'", '"') else ""
        closing = quote if quote and len(value) > 1 and value.endswith(quote) else ""
        return "".join(match.group(g) or "" for g in groups) + quote + REDACTED + closing

    return replace


_QUOTED_OR_BARE = r"(\"[^\"\n]*\"?|'[^'\n]*'?|[^\s\"',;&]+)"
# (pattern, replacement): RE2 patterns, applied in order after the configured secrets.
_SHAPES: tuple[tuple[Any, Any], ...] = (
    # PEM private keys: the whole block; one cut off at the end of the text runs to the end.
    (
        _compile(r"-----BEGIN [A-Z ]*PRIVATE KEY-----(?s:.*?)(?:-----END [A-Z ]*PRIVATE KEY-----|\z)"),
        REDACTED,
    ),
    # Authorization / Proxy-Authorization headers, whatever the scheme (Bearer, Basic, Token, Digest...).
    (
        _compile(
            r"(?i)(\b(?:proxy-)?authorization[\"']?\s*[:=]\s*[\"']?)((?:bearer|basic|token|digest|negotiate)\s+)?"
            r"([^\s\"',;]+)"
        ),
        _keep(1, 2),
    ),
    (_compile(r"(?i)\b(bearer|basic)(\s+)([A-Za-z0-9._~+/=-]{8,})"), _keep(1, 2)),
    # key=value, key: value, 'key': 'value', "key": "value", key => value, where the key names a secret.
    (
        _compile(rf"(?i)(\b[\w.-]*(?:{_SECRET_WORD})[\w.-]*[\"']?\s*(?:[:=]|=>)\s*){_QUOTED_OR_BARE}"),
        _keep(1),
    ),
    # --password x, --api-key "x", -password=x (a flag: a dash that starts a word, not one inside it)
    (
        _compile(rf"(?im)((?:^|[\s\"'(\[=,])--?[\w-]*(?:{_SECRET_WORD})[\w-]*(?:\s+|=)){_QUOTED_OR_BARE}"),
        _keep(1),
    ),
    # user:password@ in URLs
    (_compile(r"(?i)(\b[a-z][a-z0-9+.-]*://[^:/@\s]*:)([^@\s]+)(@)"), lambda m: f"{m.group(1)}{REDACTED}@"),
    # token formats
    (_compile(r"\beyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}"), REDACTED),  # JWT
    (_compile(r"\b(?:AKIA|ASIA)[A-Z0-9]{16}\b"), REDACTED),  # AWS access key id
    (_compile(r"\bgh[pousr]_[A-Za-z0-9]{30,}\b"), REDACTED),  # GitHub
    (_compile(r"\bpnu_[A-Za-z0-9]{20,}\b"), REDACTED),  # Prefect API key
    (_compile(r"\bdbt[cu]_[A-Za-z0-9_-]{20,}"), REDACTED),  # dbt Cloud service (dbtc_) / user (dbtu_) token
    (_compile(r"\bmb_[A-Za-z0-9+/=_-]{20,}"), REDACTED),  # Metabase API key
    (_compile(r"\bxox[abposr]-[A-Za-z0-9-]{10,}\b"), REDACTED),  # Slack
)
_END_OF_KEY = _compile(r"-----END [A-Z ]*PRIVATE KEY-----")
_BEGIN_OF_KEY = _compile(r"-----BEGIN [A-Z ]*PRIVATE KEY-----")


class SecretScrubber:
    """Replaces configured secrets (in every form listed above) and credential shapes with ***."""

    def __init__(self, secrets: Iterable[str] = ()):
        values = sorted({s for s in secrets if s and len(s) >= MIN_SECRET_CHARS}, key=len, reverse=True)
        self.count = len(values)
        forms = [form for value in values for form in _forms(value)]
        # one pass for all of them; RE2 takes the first alternative that matches, so longest first
        self._known = _compile("|".join(forms)) if forms else None

    def __call__(self, text: str) -> str:
        return self.scrub(text)

    def scrub(self, text: str) -> str:
        if not text:
            return text
        if self._known is not None:
            text = self._known.sub(REDACTED, text)
        text = _orphan_key_tail(text)
        for pattern, replacement in _SHAPES:
            text = pattern.sub(replacement, text)
        return text


def _orphan_key_tail(text: str) -> str:
    """A text cut inside a private key (a log's tail) holds its END line but not its BEGIN: drop all before."""
    end = _END_OF_KEY.search(text)
    if end is None:
        return text
    begin = _BEGIN_OF_KEY.search(text)
    if begin is not None and begin.start() < end.start():
        return text
    return REDACTED + text[end.end() :]


@functools.lru_cache(maxsize=16)
def _cached(secrets: frozenset[str]) -> SecretScrubber:
    return SecretScrubber(secrets)


def scrubber_for(secrets: Iterable[str] | SecretScrubber = ()) -> SecretScrubber:
    """The scrubber of these secrets (built once per set: compiling the forms of many secrets takes ms)."""
    if isinstance(secrets, SecretScrubber):
        return secrets
    return _cached(frozenset(secrets))


def settings_scrubber(settings: BaseModel) -> SecretScrubber:
    """The scrubber of every secret configured in these settings."""
    return scrubber_for(configured_secrets(settings))
