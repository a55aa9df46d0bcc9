"""What every HTTP client does with the URLs it builds: agent-given values are one path segment each, and a
redirect never takes a request (its credentials, its body) to another origin.

- `segment(value)`: `../../admin`, `a?x=1` or `a#b` stay inside their segment (percent-encoded, `.` and `..`
  included), so no value reaches another endpoint of the API.
- `same_origin_only(base_url)`: an httpx request hook that refuses any request leaving the configured origin
  (scheme, host and port). httpx follows redirects only when asked; when it does, it drops the Authorization
  header on a cross-origin hop but keeps every other header (X-API-KEY...) and re-sends the body of a 307/308
  (a token request's password), so clients that follow redirects install this hook. Clients that do not follow
  treat a redirect answer as `upstream_error` (`redirect_refused`).
"""

from __future__ import annotations

from typing import Any
from urllib.parse import quote, urlsplit


def segment(value: object) -> str:
    """`value` as one URL path segment."""
    text = str(value)
    if not text:
        raise ValueError("an empty path segment")
    if text.strip(".") == "":  # "." and ".." are dot-segments: URL normalization would resolve them
        return text.replace(".", "%2E")
    return quote(text, safe="")


class CrossOriginRedirect(Exception):
    """A redirect pointed away from the configured origin; it was not followed."""

    def __init__(self, target: str):
        super().__init__(f"redirected to another origin ({target}); not followed")
        self.target = target


def origin(url: Any) -> tuple[str, str, int | None]:
    parts = urlsplit(str(url))
    default = {"http": 80, "https": 443}.get(parts.scheme)
    return parts.scheme, (parts.hostname or "").lower(), parts.port or default


def same_origin_only(base_url: str) -> Any:
    """An httpx request hook: every request (redirects included) stays on base_url's origin."""
    allowed = origin(base_url)

    def check(request: Any) -> None:
        if origin(request.url) != allowed:
            raise CrossOriginRedirect(
                f"{request.url.scheme}://{request.url.netloc.decode('ascii', 'replace')}"
            )

    return check


def redirect_refused(name: str, response: Any) -> str:
    """The detail of an error for a redirect answer that is not followed."""
    location = response.headers.get("location", "")
    target = urlsplit(location).netloc or "the same host"
    return f"{name} answered a redirect (HTTP {response.status_code}) to {target}; not followed"
