"""Snapshot, provenance and error types of the asset store (no Dagster import)."""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from typing import Any


class StoreError(Exception):
    """Base class of every error the store raises; the message is safe to show to an agent."""

    code = "store_error"


class SnapshotNotFound(StoreError):
    """The asset was never materialized (or the requested version was pruned)."""

    code = "asset_not_materialized"

    def __init__(self, asset: str, version: str | None = None):
        self.asset = asset
        self.version = version
        what = f"version {version} of asset '{asset}'" if version else f"asset '{asset}'"
        super().__init__(f"{what} has no snapshot in the store")


class CorruptSnapshot(StoreError):
    """A snapshot or pointer exists but cannot be read back intact."""

    code = "snapshot_corrupt"

    def __init__(self, asset: str, version: str | None, reason: str):
        self.asset = asset
        self.version = version
        self.reason = reason
        super().__init__(f"snapshot {version or '?'} of asset '{asset}' is unreadable: {reason}")


@dataclass(frozen=True)
class Provenance:
    """Where a snapshot came from. Stored next to the data and stamped on every cached answer."""

    asset: str
    version: str
    materialized_at: str  # ISO-8601, UTC
    run_id: str | None = None
    code_version: str | None = None
    data_version: str | None = None
    source: dict[str, Any] = field(default_factory=dict)
    files: dict[str, str] = field(default_factory=dict)  # file name -> sha256

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Provenance:
        known = {k: data[k] for k in cls.__dataclass_fields__ if k in data}
        return cls(**known)

    @property
    def materialized_epoch(self) -> float:
        return datetime.fromisoformat(self.materialized_at).timestamp()

    def age_seconds(self, now: float | None = None) -> float:
        return max(0.0, (now if now is not None else time.time()) - self.materialized_epoch)

    def stamp(self, now: float | None = None) -> dict[str, Any]:
        """The provenance block attached to a cached tool answer."""
        return {
            "asset": self.asset,
            "version": self.version,
            "materialized_at": self.materialized_at,
            "age_seconds": round(self.age_seconds(now), 3),
            "run_id": self.run_id,
            "source": "cache",
            # Artifacts that came from a dbt Cloud run name it (docs/STORE_ASSETS.md).
            **({"dbt_cloud": self.source["dbt_cloud"]} if "dbt_cloud" in (self.source or {}) else {}),
            # Who published it when not the asset's own materialization (a gateway, a sensor).
            **(
                {"published_by": self.source["published_by"]} if "published_by" in (self.source or {}) else {}
            ),
        }


def utc_now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="microseconds")
