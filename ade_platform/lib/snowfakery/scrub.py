"""Scrubbing of text that leaves the server: secrets, environment values and paths outside the workspace.

Everything a run prints, every error message and every file name is passed through a `Scrubber` before
it reaches an agent. Workspace paths become relative; any other absolute path becomes `<path>`; values of
environment variables whose names look secret (and of any variable the caller marks) become `***`.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from pathlib import Path

_SECRET_NAME = re.compile(
    r"(pass(word|wd)?|secret|token|api[_-]?key|credential|private|auth|session|cookie|dsn|dburl|"
    r"database_url|conn(ection)?_str)",
    re.IGNORECASE,
)
# Absolute POSIX paths of at least two segments, and Windows drive paths.
_ABS_PATH = re.compile(r"(?<![\w/.:~-])(?:/[\w.@+~-]+){2,}/?|[A-Za-z]:\\[^\s'\"]+")
_URL_CREDENTIALS = re.compile(r"(\b[a-z][a-z0-9+.-]*://)[^/\s:@]+:[^/\s@]+@", re.IGNORECASE)
_MIN_SECRET_LENGTH = 4


class Scrubber:
    """Replaces secrets and foreign paths in text. Build once; call `text()` on everything outbound."""

    def __init__(
        self,
        roots: Mapping[Path, str],
        *,
        env: Mapping[str, str] | None = None,
        extra_secrets: Iterable[str] = (),
    ) -> None:
        # root -> label ("" for the workspace itself: paths become plain relative paths)
        self._roots = sorted(
            ((str(Path(root).resolve()), label) for root, label in roots.items()),
            key=lambda item: -len(item[0]),
        )
        environ = os.environ if env is None else env
        secrets = {v for k, v in environ.items() if _SECRET_NAME.search(k) and len(v) >= _MIN_SECRET_LENGTH}
        secrets.update(s for s in extra_secrets if s and len(s) >= _MIN_SECRET_LENGTH)
        self._secrets = sorted(secrets, key=len, reverse=True)

    def path(self, value: str | os.PathLike[str] | None) -> str | None:
        """A path as an agent may see it: relative to its root, or `<path>` when outside every root."""
        if value is None:
            return None
        text = str(value)
        if not os.path.isabs(text):
            return text
        resolved = os.path.normpath(text)
        for root, label in self._roots:
            if resolved == root:
                return label or "."
            if resolved.startswith(root + os.sep):
                rel = resolved[len(root) + 1 :]
                return f"{label}/{rel}" if label else rel
        return "<path>"

    def secrets(self, value: str) -> str:
        """Only the secrets replaced: for generated data, where path-like values are data."""
        for secret in self._secrets:
            if secret in value:
                value = value.replace(secret, "***")
        return value

    def text(self, value: str | None) -> str:
        """Secrets, credentials in URLs and foreign paths replaced: for messages and errors."""
        if not value:
            return value or ""
        out = _URL_CREDENTIALS.sub(r"\1***@", self.secrets(value))
        return _ABS_PATH.sub(lambda m: self.path(m.group(0)) or "<path>", out)

    def lines(self, values: Iterable[str]) -> list[str]:
        return [self.text(v) for v in values]
