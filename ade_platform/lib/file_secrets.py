"""What a file tool may hand an agent of a project file: credential stores never, everything else scrubbed.

Two decisions, both on what the tools serve (issue 34):
- `credential_store(path)`: a file whose only purpose is to hold credentials is refused whole, wherever it sits
  (its name, its suffix, or a folder of credentials on its way). Scrubbing such a file would leave its shape and
  the names of every account in it; refusing costs nothing, since no project tool needs one.
- `redact_document(data, scrub)`: every other YAML file is scrubbed *after* it was parsed by the loader that
  serves it, so a value spread over lines, a block scalar, a flow mapping, quoting or an alias is seen as the
  one value the loader reads. A value is replaced when its key names a secret (at any depth, and everything
  below such a key), when it holds a PEM private key or base64 key material, an `env_var('SECRET', 'default')`
  default, a URL with userinfo, or anything the log scrubber (`ade_platform.lib.secrets`) finds. What was
  replaced is reported by key path, never by value.
- `redact_text(text, scrub)`: text that is not parsed (model SQL) gets the log scrubber plus the env_var-default
  shape, reported by line.
"""

from __future__ import annotations

import fnmatch
import itertools
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import PurePath
from typing import Any

from ade_platform.lib.secrets import MIN_SECRET_CHARS, scrubber_for

REDACTED = "***"
MAX_NODES = 200_000  # an alias bomb expands without end; a project YAML has far fewer values

# Files that exist to hold credentials. Names and suffixes are matched case-insensitively.
CREDENTIAL_NAMES = frozenset(
    {
        "profiles.yml", "profiles.yaml",  # dbt connection profiles
        ".user.yml", ".user.yaml",  # dbt's per-user file (id, and sometimes more)
        ".env", ".envrc", ".netrc", ".pgpass", ".pypirc", ".npmrc", ".git-credentials",
        "connections.toml",  # Snowflake CLI connections
        "credentials", "secrets",
    }
)  # fmt: skip
# Key material and keystores, whatever their name.
CREDENTIAL_SUFFIXES = frozenset(
    {
        ".pem",
        ".key",
        ".p8",
        ".p12",
        ".pfx",
        ".jks",
        ".keystore",
        ".kdbx",
        ".ppk",
        ".gpg",
        ".pgp",
        ".asc",
        ".der",
    }
)
# `credentials*`/`secrets*`/`.env.*` only as configuration (yml, json, toml, ...): a model `secrets_audit.sql`
# is SQL about secrets, not a store of them (and its text is still scrubbed).
CREDENTIAL_GLOBS = (
    "credentials*", "secrets*", "secret.*", ".env.*", "*.env", "id_rsa*", "id_dsa*", "id_ecdsa*", "id_ed25519*",
    "*service_account*.json", "*service-account*.json", "*keyfile*.json",
)  # fmt: skip
_CODE_SUFFIXES = frozenset({".sql", ".py", ".md", ".csv"})
# Folders of credentials (home-directory conventions of dbt, ssh, clouds and tools).
CREDENTIAL_DIRS = frozenset(
    {".dbt", ".ssh", ".aws", ".gnupg", ".snowflake", ".azure", ".kube", ".docker", "gcloud"}
)

# A key names a secret when one of its words (snake, kebab, camel case, spaces) is one of these...
_SECRET_WORDS = frozenset(
    {
        "password", "passwd", "pwd", "pass", "passphrase", "secret", "secrets", "token", "tokens", "apikey",
        "credential", "credentials", "keyfile", "authorization", "sas", "dsn",
    }
)  # fmt: skip
# ...or two adjacent words make one of these.
_SECRET_PAIRS = frozenset(
    {
        "api_key", "access_key", "private_key", "secret_key", "account_key", "master_key", "signing_key",
        "encryption_key", "auth_key", "client_key", "service_key", "keyfile_json", "connection_string",
        "conn_str", "session_key",
    }
)  # fmt: skip
_ENV_REFERENCE = re.compile(r"\s*\{\{\s*env_var\(\s*(['\"])[A-Za-z_][A-Za-z0-9_]*\1\s*\)\s*\}\}\s*")
_ENV_DEFAULT = re.compile(r"(env_var\(\s*(['\"])([^'\"]*)\2\s*,\s*)(['\"])((?:\\.|(?!\4).)*)(\4)", re.DOTALL)
_PEM = re.compile(r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----", re.IGNORECASE)
_BASE64_BLOB = re.compile(r"[A-Za-z0-9+/_\-\s]{40,}={0,2}")
_DER_KEY = re.compile(r"\bMII[A-Za-z0-9+/]{60,}")  # a DER sequence, base64: how keys and certificates start
_URL_USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.\-]*://[^:/@\s]*:)([^@\s/]+)(@)")
_WORD_SPLIT = re.compile(r"[^A-Za-z0-9]+|(?<=[a-z0-9])(?=[A-Z])")


class TooLarge(ValueError):
    """The document expands to more than MAX_NODES values (an alias bomb)."""


def credential_store(path: str | PurePath) -> str | None:
    """Why this file is a credential store (the rule), or None. Every part of the path is looked at."""
    pure = PurePath(path)
    for part in pure.parts[:-1]:
        if part.lower() in CREDENTIAL_DIRS:
            return f"folder {part}"
    name = pure.name.lower()
    if name in CREDENTIAL_NAMES:
        return f"name {name}"
    suffix = PurePath(name).suffix
    if suffix in CREDENTIAL_SUFFIXES:
        return f"suffix {suffix}"
    if suffix not in _CODE_SUFFIXES:
        for glob in CREDENTIAL_GLOBS:
            if fnmatch.fnmatchcase(name, glob):
                return f"name {glob}"
    return None


def key_words(key: Any) -> list[str]:
    return [w.lower() for w in _WORD_SPLIT.split(str(key)) if w]


def secret_key(key: Any) -> bool:
    """The key names a secret: `password`, `db-pass`, `clientSecret`, `private_key_passphrase`, `keyfile_json`,
    `AWS_SECRET_ACCESS_KEY`, `" Api Key "`..."""
    words = key_words(key)
    if any(w in _SECRET_WORDS for w in words):
        return True
    return any(f"{a}_{b}" in _SECRET_PAIRS for a, b in itertools.pairwise(words))


def _key_ish(key: Any) -> bool:
    words = key_words(key)
    return any(w in ("key", "cert", "certificate", "pem", "der", "pkcs8", "jwk") for w in words)


@dataclass
class Redactions:
    """What was replaced: key paths (or `line N`), never values. `parsed` is false when the text could not be
    parsed and was scrubbed by shapes alone."""

    paths: list[str] = field(default_factory=list)
    parsed: bool = True

    def answer(self) -> dict[str, Any]:
        return {"count": len(self.paths), "paths": self.paths[:200], "parsed": self.parsed}


def _env_defaults(text: str) -> str:
    """`env_var('DB_PASSWORD', 'hunter2')` -> `env_var('DB_PASSWORD', '***')` when the variable names a secret."""

    def replace(m: re.Match[str]) -> str:
        if not secret_key(m.group(3)):
            return m.group(0)
        return f"{m.group(1)}{m.group(4)}{REDACTED}{m.group(6)}"

    return _ENV_DEFAULT.sub(replace, text)


def _scrub_string(value: str, key: Any, scrub: Callable[[str], str]) -> str:
    """The string with every secret in it replaced; the whole of it when it is key material."""
    if _PEM.search(value):
        return REDACTED
    compact = value.strip()
    if _key_ish(key) and _BASE64_BLOB.fullmatch(compact) and len(re.sub(r"\s", "", compact)) >= 40:
        return REDACTED
    out = _DER_KEY.sub(REDACTED, value)
    out = _env_defaults(out)
    out = _URL_USERINFO.sub(lambda m: f"{m.group(1)}{REDACTED}{m.group(3)}", out)
    return scrub(out)


class _Walk:
    def __init__(self, scrub: Callable[[str], str]):
        self.scrub = scrub
        self.found = Redactions()
        self.nodes = 0

    def value(self, value: Any, path: str, key: Any, under_secret: bool) -> Any:
        self.nodes += 1
        if self.nodes > MAX_NODES:
            raise TooLarge(f"more than {MAX_NODES} values once aliases are expanded")
        if isinstance(value, dict):
            return {
                k: self.value(v, _join(path, k), k, under_secret or secret_key(k)) for k, v in value.items()
            }
        if isinstance(value, list | tuple):
            return [self.value(v, f"{path}[{i}]", key, under_secret) for i, v in enumerate(value)]
        if value is None or isinstance(value, bool):
            return value
        if under_secret:
            if isinstance(value, str) and (not value or _ENV_REFERENCE.fullmatch(value)):
                return value  # empty, or only names the variable that holds it: no secret in it
            self.found.paths.append(path or "$")
            return REDACTED
        if isinstance(value, bytes):  # !!binary
            self.found.paths.append(path or "$")
            return REDACTED
        if isinstance(value, str):
            scrubbed = _scrub_string(value, key, self.scrub)
            if scrubbed != value:
                self.found.paths.append(path or "$")
            return scrubbed
        if isinstance(value, int | float):
            return value
        text = str(value)  # dates and other YAML scalars: served as JSON text anyway
        scrubbed = _scrub_string(text, key, self.scrub)
        if scrubbed != text:
            self.found.paths.append(path or "$")
            return scrubbed
        return value


def _join(path: str, key: Any) -> str:
    text = str(key)
    part = text if re.fullmatch(r"[A-Za-z0-9_\-+]+", text) else repr(text)
    return f"{path}.{part}" if path else part


def _secret_values(value: Any, under_secret: bool, budget: list[int]) -> set[str]:
    """The strings held under secret-named keys: the same text anywhere else in the document (an anchor on a
    harmless key that a `password: *alias` reuses, the password repeated in a URL) is the same secret."""
    budget[0] -= 1
    if budget[0] < 0:
        raise TooLarge(f"more than {MAX_NODES} values once aliases are expanded")
    if isinstance(value, dict):
        found: set[str] = set()
        for k, v in value.items():
            found |= _secret_values(v, under_secret or secret_key(k), budget)
        return found
    if isinstance(value, list | tuple):
        return set().union(*(_secret_values(v, under_secret, budget) for v in value)) if value else set()
    if under_secret and isinstance(value, str | int | float) and not isinstance(value, bool):
        text = str(value)
        return {text} if len(text) >= MIN_SECRET_CHARS and not _ENV_REFERENCE.fullmatch(text) else set()
    return set()


def redact_document(data: Any, scrub: Callable[[str], str]) -> tuple[Any, Redactions]:
    """A parsed YAML/JSON document with every secret value replaced by ***, and where they were. TooLarge when
    aliases expand it past MAX_NODES values."""
    local = scrubber_for(_secret_values(data, False, [MAX_NODES]))
    walk = _Walk(lambda text: scrub(local.scrub(text)))
    return walk.value(data, "", None, False), walk.found


def redact_text(text: str, scrub: Callable[[str], str]) -> tuple[str, Redactions]:
    """Unparsed text scrubbed by shapes: the log scrubber, env_var defaults, PEM and DER key material, URL
    userinfo. Reported as the lines that changed."""
    found = Redactions(parsed=False)
    before = text.splitlines()
    out = _PEM_BLOCK.sub(REDACTED, text)
    out = _DER_KEY.sub(REDACTED, out)
    out = _env_defaults(out)
    out = _URL_USERINFO.sub(lambda m: f"{m.group(1)}{REDACTED}{m.group(3)}", out)
    out = scrub(out)
    if out != text:
        after = out.splitlines()
        found.paths = [
            f"line {i + 1}" for i, line in enumerate(after) if i >= len(before) or line != before[i]
        ]
        found.paths = found.paths or ["text"]
    return out, found


_PEM_BLOCK = re.compile(
    r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----.*?(?:-----END [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----|\Z)",
    re.DOTALL | re.IGNORECASE,
)
