"""One paging and filtering contract for every tool that returns a list (docs/PAGING.md).

A page is `limit` items from an offset; `next_cursor` names the next offset and the version of the list it was
cut from (a snapshot's version, or for a live list a digest of its items), plus a digest of the query (tool and
filters). A cursor is refused with `invalid_cursor` when any of them differ: a page of a newer snapshot, or of
another query, would silently skip or repeat items.

Filters share their names and meaning across tools: `name_pattern` (a case-insensitive glob), `state`, and a
`since`/`until` window (ISO-8601 or a span back from now: 90m, 24h, 7d, 2w).
"""

from __future__ import annotations

import base64
import fnmatch
import hashlib
import json
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Generic, NotRequired, TypedDict, TypeVar, Unpack

from ade_platform.lib.errors import CodedError
from ade_platform.lib.timestamps import parse_timestamp

T = TypeVar("T")

DEFAULT_LIMIT = 100
MAX_LIMIT = 1000
_CURSOR_FORMAT = 1
_SPAN_SECONDS = {"m": 60.0, "h": 3600.0, "d": 86400.0, "w": 7 * 86400.0}


class PagingError(CodedError):
    """A cursor or filter this tool cannot honour (`invalid_cursor`, `invalid_argument`)."""


@dataclass(frozen=True)
class Page(Generic[T]):
    items: list[T]
    next_cursor: str | None
    total: int | None
    offset: int = 0

    @property
    def truncated(self) -> bool:
        return self.next_cursor is not None

    def fields(self) -> dict[str, Any]:
        """The contract's answer fields: next_cursor, truncated, and total when it is known."""
        out: dict[str, Any] = {"next_cursor": self.next_cursor, "truncated": self.truncated}
        if self.total is not None:
            out["total"] = self.total
        return out


def digest(value: Any) -> str:
    """A short stable digest of a JSON-able value (a query's tool and filters, a live list's item keys)."""
    text = json.dumps(value, sort_keys=True, default=str, separators=(",", ":"))
    return hashlib.blake2b(text.encode(), digest_size=8).hexdigest()


def encode_cursor(version: str, query: Any, offset: int) -> str:
    payload = [_CURSOR_FORMAT, digest(version), digest(query), offset]
    return base64.urlsafe_b64encode(json.dumps(payload).encode()).decode().rstrip("=")


def decode_cursor(cursor: str, version: str, query: Any) -> int:
    """The offset a cursor names, if it was cut from this version of this query's list."""
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        fmt, list_version, query_digest, offset = json.loads(raw)
        if fmt != _CURSOR_FORMAT or not isinstance(offset, int) or offset < 0:
            raise ValueError
    except (ValueError, TypeError):
        raise PagingError(
            "invalid_cursor", "the cursor is not one this tool returned", hint="Pass next_cursor unchanged."
        ) from None
    if query_digest != digest(query):
        raise PagingError(
            "invalid_cursor",
            "the cursor belongs to another query (another tool, item or filter)",
            hint="Pass the same arguments as the call that returned the cursor, or start without one.",
        )
    if list_version != digest(version):
        raise PagingError(
            "invalid_cursor",
            "the list changed since that page (a newer snapshot or live answer): its offsets no longer hold",
            hint="Start again without cursor.",
        )
    return offset


def page_size(limit: int | None, cap: int = MAX_LIMIT, default: int = DEFAULT_LIMIT) -> int:
    """`limit` (or the tool's default), never above `cap` (a server limit such as limits.max_rows)."""
    return max(1, min(limit or default, cap, MAX_LIMIT))


def page(
    items: Sequence[T],
    limit: int | None,
    cursor: str | None,
    *,
    version: str,
    query: Any,
    cap: int = MAX_LIMIT,
    default: int = DEFAULT_LIMIT,
    total: int | bool | None = True,
    budget: tuple[Callable[[T], int], int] | None = None,
) -> Page[T]:
    """The page of `items` a call asked for. `version` names the list (a snapshot version; `live_version` for a
    list read live); `query` the tool and its filters. `total`: True = len(items), None = unknown (the source
    capped what it returned), or a known count. `budget` (weight of an item, most per page) ends a page early
    when its items are large (a schema's tables by their columns); a page holds at least one item."""
    offset = 0 if cursor is None else decode_cursor(cursor, version, query)
    if offset > len(items):
        raise PagingError("invalid_cursor", "the cursor points past the end of the list", hint="Start again.")
    end = min(offset + page_size(limit, cap, default), len(items))
    if budget is not None:
        weight, most = budget
        spent, stop = 0, offset
        while stop < end and (stop == offset or spent + weight(items[stop]) <= most):
            spent += weight(items[stop])
            stop += 1
        end = stop
    next_cursor = encode_cursor(version, query, end) if end < len(items) else None
    known = len(items) if total is True else (None if total is False else total)
    return Page(list(items[offset:end]), next_cursor, known, offset)


def pages_in_step(
    lists: dict[str, Sequence[T]],
    limit: int | None,
    cursor: str | None,
    *,
    version: str,
    query: Any,
    cap: int = MAX_LIMIT,
) -> tuple[dict[str, list[T]], str | None]:
    """Several lists of one answer paged together (one cursor): page n holds items [n*limit, (n+1)*limit) of
    each, so every item of every list comes once; the last page is the one that ends the longest list."""
    longest = max((len(items) for items in lists.values()), default=0)
    offset = 0 if cursor is None else decode_cursor(cursor, version, query)
    if offset > longest:
        raise PagingError("invalid_cursor", "the cursor points past the end of the list", hint="Start again.")
    end = offset + page_size(limit, cap)
    next_cursor = encode_cursor(version, query, end) if end < longest else None
    return {name: list(items[offset:end]) for name, items in lists.items()}, next_cursor


def page_answer(
    answer: dict[str, Any],
    key: str,
    limit: int | None,
    cursor: str | None,
    *,
    query: Any,
    item_key: Callable[[Any], Any],
    keep: Callable[[Any], bool] | None = None,
    cap: int = MAX_LIMIT,
    cut_at_source: bool = False,
) -> dict[str, Any]:
    """A finished answer with its list under `key` filtered by `keep` and paged. The version is a digest of
    the kept items' keys (`item_key`): it holds for a snapshot and for a live read alike, and a cursor is
    refused once an item came or went. For tools whose service builds the whole answer. `cut_at_source`: the
    service already left items out at a server bound, so the answer stays `truncated` and `total` unknown."""
    items = [item for item in answer[key] if keep is None or keep(item)]
    version = live_version(items, item_key)
    total = None if cut_at_source else True
    shown = page(items, limit, cursor, version=version, query=query, cap=cap, total=total)
    return {**answer, key: shown.items, **shown.fields(), "truncated": shown.truncated or cut_at_source}


# ---- graphs: nodes paged, each edge on the page of its later end -----------------------------------------
class GraphPaging(TypedDict):
    """What graph_page hands to page() as it is: the list's version, the query, the page size's cap and default."""

    version: str
    query: Any
    cap: NotRequired[int]
    default: NotRequired[int]


def graph_page(
    nodes: Sequence[dict[str, Any]],
    edges: Iterable[dict[str, Any]],
    limit: int | None,
    cursor: str | None,
    *,
    node_key: str = "node_id",
    **paging: Unpack[GraphPaging],
) -> tuple[Page[dict[str, Any]], list[dict[str, Any]]]:
    """A page of a graph's nodes (in their walk order, nearest first) and the edges whose later end (in that
    order) is on it: every edge between listed nodes comes exactly once over all pages."""
    shown = page(nodes, limit, cursor, **paging)
    position = {n[node_key]: i for i, n in enumerate(nodes)}
    low, high = shown.offset, shown.offset + len(shown.items)
    here = [e for e in edges if low <= max(position.get(e["from"], -1), position.get(e["to"], -1)) < high]
    return shown, here


def graph_summary(
    nodes: Iterable[dict[str, Any]],
    edges: Sequence[Any],
    kind_key: str = "resource_type",
    depth_key: str = "depth",
) -> dict[str, Any]:
    """A graph's size before its nodes: how many nodes per hop distance (`depth`) and per kind."""
    per_depth: dict[str, int] = {}
    per_kind: dict[str, int] = {}
    count = 0
    for node in nodes:
        count += 1
        depth = str(node.get(depth_key))
        kind = str(node.get(kind_key) or "unknown")
        per_depth[depth] = per_depth.get(depth, 0) + 1
        per_kind[kind] = per_kind.get(kind, 0) + 1
    return {
        "nodes_per_depth": per_depth,
        "nodes_per_kind": per_kind,
        "total_nodes": count,
        "total_edges": len(edges),
    }


def live_version(items: Iterable[Any], key: Callable[[Any], Any] = lambda item: item) -> str:
    """The version of a list read live: a digest of its items' keys, so a cursor is refused once it changed."""
    return "live:" + digest([key(item) for item in items])


# ---- filters ---------------------------------------------------------------------------------------------
def name_matcher(pattern: str | None) -> Callable[[str | None], bool]:
    """A case-insensitive glob (`stg_*`, `*orders*`, `fct_?`); a pattern without wildcards matches the whole
    name. No pattern matches everything."""
    if not pattern:
        return lambda _name: True
    compiled = re.compile(fnmatch.translate(pattern.lower()))
    return lambda name: name is not None and compiled.match(str(name).lower()) is not None


def state_matcher(state: Iterable[str] | str | None) -> Callable[[str | None], bool]:
    """Matches a state (status) against one or several accepted values, case-insensitively."""
    if not state:
        return lambda _value: True
    wanted = {state.lower()} if isinstance(state, str) else {s.lower() for s in state}
    return lambda value: value is not None and str(value).lower() in wanted


def parse_moment(text: str, now: float, name: str = "since") -> float:
    """An ISO-8601 time, or a span back from now ("90m", "24h", "7d", "2w"), as epoch seconds."""
    value = text.strip()
    if len(value) >= 2 and value[-1].lower() in _SPAN_SECONDS and value[:-1].replace(".", "", 1).isdigit():
        return now - float(value[:-1]) * _SPAN_SECONDS[value[-1].lower()]
    moment = parse_timestamp(value)
    if moment is None:
        raise PagingError(
            "invalid_argument", f"{name} {text!r} is neither an ISO-8601 time nor a span such as 24h or 7d"
        )
    return moment.timestamp()


def window_matcher(since: str | None, until: str | None, now: float) -> Callable[[Any], bool]:
    """Matches a timestamp (ISO text, or epoch seconds) inside [since, until); with no bound, everything.
    An item without a timestamp matches only when no bound is set."""
    if since is None and until is None:
        return lambda _at: True
    low = parse_moment(since, now, "since") if since is not None else None
    high = parse_moment(until, now, "until") if until is not None else None
    if low is not None and high is not None and low > high:
        raise PagingError("invalid_argument", "since is after until")

    def inside(at: Any) -> bool:
        if isinstance(at, int | float) and not isinstance(at, bool):
            seconds: float | None = float(at)
        else:
            moment = parse_timestamp(at)
            seconds = moment.timestamp() if moment else None
        if seconds is None:
            return False
        return (low is None or seconds >= low) and (high is None or seconds < high)

    return inside
