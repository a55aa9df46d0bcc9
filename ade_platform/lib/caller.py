"""Who is calling: the person (and program) behind the tool call being served, named in the audit runs it starts.

The gateway sets the caller for the duration of each call (`calling_as`, a context variable: concurrent calls
never see each other's caller, and worker threads started with `anyio.to_thread` inherit it). Where no caller was
set (stdio, loopback HTTP without a token, code that runs outside a tool call) the caller is the local OS user.
"""

from __future__ import annotations

import contextlib
import functools
import getpass
import os
import re
from collections.abc import Iterator
from contextvars import ContextVar
from dataclasses import dataclass, field

_MAX_NAME = 200
_UNPRINTABLE = re.compile(r"[\x00-\x1f\x7f]")


@dataclass(frozen=True)
class Caller:
    user: str  # the signed-in subject, or the local OS user
    client: str  # the OAuth client (the MCP host or agent), or "local" / "shared-token"
    scopes: frozenset[str] = field(default_factory=frozenset)
    groups: frozenset[str] = field(default_factory=frozenset)
    signed_in: bool = False  # identified by the identity provider (auth: oidc)

    def __post_init__(self) -> None:
        object.__setattr__(self, "user", tag_safe(self.user))
        object.__setattr__(self, "client", tag_safe(self.client))


_CURRENT: ContextVar[Caller | None] = ContextVar("ade_caller", default=None)


def tag_safe(name: str) -> str:
    """A name as it may appear in a run tag: printable, bounded."""
    clean = _UNPRINTABLE.sub("?", str(name)).strip() or "unknown"
    return clean if len(clean) <= _MAX_NAME else clean[: _MAX_NAME - 1] + "…"


@functools.cache
def local_caller() -> Caller:
    """The OS user running this process: the caller of stdio and of a token-less loopback gateway."""
    try:
        user = getpass.getuser()
    except (KeyError, OSError):  # no passwd entry (some containers)
        user = f"uid:{os.getuid()}"
    return Caller(user=user, client="local")


def current_caller() -> Caller:
    """The caller of the tool call being served; the local OS user outside one."""
    return _CURRENT.get() or local_caller()


@contextlib.contextmanager
def calling_as(caller: Caller) -> Iterator[Caller]:
    """Serve one call as `caller` (restored afterwards, so nothing leaks into the next call)."""
    token = _CURRENT.set(caller)
    try:
        yield caller
    finally:
        _CURRENT.reset(token)
