"""Since when a condition holds: its onset from the store's retained snapshot versions.

Every run-level asset keeps its last versions (`store.retention`). A condition that holds now (a failed model, a
stale source, a table whose columns changed, a failing tile) began somewhere in that history: walking the versions
from the newest back, its onset is the first version of the unbroken run in which it holds, and the version just
before is the last time it was seen absent. A condition present even in the oldest retained version started there
or earlier (`at_or_before`).

Versions are read lazily and reduced by an extractor to the little a question needs (per table a fingerprint, per
node a status); reductions are memoized by the version's data digest, so an asset republished with the same content
costs one reduction, and a version is parsed at most once per process.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

T = TypeVar("T")


@dataclass(frozen=True)
class VersionRef:
    version: str
    at: float  # epoch seconds of its materialization
    digest: str | None  # data digest (same digest, same content)


class VersionSource(Protocol):
    """What the history needs of the store (the MCP layer adapts StoreReader)."""

    def versions(self, asset: str) -> list[VersionRef]:
        """Retained versions, newest first ([] when the asset was never materialized)."""
        ...

    def load(self, asset: str, version: str) -> Any:
        """One version's data."""
        ...


@dataclass(frozen=True)
class Streak:
    """Where the current run of a condition begins in the history."""

    since: (
        VersionRef | None
    )  # the oldest version of the unbroken run that shows it (None: the newest does not)
    before: VersionRef | None  # the newest version before that run, where it did not hold (None: never seen)
    at_or_before: bool  # the oldest retained version already shows it
    walked: int  # versions looked at


class History:
    """Memoized reductions of snapshot versions, and streak walks over them."""

    def __init__(self, source: VersionSource, max_entries: int = 512):
        self.source = source
        self.max_entries = max_entries
        self._memo: OrderedDict[tuple[str, str, str], Any] = OrderedDict()
        self._lock = threading.Lock()

    def versions(self, asset: str) -> list[VersionRef]:
        return self.source.versions(asset)

    def reduce(self, asset: str, ref: VersionRef, key: str, fn: Callable[[Any], T]) -> T:
        """fn(data of that version), memoized per (asset, content, key)."""
        memo_key = (asset, ref.digest or ref.version, key)
        with self._lock:
            if memo_key in self._memo:
                self._memo.move_to_end(memo_key)
                return self._memo[memo_key]
        value = fn(self.source.load(asset, ref.version))
        with self._lock:
            self._memo[memo_key] = value
            while len(self._memo) > self.max_entries:
                self._memo.popitem(last=False)
        return value

    def streak(
        self,
        asset: str,
        key: str,
        reduce: Callable[[Any], T],
        holds: Callable[[T], bool | None],
        *,
        max_versions: int | None = None,
    ) -> Streak:
        """Walk from the newest version back while `holds(reduction)` is True.

        `holds` returns None when a version cannot tell (a partial dbt run that did not run the node): the walk
        skips it. The first False ends the run: that version is `before`.
        """
        refs = self.versions(asset)
        total = len(refs)
        if max_versions is not None:
            refs = refs[:max_versions]
        since: VersionRef | None = None
        walked = 0
        for ref in refs:
            walked += 1
            verdict = holds(self.reduce(asset, ref, key, reduce))
            if verdict is None:
                continue
            if verdict:
                since = ref
                continue
            return Streak(since, ref, False, walked)
        return Streak(since, None, since is not None and walked == total, walked)
