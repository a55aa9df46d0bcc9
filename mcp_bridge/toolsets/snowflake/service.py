"""What the snowflake tools do: per-bridge state (runners per connection, the guard catalog), every call as an
audited live run, and the sync, staleness and DDL work of the tools that write.

A SnowflakeError is the structured error as it is (the gateway middleware maps it, with the spec's E-code)."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ade_platform.config import SnowflakeSettings
from ade_platform.lib.snowflake.ddl import ddl_hash
from ade_platform.lib.snowflake.errors import SnowflakeError
from ade_platform.lib.snowflake.sync import SyncOptions, collect, read_index, write_repository
from ade_platform.store import StoreError, StoreWriter
from mcp_bridge.context import BridgeContext
from mcp_bridge.errors import ToolFailure

if TYPE_CHECKING:
    # The transport, the guard and discovery (sqlglot) load on the first Snowflake call, not at gateway start.
    from ade_platform.lib.snowflake.discovery import SnowflakeService
    from ade_platform.lib.snowflake.proxy import Catalog, Proxy
    from ade_platform.lib.snowflake.runner import SnowRunner

log = logging.getLogger("ade.mcp.snowflake")
REPOSITORY_ASSET = "snowflake_object_repository"


def catalog_from_summary(data: dict[str, Any]) -> Catalog:
    """(object_types, dependencies) for the guard from a repository summary published to the store."""
    types = {str(o["key"]).replace('"', "").upper(): str(o["type"]).upper() for o in data.get("objects", [])}
    deps: dict[str, list[str]] = {}
    for edge in data.get("dependencies", []):
        deps.setdefault(str(edge["to"]).replace('"', "").upper(), []).append(
            str(edge["from"]).replace('"', "").upper()
        )
    return (types or None), (deps or None)


class SnowflakeRuntime:
    """Runners come from the configured transport (`snowflake.transport`: the snow CLI or the connector);
    ``runner_factory`` (connection name -> SnowRunner) replaces both; tests use it."""

    def __init__(self, ctx: BridgeContext, runner_factory: Callable[[str | None], SnowRunner] | None = None):
        self.ctx = ctx
        self._runner_factory = runner_factory
        self.section: SnowflakeSettings | None = ctx.settings.snowflake
        self._lock = threading.Lock()
        self._services: dict[str | None, tuple[SnowflakeService, Proxy]] = {}

    def settings(self) -> SnowflakeSettings:
        if self.section is None:
            raise SnowflakeError("SNOWFLAKE_NOT_CONFIGURED", "no snowflake section is configured")
        return self.section

    def connection(self, name: str | None) -> str | None:
        section = self.settings()
        if name is None or name == section.connection:
            return section.connection
        if name not in section.connections:
            raise ToolFailure(
                "invalid_argument",
                "connection is not one of the configured snowflake connections",
                hint="Omit connection, or use one listed under snowflake.connections in ade.yaml.",
            )
        return name

    def services(self, connection: str | None) -> tuple[SnowflakeService, Proxy]:
        name = self.connection(connection)
        with self._lock:
            if name in self._services:
                return self._services[name]
        from ade_platform.clients.snowflake import open_client, policy_from_settings, proxy_limits
        from ade_platform.lib.snowflake.discovery import SnowflakeService
        from ade_platform.lib.snowflake.proxy import Proxy
        from ade_platform.lib.snowflake.runner import resolve_context

        section = self.settings()
        if self._runner_factory is not None:
            base = self._runner_factory(name)
            if section.defaults.database:
                base = base.pinned(section.defaults.database, section.defaults.schema_name)
        else:
            base = open_client(self.ctx.settings, name)
        runner = resolve_context(base)
        policy = policy_from_settings(section)
        limits = proxy_limits(section, self.ctx.settings.limits.max_rows)
        service = SnowflakeService(
            runner,
            policy,
            max_rows=self.ctx.settings.limits.max_rows,
            max_nodes=self.ctx.settings.limits.max_lineage_nodes,
        )
        pair = (service, Proxy(runner, policy, limits, catalog=self.catalog))
        with self._lock:
            return self._services.setdefault(name, pair)

    def catalog(self) -> Catalog:
        try:
            snapshot = self.ctx.reader.latest(REPOSITORY_ASSET)
        except StoreError:
            return None, None
        return snapshot.derived("guard_catalog", lambda s: catalog_from_summary(s.data))

    def sync_root(self) -> Path:
        from ade_platform.clients.snowflake import repository_root

        self.settings()
        return repository_root(self.ctx.settings)

    def confine(self, path: str | None, *, default: Path) -> Path:
        """A path inside the configured repository root (relative paths are relative to it)."""
        if not path:
            return default.resolve()
        if "\x00" in path or len(path) > 4096:
            raise ToolFailure("path_not_allowed", "invalid path")
        root = self.sync_root().resolve()
        candidate = Path(path).expanduser()
        resolved = (candidate if candidate.is_absolute() else root / candidate).resolve()
        if resolved != root and root not in resolved.parents:
            raise ToolFailure(
                "path_not_allowed",
                "the path must stay inside the snowflake repository root (snowflake.sync.target_dir)",
            )
        return resolved

    def audited(
        self, tool: str, arguments: dict[str, Any], connection: str | None, fn: Callable[[], dict[str, Any]]
    ) -> dict[str, Any]:
        """Run a read-only tool as an audited live run (Dagster's fast path: in this thread, the run record
        follows in the background; refusals are recorded as failed runs). Literals are redacted in tags."""
        name = self.connection(connection)
        result = self.ctx.live().run(
            tool, fn, arguments={**arguments, "connection": name}, effects="none", dialect="snowflake"
        )
        environment = self.settings().environment
        return {
            **result.value,
            "provenance": {**result.stamp(), "connection": name, "environment": environment},
        }

    # ---- the tools that write: the DDL repository and DDL statements ------------------------------------
    def sync(
        self,
        connection: str | None,
        target_dir: str | None,
        includes: dict[str, bool],
        databases: list[str] | None,
        cause: str | None,
    ) -> dict[str, Any]:
        """Write the DDL repository as an audited run; syncing into the configured root also publishes the
        store's repository snapshot (which extends the guard's exclusion checks through views)."""
        ctx = self.ctx
        section = self.settings()
        default_root = self.sync_root().resolve()
        root = self.confine(target_dir, default=default_root)
        dbs = tuple(databases or section.sync.databases)
        options = SyncOptions(**includes, databases=dbs)
        service, _ = self.services(connection)
        name = self.connection(connection)

        def work() -> dict[str, Any]:
            inventory = collect(service, options)
            summary = write_repository(root, inventory, connection=name, databases=list(dbs))
            if root == default_root:
                index = read_index(root) or {}
                StoreWriter(ctx.settings.store_root, retention=ctx.settings.store.retention).publish(
                    REPOSITORY_ASSET,
                    {**summary, **index},
                    source={"tool": "sync_objects", "connection": name},
                )
            return summary

        args = {"connection": name, "targetDir": target_dir, "databases": list(dbs), **options.__dict__}
        result = ctx.live().run("sync_objects", work, arguments=args, cause=cause)
        summary = dict(result.value)
        index = read_index(root) or {}
        limit = ctx.settings.limits.max_rows
        results = [
            {"type": e["type"], "name": e["key"], "path": e["path"], "status": "synced"}
            for e in index.get("objects", [])[:limit]
        ]
        return {
            **summary,
            "targetDir": target_dir or "(configured root)",
            "results": results,
            "truncated": len(index.get("objects", [])) > limit,
            "provenance": result.stamp(),
        }

    def staleness(
        self, object_name: str, object_type: str, local_path: str | None, connection: str | None
    ) -> dict[str, Any]:
        """A synced DDL file against the object's DDL now (the file the repository index records, by default)."""
        service, _ = self.services(connection)
        root = self.sync_root().resolve()
        if local_path is None:
            obj = service.name(object_name, object_type, None, None)
            entries = (read_index(root) or {}).get("objects", [])
            match = [e for e in entries if e.get("key") == obj.display and e.get("type") == obj.kind.name]
            if not match:
                raise ToolFailure(
                    "file_not_found",
                    "the repository index has no file for this object",
                    hint="Run sync_objects first, or pass localPath.",
                )
            local_path = match[0]["path"]
        path = self.confine(local_path, default=root)
        try:
            local_text = path.read_text(encoding="utf-8")
        except OSError:
            raise ToolFailure(
                "file_not_found",
                "the local DDL file does not exist",
                hint="Run sync_objects first, or check localPath.",
            ) from None
        args = {"objectName": object_name, "objectType": object_type, "localPath": local_path}
        checked = local_path
        return self.audited(
            "check_staleness",
            args,
            connection,
            lambda: _compare(service, object_type, object_name, checked, local_text),
        )

    def execute_ddl(self, ddl: str, connection: str | None, cause: str | None) -> dict[str, Any]:
        """One DDL statement, checked by the guard before anything runs, then run as an audited Dagster run."""
        _, proxy = self.services(connection)
        classification = proxy.check_ddl(ddl)
        name = self.connection(connection)
        result = self.ctx.live().run(
            "execute_ddl",
            lambda: proxy.run_ddl(ddl),
            arguments={"ddl": ddl, "connection": name},
            cause=cause,
            dialect="snowflake",
        )
        return {
            "success": True,
            "statement": classification.statement,
            "objects": classification.objects,
            "provenance": result.stamp(),
        }


def _compare(
    service: Any, object_type: str, object_name: str, local_path: str, local_text: str
) -> dict[str, Any]:
    remote = service.get_ddl(object_type, object_name, None, None)
    local_hash, remote_hash = ddl_hash(local_text), ddl_hash(remote["ddl"])
    return {
        "isStale": local_hash != remote_hash,
        "objectName": remote["objectName"],
        "objectType": remote["objectType"],
        "localPath": local_path,
        "localHash": local_hash,
        "remoteHash": remote_hash,
        "source": remote["source"],
        **({"note": remote["note"]} if remote.get("note") else {}),
    }
