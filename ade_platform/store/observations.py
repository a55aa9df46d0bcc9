"""What live tools observed (a tile's health, a table's live schema, a live freshness check, a run's status),
written where the cached tools, the lineage join, the sensors and the Dagster UI see it.

Layout under the store root (next to the assets, in a folder no asset can be named after):

    .observations/<kind>/<key slug>/LATEST                      the newest observation of that key
    .observations/<kind>/<key slug>/<observed_ns>-<rand>.json   its history, one immutable file per change

An observation is appended only when its state differs from the newest one of its (kind, key): a dashboard
checked a hundred times while nothing changed is one entry. Each key keeps at most `max_per_key` entries and the
store at most `max_keys` keys (the least recently observed go first), so the folder is bounded whatever agents
do. Every file is written whole and renamed into place (object stores: one PUT), like the rest of the store.
No Dagster import here.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import re
import time
import uuid
from collections.abc import Callable, Collection
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from typing import Any

import orjson

from ade_platform.store.locks import store_lock
from ade_platform.store.paths import LocalRoot, StoreRoot, remove_file
from ade_platform.store.reader import StoreReader
from ade_platform.store.writer import StoreWriter, dumps

log = logging.getLogger("ade.store")

OBSERVATIONS_DIR = ".observations"
LATEST = "LATEST"
CHANGED = ".changed"  # touched on every append to a kind: "nothing new since T" costs a reader one stat
MAX_PER_KEY = 50
MAX_KEYS = 5_000
MAX_STATE_BYTES = 256 << 10
_KIND = re.compile(r"^[a-z][a-z0-9_]{0,63}$")
_UNSAFE = re.compile(r"[^A-Za-z0-9_.\-]")
_SLUG_CHARS = 96


@dataclass(frozen=True)
class Observation:
    kind: str  # "bi_tile_health" | "table_schema" | "source_freshness" | "run_status" (more may come)
    key: str  # e.g. "looker:dashboard/1/tile/3", "demo:main.orders", "dbt_cloud:job/7301", "airflow:dag/x"
    state: dict  # JSON: the observed state (e.g. {"status": "error", "error": "..."} or {"columns": [...]})
    observed_at: float  # epoch seconds
    source: str  # the tool that observed it ("bi_check_dashboard_health", ...)
    asset: str | None = None  # the store asset (and Dagster asset) whose snapshot this is newer than

    @property
    def observed_iso(self) -> str:
        moment = datetime.fromtimestamp(self.observed_at, UTC)
        return moment.isoformat(timespec="seconds").replace("+00:00", "Z")

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def stamp(self) -> dict[str, Any]:
        """What an answer that used this observation says about it."""
        return {"key": self.key, "source": self.source, "observed_at": self.observed_iso}


# ---- keys --------------------------------------------------------------------------------------------------
def table_key(warehouse: str, schema: str, table: str) -> str:
    """A warehouse table: "<warehouse name>:<schema>.<table>", lower case (catalogs disagree on case)."""
    return f"{warehouse}:{schema}.{table}".lower()


def dashboard_key(tool: str, dashboard_id: str) -> str:
    return f"{tool}:dashboard/{dashboard_id}"


def tile_key(tool: str, dashboard_id: str, element_id: str) -> str:
    return f"{dashboard_key(tool, dashboard_id)}/tile/{element_id}"


def job_key(system: str, job: str | int) -> str:
    """A job's latest run: "dbt_cloud:job/7301", "airflow:dag/nightly" (jobs of dbt Cloud, DAGs, flows)."""
    return f"{system}:{'job' if system == 'dbt_cloud' else 'dag'}/{job}"


def run_key(system: str, job: str | int | None, run_id: str | int) -> str:
    """One run: "dbt_cloud:run/123", "airflow:dag/nightly/run/<id>"."""
    return f"{system}:run/{run_id}" if job is None else f"{job_key(system, job)}/run/{run_id}"


def slug(key: str) -> str:
    """A folder name for a key: readable (prefix queries match on it) and unique (a digest of the key)."""
    return f"{_UNSAFE.sub('_', key)[:_SLUG_CHARS]}-{hashlib.sha256(key.encode()).hexdigest()[:12]}"


def _check_kind(kind: str) -> str:
    if not _KIND.match(kind):
        raise ValueError(f"invalid observation kind {kind!r}: lower-case letters, digits and '_'")
    return kind


# ---- writing -----------------------------------------------------------------------------------------------
def record_observation(
    writer: StoreWriter,
    kind: str,
    key: str,
    state: dict,
    *,
    source: str,
    observed_at: float | None = None,
    asset: str | None = None,
    max_per_key: int = MAX_PER_KEY,
    max_keys: int = MAX_KEYS,
) -> bool:
    """Append when the state differs from the newest one recorded for (kind, key); False when unchanged.
    Bounded: per (kind, key) history and total size capped."""
    _check_kind(kind)
    if not key or len(key) > 1024:
        raise ValueError("an observation key is 1-1024 characters")
    root = writer.root
    observed = time.time() if observed_at is None else float(observed_at)
    canonical = orjson.dumps(state, option=orjson.OPT_SORT_KEYS, default=str)
    if len(canonical) > MAX_STATE_BYTES:
        log.warning("observation %s %s not recorded: its state is %d bytes", kind, key, len(canonical))
        return False
    base = f"{OBSERVATIONS_DIR}/{kind}/{slug(key)}"
    record = Observation(kind, key, orjson.loads(canonical), observed, source, asset)
    blob = dumps(record.to_dict())
    with _locked(root, kind):
        newest = _read(root, f"{base}/{LATEST}")
        same = newest is not None and newest.key == key
        if same and orjson.dumps(newest.state, option=orjson.OPT_SORT_KEYS, default=str) == canonical:  # type: ignore[union-attr]
            return False
        root.write_bytes_atomic(f"{base}/{int(observed * 1e9):020d}-{uuid.uuid4().hex[:8]}.json", blob)
        if newest is None or newest.observed_at <= observed:  # never move LATEST back to an older state
            root.write_bytes_atomic(f"{base}/{LATEST}", blob)
        _prune_key(root, base, max_per_key)
        _touch(root, f"{OBSERVATIONS_DIR}/{kind}/{CHANGED}")
    if newest is None:
        _bound_keys(root, max_keys)
    return True


def thin_observations(
    writer: StoreWriter, kind: str, key: str, keep: Callable[[list[float]], Collection[int]]
) -> int:
    """Drop some of a key's history: `keep` gets the observed times (epoch seconds, oldest first) and returns
    the indexes to keep. LATEST is never touched. Returns how many entries went."""
    root = writer.root
    base = f"{OBSERVATIONS_DIR}/{_check_kind(kind)}/{slug(key)}"
    with _locked(root, kind):
        entries = _entries(root, base)
        times = [int(name.split("-", 1)[0]) / 1e9 for name in entries]
        kept = set(keep(times))
        doomed = [name for i, name in enumerate(entries) if i not in kept]
        for name in doomed:
            _remove(root, f"{base}/{name}")
    return len(doomed)


def _locked(root: StoreRoot, kind: str) -> contextlib.AbstractContextManager[None]:
    """One writer per kind at a time: threads of this process, and other processes on a local store."""
    return store_lock(root, f"{OBSERVATIONS_DIR}/{kind}")


def _touch(root: StoreRoot, rel: str) -> None:
    if isinstance(root, LocalRoot):
        path = root.path / rel
        with open(path, "a"):
            os.utime(path)
    else:
        root.write_bytes_atomic(rel, b"")


def _changed_since(root: StoreRoot, kind: str, since: float) -> bool:
    """False only when nothing of `kind` was recorded since `since` (local stores; others always say True)."""
    if not isinstance(root, LocalRoot):
        return True
    try:
        return os.stat(root.path / OBSERVATIONS_DIR / kind / CHANGED).st_mtime >= since - 1.0
    except FileNotFoundError:
        return False


def _entries(root: StoreRoot, base: str) -> list[str]:
    return [e for e in root.list_dir(base) if e.endswith(".json") and not e.startswith(".")]


def _remove(root: StoreRoot, rel: str) -> None:
    remove_file(root, rel)


def _prune_key(root: StoreRoot, base: str, max_per_key: int) -> None:
    entries = _entries(root, base)
    for name in entries[: max(0, len(entries) - max_per_key)]:
        _remove(root, f"{base}/{name}")


def _bound_keys(root: StoreRoot, max_keys: int) -> None:
    """Over max_keys keys in all: drop the least recently observed, down to 90% of the bound."""
    keys = [
        f"{OBSERVATIONS_DIR}/{kind}/{name}"
        for kind in root.list_dir(OBSERVATIONS_DIR)
        if not kind.startswith(".")
        for name in root.list_dir(f"{OBSERVATIONS_DIR}/{kind}")
        if not name.startswith(".")
    ]
    if len(keys) <= max_keys:
        return
    newest = {}
    for base in keys:
        entries = _entries(root, base)
        newest[base] = entries[-1] if entries else ""
    doomed = sorted(keys, key=lambda b: newest[b])[: len(keys) - int(max_keys * 0.9)]
    for base in doomed:
        root.remove_tree(base)


# ---- reading -----------------------------------------------------------------------------------------------
def _read(root: StoreRoot, rel: str) -> Observation | None:
    try:
        data = orjson.loads(root.read_bytes(rel))
        return Observation(**{k: data[k] for k in Observation.__dataclass_fields__ if k in data})
    except (FileNotFoundError, NotADirectoryError, orjson.JSONDecodeError, TypeError, KeyError):
        return None


def latest_observation(reader: StoreReader, kind: str, key: str) -> Observation | None:
    found = _read(reader.root, f"{OBSERVATIONS_DIR}/{_check_kind(kind)}/{slug(key)}/{LATEST}")
    return found if found is not None and found.key == key else None


def observation_history(
    reader: StoreReader, kind: str, key: str | None = None, since: float | None = None
) -> list[Observation]:
    """Every retained observation of a key (or of every key of the kind), oldest first; `since` (epoch seconds)
    keeps those observed at or after it. One folder listing per key; file names carry the time, so only the
    observations kept are read."""
    root = reader.root
    folder = f"{OBSERVATIONS_DIR}/{_check_kind(kind)}"
    if since is not None and not _changed_since(root, kind, since):
        return []
    bases = [slug(key)] if key is not None else _key_folders(root, folder, since)
    floor = f"{int(since * 1e9):020d}" if since is not None else ""
    found = []
    for name in bases:
        for entry in _entries(root, f"{folder}/{name}"):
            if entry >= floor:
                obs = _read(root, f"{folder}/{name}/{entry}")
                if obs is not None and (key is None or obs.key == key):
                    found.append(obs)
    found.sort(key=lambda o: o.observed_at)
    return found


def latest_observations(
    reader: StoreReader, kind: str, prefix: str | None = None, since: float | None = None
) -> list[Observation]:
    """The newest observation of every key of a kind (keys starting with `prefix`; observed at or after
    `since`), oldest first."""
    root = reader.root
    folder = f"{OBSERVATIONS_DIR}/{_check_kind(kind)}"
    if since is not None and not _changed_since(root, kind, since):
        return []
    wanted = _UNSAFE.sub("_", prefix)[:_SLUG_CHARS] if prefix else ""
    found = []
    for name in _key_folders(root, folder, since):
        if not name.startswith(wanted):
            continue
        obs = _read(root, f"{folder}/{name}/{LATEST}")
        if obs is None or (prefix and not obs.key.startswith(prefix)):
            continue
        if since is None or obs.observed_at >= since:
            found.append(obs)
    found.sort(key=lambda o: o.observed_at)
    return found


def newest_by_asset(reader: StoreReader) -> dict[str, Observation]:
    """The newest observation that refines each asset (what `ade status` says is newer than a snapshot)."""
    newest: dict[str, Observation] = {}
    for kind in observation_kinds(reader):
        for obs in latest_observations(reader, kind):
            if obs.asset and (obs.asset not in newest or obs.observed_at > newest[obs.asset].observed_at):
                newest[obs.asset] = obs
    return newest


def observation_kinds(reader: StoreReader) -> list[str]:
    return [k for k in reader.root.list_dir(OBSERVATIONS_DIR) if _KIND.match(k)]


def _key_folders(root: StoreRoot, folder: str, since: float | None) -> list[str]:
    """The key folders of a kind; on a local store, those written to since `since` only (one stat each)."""
    names = [n for n in root.list_dir(folder) if not n.startswith(".")]
    if since is None or not isinstance(root, LocalRoot):
        return names
    recent = []
    for name in names:
        try:
            written = os.stat(root.path / folder / name / LATEST).st_mtime
        except FileNotFoundError:
            continue
        if written >= since - 1.0:  # a file's mtime is never before the observation it holds (1 s of slack)
            recent.append(name)
    return recent
