"""The asset store: immutable versioned snapshots that Dagster writes and the MCP bridge reads.

No Dagster import here or below: the MCP bridge's cached path must start fast.
"""

from ade_platform.store.location import StoreLocation
from ade_platform.store.model import CorruptSnapshot, Provenance, SnapshotNotFound, StoreError
from ade_platform.store.reader import Snapshot, StoreReader
from ade_platform.store.s3 import S3Options
from ade_platform.store.writer import StoreWriter

__all__ = [
    "CorruptSnapshot",
    "Provenance",
    "S3Options",
    "Snapshot",
    "SnapshotNotFound",
    "StoreError",
    "StoreLocation",
    "StoreReader",
    "StoreWriter",
]
