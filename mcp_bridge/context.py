"""What every toolset needs at run time, built once at start-up and passed explicitly."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from ade_platform.config import Settings
from ade_platform.store import Snapshot, StoreReader


@dataclass
class BridgeContext:
    settings: Settings
    reader: StoreReader
    started_at: float = field(default_factory=time.time)

    @classmethod
    def from_settings(cls, settings: Settings) -> BridgeContext:
        return cls(settings=settings, reader=StoreReader(settings.store_root))

    def cached_answer(self, snapshot: Snapshot, body: dict[str, Any]) -> dict[str, Any]:
        """Stamp an answer computed from a store snapshot with where it came from and how old it is."""
        stamp = snapshot.provenance.stamp()
        limit = self.settings.mcp.max_staleness_seconds
        stamp["stale"] = bool(limit is not None and stamp["age_seconds"] > limit)
        return {**body, "provenance": stamp}
