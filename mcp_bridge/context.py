"""What every toolset needs at run time, built once at start-up and passed explicitly."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ade_platform.config import Settings
from ade_platform.store import Snapshot, StoreReader

if TYPE_CHECKING:
    from ade_platform.lib.dbt.staleness import StalenessDetector
    from ade_platform.lib.secrets import SecretScrubber
    from ade_platform.live import LiveRunner


@dataclass
class BridgeContext:
    settings: Settings
    reader: StoreReader
    started_at: float = field(default_factory=time.time)
    _live: Any = field(default=None, repr=False)
    _live_lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    _staleness: Any = field(default=None, repr=False)

    @classmethod
    def from_settings(cls, settings: Settings) -> BridgeContext:
        return cls(settings=settings, reader=StoreReader(settings.store_root))

    def staleness(self) -> StalenessDetector:
        """The detector of superseded dbt snapshots (a newer file in the target folder, a running build)."""
        if self._staleness is None:
            from ade_platform.lib.dbt.staleness import StalenessDetector, watched_target

            dbt = self.settings.dbt
            watched = watched_target(dbt.target_path, dbt.project_dir) if dbt else None
            self._staleness = StalenessDetector(self.reader, watched)
        return self._staleness

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
        self, snapshot: Snapshot, body: dict[str, Any], *, stale_reason: str | None = None
    ) -> dict[str, Any]:
        """Stamp an answer computed from a store snapshot with where it came from and how old it is.

        `stale_reason`: the caller knows the source changed since the snapshot (a newer run, a newer file); the
        answer is then flagged stale whatever its age, and says why. Without one, the staleness detector
        looks for such a change itself (dbt snapshots: a newer artifact file, a build not yet published).
        """
        stamp = snapshot.provenance.stamp()
        if stale_reason is None:
            stale_reason = self.staleness().stale_reason(snapshot.provenance)
        limit = self.settings.mcp.max_staleness_seconds
        if stale_reason is None and limit is not None and stamp["age_seconds"] > limit:
            stale_reason = f"older than mcp.max_staleness_seconds ({limit} s)"
        stamp["stale"] = stale_reason is not None
        stamp["stale_reason"] = stale_reason
        return {**body, "provenance": stamp}
