"""Dagster resources shared by the domains. Secrets arrive through EnvVar, never as literals."""

from __future__ import annotations

from dagster import ConfigurableResource

from ade_platform.store import StoreReader, StoreWriter


class StoreResource(ConfigurableResource):
    """The asset store that the MCP bridge reads."""

    root: str
    retention: int = 20

    def writer(self) -> StoreWriter:
        return StoreWriter(self.root, retention=self.retention)

    def reader(self) -> StoreReader:
        return StoreReader(self.root)
