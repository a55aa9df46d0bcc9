"""What every toolset needs at run time, built once at start-up and passed explicitly."""

from __future__ import annotations

import atexit
import importlib
import logging
import queue
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, TypeVar, get_args

from ade_platform.config import Settings
from ade_platform.lib.timestamps import parse_timestamp
from ade_platform.store import Snapshot, SnapshotNotFound, StoreReader

if TYPE_CHECKING:
    from ade_platform.lib.dbt.refresh import TargetFolderPublisher
    from ade_platform.lib.dbt.staleness import StalenessDetector
    from ade_platform.lib.secrets import SecretScrubber
    from ade_platform.live import Effects, LiveRunner
    from ade_platform.store.observations import Observation

log = logging.getLogger("ade.mcp")
T = TypeVar("T")
ClientSystem = Literal["warehouse", "bi", "orchestrator", "dbt_cloud", "snowflake"]
# A system's client package, whose `open_client(settings, name)` opens it, is ade_platform.clients.<system>, but
# for the systems whose package name is plural.
_PLURAL_PACKAGES: dict[str, str] = {"warehouse": "warehouses", "orchestrator": "orchestrators"}
_OBSERVATION_QUEUE = 1_000
_RECORDER: _Recorder | None = None
_RECORDER_LOCK = threading.Lock()


class BridgeReader(StoreReader):
    """The bridge's store reader. Before a dbt snapshot is read, `before_read` publishes what dbt runs outside
    ADE wrote since (a stat per artifact file when nothing changed), so no answer waits for a Dagster daemon."""

    before_read: Any = None

    def latest(self, asset: str) -> Snapshot:
        if self.before_read is not None:
            self.before_read(asset)
        return super().latest(asset)


@dataclass
class BridgeContext:
    settings: Settings
    reader: StoreReader
    started_at: float = field(default_factory=time.time)
    _live: Any = field(default=None, repr=False)
    _live_lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    _staleness: Any = field(default=None, repr=False)
    _publisher: Any = field(default=None, repr=False)
    _dbt_assets: Any = field(default=None, repr=False)
    _observations: Any = field(default=None, repr=False)
    _clients: dict[tuple[str, str | None], Any] = field(default_factory=dict, repr=False)
    _clients_lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @classmethod
    def from_settings(cls, settings: Settings) -> BridgeContext:
        reader = BridgeReader(settings.store_root)
        ctx = cls(settings=settings, reader=reader)
        reader.before_read = ctx._before_read
        return ctx

    # ---- dbt: current without a daemon ------------------------------------------------------------------
    def staleness(self) -> StalenessDetector:
        """The detector of superseded dbt snapshots (a newer file in the target folder, a newer invocation in
        dbt's log that failed or is running, a build under way)."""
        if self._staleness is None:
            from ade_platform.lib.dbt.invocations import InvocationLog
            from ade_platform.lib.dbt.staleness import StalenessDetector, watched_target

            dbt = self.settings.dbt
            watched = watched_target(dbt.target_path, dbt.project_dir) if dbt else None
            log_reader = InvocationLog(dbt.project_dir, dbt.log_path, watched) if dbt else None
            self._staleness = StalenessDetector(self.reader, watched, invocations=log_reader)
        return self._staleness

    def dbt_publisher(self) -> TargetFolderPublisher | None:
        """Publishes the watched dbt target folder's newer artifacts (None without a local dbt project)."""
        if self._publisher is None:
            from ade_platform.lib.dbt.refresh import TargetFolderPublisher, lock_path
            from ade_platform.lib.dbt.staleness import watched_target
            from ade_platform.store import StoreWriter

            dbt = self.settings.dbt
            watched = watched_target(dbt.target_path, dbt.project_dir) if dbt else None
            if watched is None:
                self._publisher = False
            else:
                writer = StoreWriter(self.settings.store_root, retention=self.settings.store.retention)
                lock = lock_path(self.settings.home, str(self.settings.store_root), watched)
                self._publisher = TargetFolderPublisher(writer, watched, lock)
        return self._publisher or None

    def _before_read(self, asset: str) -> None:
        if self._dbt_assets is None:
            from ade_platform.lib.dbt.publish import ARTIFACT_ASSETS, LINEAGE_INDEX_ASSET, SELECT_STAR_ASSET

            self._dbt_assets = frozenset({*ARTIFACT_ASSETS.values(), LINEAGE_INDEX_ASSET, SELECT_STAR_ASSET})
        if asset in self._dbt_assets:
            publisher = self.dbt_publisher()
            if publisher is not None:
                publisher.refresh()

    def live(self) -> LiveRunner:
        """The one LiveRunner of this bridge, created on the first live call (Dagster loads then)."""
        with self._live_lock:
            if self._live is None:
                from ade_platform.instance import ensure_dagster_home
                from ade_platform.live import LiveRunner

                # A gateway replica on another machine records into the same instance (Postgres profile).
                ensure_dagster_home(self.settings)

                self._live = LiveRunner(
                    self.settings.dagster_home,
                    fast_read_only=self.settings.mcp.fast_read_only_live,
                    fast_workspace=self.settings.mcp.fast_workspace_live,
                    scrub=self.scrubber(),
                )
                # calls a previous gateway ran but did not live to record become failed runs now
                self._live.recover()
            return self._live

    # ---- what every toolset needs: a configured client, the newest snapshot, an audited live call ----------
    def client(self, system: ClientSystem, name: str | None = None) -> Any:
        """The client of one configured external system, opened on its first use and kept for the gateway's
        life (`name`: the warehouse, BI tool, orchestrator backend or snow connection; dbt Cloud has one
        account). Each system's `open_client(settings, name)` raises its own `*_not_configured` error."""
        key = (system, name)
        with self._clients_lock:
            if key not in self._clients:
                # imported on first use: the cached path never loads httpx, a driver or an SDK
                if system not in get_args(ClientSystem):
                    raise KeyError(system)
                package = _PLURAL_PACKAGES.get(system, system)
                module = importlib.import_module(f"ade_platform.clients.{package}")
                self._clients[key] = module.open_client(self.settings, name)
            return self._clients[key]

    def latest_or_none(self, asset: str) -> Snapshot | None:
        """The newest snapshot of an asset, or None when it was never materialized."""
        try:
            return self.reader.latest(asset)
        except SnapshotNotFound:
            return None

    def pii_tagged_columns(self) -> frozenset[tuple[str, str]]:
        """(table, column) pairs, lower-case, that the stored dbt manifest tags as personal data (a column's
        `pii` tags or meta; `*` for a tagged relation): what every check of what an agent may see applies
        (warehouse queries, BI rows) besides the name patterns. Empty without a readable manifest."""
        from ade_platform.lib.dbt.publish import ARTIFACT_ASSETS
        from ade_platform.lib.sql_protect import tagged_columns
        from ade_platform.lib.warehouse import manifest
        from ade_platform.store import CorruptSnapshot

        try:
            snapshot = self.reader.latest(ARTIFACT_ASSETS["manifest"])
        except (SnapshotNotFound, CorruptSnapshot):
            return frozenset()
        return snapshot.derived(
            "pii_tagged_columns", lambda s: tagged_columns(manifest.relations(s.data).values())
        )

    def live_call(
        self,
        tool: str,
        fn: Callable[[], T],
        *,
        arguments: dict[str, Any],
        effects: Effects = "none",
        cause: str | None = None,
        dialect: str | None = None,
    ) -> tuple[T, dict[str, Any]]:
        """Run `fn` as an audited live call (docs/DEVELOPING.md: `effects` picks the audit path); its value and
        the answer's live provenance."""
        result = self.live().run(tool, fn, arguments=arguments, cause=cause, effects=effects, dialect=dialect)
        return result.value, result.stamp()

    async def live_call_async(
        self, tool: str, fn: Callable[[], T], **options: Any
    ) -> tuple[T, dict[str, Any]]:
        """`live_call` (the same keywords: arguments, effects, cause, dialect) in a worker thread, so a slow system
        never blocks the gateway's event loop."""
        import anyio

        return await anyio.to_thread.run_sync(lambda: self.live_call(tool, fn, **options))

    def scrubber(self) -> SecretScrubber:
        """The scrubber of every secret in the settings: for logs, error details and audit tags."""
        from ade_platform.lib.secrets import settings_scrubber

        return settings_scrubber(self.settings)

    def tool_name(self, spec_name: str) -> str:
        """The published name of a tool: the spec's, or its portable form when configured."""
        if self.settings.mcp.tool_names == "portable":
            return spec_name.replace(".", "_")
        return spec_name

    def cached_answer(
        self,
        snapshot: Snapshot,
        body: dict[str, Any],
        *,
        stale_reason: str | None = None,
        observations: list[Observation] | None = None,
    ) -> dict[str, Any]:
        """Stamp an answer computed from a store snapshot with where it came from and how old it is.

        `stale_reason`: the caller knows the source changed since the snapshot (a newer run, a newer file); the
        answer is then flagged stale whatever its age, and says why. Without one, the staleness detector
        looks for such a change itself (dbt snapshots: a newer artifact file, a build not yet published).
        `observations`: live observations newer than the snapshot that the answer used in its place (named in
        `provenance.observations`: key, the tool that observed it, when).
        """
        stamp = snapshot.provenance.stamp()
        if observations:
            stamp["observations"] = [o.stamp() for o in observations]
        if stale_reason is None:
            stale_reason = self.staleness().stale_reason(snapshot.provenance)
        limit = self.settings.mcp.max_staleness_seconds
        if stale_reason is None and limit is not None and stamp["age_seconds"] > limit:
            stale_reason = f"older than mcp.max_staleness_seconds ({limit} s)"
        # a corrupt latest snapshot: the answer comes from the previous good version, and says so first
        fallback = getattr(snapshot, "fallback_reason", None)
        if fallback:
            stale_reason = f"{fallback}; {stale_reason}" if stale_reason else fallback
        stamp["stale"] = stale_reason is not None
        stamp["stale_reason"] = stale_reason
        return {**body, "provenance": stamp}

    # ---- live observations: what one agent saw, the next one sees ---------------------------------------
    def observed(self, tool: str, answer: T, /, **facts: Any) -> T:
        """Record what a live tool's answer observed (ade_platform/lib/live_observations.py) and return the
        answer. Never fails the answer: the store write happens in the background; when it cannot be kept (a
        read-only store, a full disk, the last write failed) the answer's provenance says so."""
        queued = False
        try:
            from ade_platform.lib.live_observations import from_answer

            for found in from_answer(tool, answer, facts):
                self.observe(found.kind, found.key, found.state, source=tool, asset=found.asset)
                queued = True
        except Exception as exc:  # an answer of an unexpected shape: the agent still gets it
            log.warning("observation_not_derived: from a %s answer: %s", tool, type(exc).__name__)
        if queued and isinstance(answer, dict) and isinstance(answer.get("provenance"), dict):
            self.note_unkept_observations(answer["provenance"])
        return answer

    def note_unkept_observations(self, provenance: dict[str, Any]) -> None:
        """Say in a live answer's provenance that what it observed will not be kept (the store cannot be
        written now): `observations_not_kept: <code>`. Costs an access() call on a local store."""
        from ade_platform.store.health import write_problem
        from ade_platform.store.observations import OBSERVATIONS_DIR

        writer, _ = self._observation_writer()
        problem = write_problem(writer.root, OBSERVATIONS_DIR)
        if problem:
            provenance["observations_not_kept"] = problem

    def observe(
        self,
        kind: str,
        key: str,
        state: dict,
        *,
        source: str,
        asset: str | None = None,
        observed_at: float | None = None,
    ) -> None:
        """Queue one observation for the store (deduplicated there against the newest state of its key),
        stamped with when it was read (default: now)."""
        from ade_platform.store.observations import record_observation

        at = time.time() if observed_at is None else observed_at
        writer, bounds = self._observation_writer()

        def write(w: Any) -> None:
            record_observation(w, kind, key, state, source=source, asset=asset, observed_at=at, **bounds)

        _recorder().put(writer, f"an observation of {kind} {key}", write)

    def keep_profile(self, profile: Any, *, source: str) -> None:
        """Queue a live profile of a relation for its history in the store (store/profiles.py), on the same
        background writer as the observations."""
        from ade_platform.store.profiles import record_profile

        writer, _ = self._observation_writer()
        _recorder().put(
            writer, f"the profile of {profile.relation}", lambda w: record_profile(w, profile, source)
        )

    def _observation_writer(self) -> tuple[Any, dict[str, int]]:
        if self._observations is None:
            from ade_platform.store import StoreWriter

            mcp = self.settings.mcp
            writer = StoreWriter(self.settings.store_root, retention=self.settings.store.retention)
            self._observations = (
                writer,
                {"max_per_key": mcp.observations_per_key, "max_keys": mcp.observation_keys},
            )
        return self._observations

    def flush_observations(self, timeout: float = 10.0) -> bool:
        """Wait until every queued observation is in the store (tests, shutdown)."""
        return flush_all_observations(timeout)

    def newer_observation(self, kind: str, key: str, than: float | str | None) -> Observation | None:
        """The newest observation of a key when it is newer than `than` (epoch seconds or ISO-8601; None: any),
        else None. One small file read."""
        from ade_platform.store.observations import latest_observation

        found = latest_observation(self.reader, kind, key)
        if found is None:
            return None
        threshold = _epoch(than)
        return found if threshold is None or found.observed_at > threshold else None


def flush_all_observations(timeout: float = 10.0) -> bool:
    """Wait until the observations queued by every gateway of this process are in the store (tests, shutdown)."""
    return _RECORDER.flush(timeout) if _RECORDER is not None else True


def _epoch(value: float | str | None) -> float | None:
    if value is None or isinstance(value, int | float):
        return value
    parsed = parse_timestamp(value)
    return parsed.timestamp() if parsed else None


class _Recorder:
    """The one background thread of this process that writes queued observations to the store, so a live answer
    never waits on a disk. A full queue drops (and logs) rather than slowing answers; exit drains the queue."""

    def __init__(self) -> None:
        self.queue: queue.Queue[tuple[Any, ...]] = queue.Queue(maxsize=_OBSERVATION_QUEUE)
        self.thread = threading.Thread(target=self._run, name="ade-observations", daemon=True)
        self.thread.start()
        atexit.register(self.flush, 5.0)

    def put(self, writer: Any, what: str, write: Callable[[Any], Any]) -> None:
        """Queue one write (`write(writer)`): an observation, or a relation's profile (store/profiles.py)."""
        try:
            self.queue.put_nowait((writer, what, write))
        except queue.Full:
            log.warning("observation queue full: dropping %s", what)

    def _run(self) -> None:
        from ade_platform.store.health import note_failure, note_success

        while True:
            writer, what, write = self.queue.get()
            try:
                write(writer)
                note_success(writer.root)
            except Exception as exc:
                # one line with a code (store_read_only, store_full, store_write_failed), no traceback; the next
                # live answers say "observations_not_kept" until a write succeeds again
                note_failure(writer.root, exc, what)
            finally:
                self.queue.task_done()

    def flush(self, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while self.queue.unfinished_tasks:
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.005)
        return True


def _recorder() -> _Recorder:
    global _RECORDER
    with _RECORDER_LOCK:
        if _RECORDER is None:
            _RECORDER = _Recorder()
        return _RECORDER
