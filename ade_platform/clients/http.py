"""What every client of an HTTP API does (dbt Cloud, Airflow, Prefect, Metabase; Looker's transport uses the retry
policy): one `HttpClient` over httpx, and the rules it applies.

- URLs: an agent-given value is one path segment (`segment`): `../../admin`, `a?x=1` or `a#b` stay inside it
  (percent-encoded, `.` and `..` included), so no value reaches another endpoint of the API.
- Redirects: not followed unless the client asks (`follow_redirects=True`), and then only within the configured
  origin (scheme, host, port): `same_origin_only` refuses any other hop before it is sent. httpx drops the
  Authorization header on a cross-origin hop but keeps every other header (X-API-KEY...) and re-sends the body of
  a 307/308 (a token request's password). A redirect that is not followed is an `upstream_error`.
- Retries (`should_retry`, `retry_delay`): a 429 is sent again whatever the method (the server refused it
  unprocessed); a 5xx answer or a transport failure (refused, reset) only for a request that is safe to repeat: GET,
  HEAD, OPTIONS, PUT, DELETE, or one the caller marks `repeatable` (a read sent as POST, a login). A trigger may
  have started what it asked for, so it is never repeated. Up to MAX_ATTEMPTS, waiting what Retry-After says
  (seconds or an HTTP date, at most MAX_RETRY_AFTER_SECONDS) or a capped exponential backoff. A timeout is not
  repeated: the server may still be working on it, and the configured timeout is the longest a caller waits.
- Errors: raised as the client's CodedError (`error=`): `connection_failed` when the server cannot be reached or
  does not answer in time, `upstream_error` for a refused redirect. Their text names the API and its origin,
  never a credential (the gateway's scrubber passes over it too); statuses are the client's to map.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import Any, TypeVar
from urllib.parse import SplitResult, quote, urlsplit

import httpx

R = TypeVar("R")
MAX_ATTEMPTS = 4
BASE_BACKOFF_SECONDS = 0.25
MAX_BACKOFF_SECONDS = 8.0
MAX_RETRY_AFTER_SECONDS = 30.0
REPEATABLE_METHODS = frozenset({"GET", "HEAD", "OPTIONS", "PUT", "DELETE"})


def segment(value: object) -> str:
    """`value` as one URL path segment."""
    text = str(value)
    if not text:
        raise ValueError("an empty path segment")
    if text.strip(".") == "":  # "." and ".." are dot-segments: URL normalization would resolve them
        return text.replace(".", "%2E")
    return quote(text, safe="")


# --- redirects ---------------------------------------------------------------------------------------------


class CrossOriginRedirect(Exception):
    """A redirect pointed away from the configured origin; it was not followed."""

    def __init__(self, target: str):
        super().__init__(f"redirected to another origin ({target}); not followed")
        self.target = target


def _port(parts: SplitResult) -> int | None:
    try:
        return parts.port
    except ValueError:  # not a number, or out of range
        return None


def origin(url: Any) -> tuple[str, str, int | None]:
    parts = urlsplit(str(url))
    default = {"http": 80, "https": 443}.get(parts.scheme)
    return parts.scheme, (parts.hostname or "").lower(), _port(parts) or default


def host_of(url: Any) -> str:
    """host[:port] of a URL, without the user info a URL may carry."""
    parts = urlsplit(str(url))
    port = _port(parts)
    return f"{parts.hostname or ''}{f':{port}' if port else ''}"


def shown_url(url: Any) -> str:
    """A URL as an error may show it: scheme, host, port and path; no user info, query or fragment."""
    parts = urlsplit(str(url))
    return f"{parts.scheme}://{host_of(url)}{parts.path}".rstrip("/")


def same_origin_only(base_url: str) -> Callable[[httpx.Request], None]:
    """An httpx request hook: every request (redirects included) stays on base_url's origin."""
    allowed = origin(base_url)

    def check(request: httpx.Request) -> None:
        if origin(request.url) != allowed:
            raise CrossOriginRedirect(f"{request.url.scheme}://{host_of(request.url)}")

    return check


def redirect_refused(name: str, response: Any) -> str:
    """The detail of an error for a redirect answer that is not followed."""
    target = host_of(response.headers.get("location", "")) or "the same host"
    return f"{name} answered a redirect (HTTP {response.status_code}) to {target}; not followed"


# --- the retry policy ----------------------------------------------------------------------------------------


def retry_after_seconds(value: str | None, now: datetime | None = None) -> float | None:
    """A Retry-After header's wait in seconds (delay-seconds or an HTTP date); None when absent or unreadable."""
    if not value or not value.strip():
        return None
    try:
        seconds = float(value)
    except ValueError:
        try:
            when = parsedate_to_datetime(value.strip())
        except (TypeError, ValueError, IndexError):
            return None
        if when.tzinfo is None:
            when = when.replace(tzinfo=UTC)
        seconds = (when - (now or datetime.now(UTC))).total_seconds()
    return max(0.0, seconds) if math.isfinite(seconds) else None


def retry_delay(attempt: int, response: Any = None) -> float:
    """How long to wait after failed attempt `attempt` (from 0): the response's Retry-After when it has one
    (capped), else BASE_BACKOFF_SECONDS doubled per attempt up to MAX_BACKOFF_SECONDS."""
    headers = getattr(response, "headers", None)
    wait = retry_after_seconds(headers.get("Retry-After")) if headers is not None else None
    if wait is not None:
        return min(wait, MAX_RETRY_AFTER_SECONDS)
    return min(BASE_BACKOFF_SECONDS * 2**attempt, MAX_BACKOFF_SECONDS)


def should_retry(
    method: str,
    attempt: int,
    *,
    status: int | None = None,
    repeatable: bool | None = None,
) -> bool:
    """Whether a request is sent again after failed attempt `attempt` (from 0): its answer's `status`, or None
    for a transport failure. `repeatable` overrides what the method says (see the module's docstring)."""
    if attempt + 1 >= MAX_ATTEMPTS:
        return False
    if status == 429:
        return True
    if status is not None and status < 500:
        return False
    return repeatable if repeatable is not None else method.upper() in REPEATABLE_METHODS


def retrying(
    method: str,
    send: Callable[[], R],
    *,
    repeatable: bool | None = None,
    retry_on: tuple[type[Exception], ...] = (),
) -> R:
    """`send()`'s answer (anything with `status_code` and `headers`) once the policy allows no further attempt.
    A `retry_on` failure is repeated like a 5xx and raised when it is the last; anything else `send` raises
    propagates at once (so `send` raises its timeouts as the final error)."""
    attempt = 0
    while True:
        try:
            response = send()
        except retry_on:
            if not should_retry(method, attempt, repeatable=repeatable):
                raise
            time.sleep(retry_delay(attempt))
            attempt += 1
            continue
        status = response.status_code  # type: ignore[attr-defined]
        if status < 400 or not should_retry(method, attempt, status=status, repeatable=repeatable):
            return response
        time.sleep(retry_delay(attempt, response))
        attempt += 1


# --- the client ------------------------------------------------------------------------------------------------


class HttpClient:
    """httpx with the rules above; `error(code, detail)` builds the client's CodedError. Thread-safe."""

    def __init__(
        self,
        base_url: str,
        *,
        name: str,
        error: Callable[[str, str], Exception],
        timeout: float | httpx.Timeout,
        headers: Mapping[str, str] | None = None,
        follow_redirects: bool = False,
        transport: httpx.BaseTransport | None = None,
    ):
        self.name = name
        self.error = error
        self.follow_redirects = follow_redirects
        self.shown_url = shown_url(base_url)
        hooks = {"request": [same_origin_only(base_url)]} if follow_redirects else {}
        self.http = httpx.Client(
            base_url=base_url.rstrip("/"),
            timeout=timeout,
            headers=headers,
            transport=transport,
            follow_redirects=follow_redirects,
            event_hooks=hooks,
        )

    def request(
        self, method: str, path: str, *, repeatable: bool | None = None, **kwargs: Any
    ) -> httpx.Response:
        """The answer to one request, after the retries the policy allows (the last answer when they run out).
        Statuses are not mapped here: the caller reads them."""

        def send() -> httpx.Response:
            try:
                return self.http.request(method, path, **kwargs)
            except CrossOriginRedirect as exc:
                raise self.error("upstream_error", f"{self.name} {exc}") from None
            except httpx.TimeoutException:
                raise self.error("connection_failed", f"{self.name} did not answer in time") from None

        try:
            response = retrying(method, send, repeatable=repeatable, retry_on=(httpx.TransportError,))
        except httpx.TransportError as exc:
            raise self.error(
                "connection_failed", f"cannot reach {self.name} at {self.shown_url} ({type(exc).__name__})"
            ) from None
        except httpx.HTTPError as exc:  # too many redirects, an undecodable body
            raise self.error("connection_failed", f"{self.name}: {type(exc).__name__}") from None
        if response.is_redirect and not self.follow_redirects:
            raise self.error("upstream_error", redirect_refused(self.name, response))
        return response

    def close(self) -> None:
        self.http.close()
