"""Per-bridge state of the snowflake toolset: runners per connection, the guard catalog, error mapping."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ade_platform.config import SnowflakeSettings
from ade_platform.lib.snowflake.errors import E_CODES, SnowflakeError
from ade_platform.store import StoreError
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
            raise SnowflakeFailure("SNOWFLAKE_NOT_CONFIGURED", "no snowflake section is configured")
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
        from ade_platform.clients.snow_cli import policy_from_settings, proxy_limits, runner_from_settings
        from ade_platform.lib.snowflake.discovery import SnowflakeService
        from ade_platform.lib.snowflake.proxy import Proxy
        from ade_platform.lib.snowflake.runner import resolve_context

        section = self.settings()
        if self._runner_factory is not None:
            base = self._runner_factory(name)
            if section.defaults.database:
                base = base.pinned(section.defaults.database, section.defaults.schema_name)
        else:
            base = runner_from_settings(section, connection=name)
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
        from ade_platform.clients.snow_cli import repository_root

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


class SnowflakeFailure(ToolFailure):
    """A ToolFailure shaped as the spec's error (6.2) too: {"error", "message", "code", "detail", "hint"}."""

    def __init__(self, error: str, detail: str, hint: str | None = None, **extra: Any):
        self.e_code = E_CODES.get(error)
        super().__init__(error, detail, hint, **extra)

    def payload(self) -> dict[str, Any]:
        body = super().payload()
        body["message"] = self.detail  # the spec's field name (section 6.2); `detail` stays for the design's
        if self.e_code:
            body["code"] = self.e_code
        return body


@contextmanager
def failures() -> Iterator[None]:
    """SnowflakeError -> the structured error (with the spec's E-code as `code`)."""
    try:
        yield
    except SnowflakeError as exc:
        extra = {k: v for k, v in exc.extra.items() if k in ("classification", "reasons", "refusal")}
        raise SnowflakeFailure(exc.code, exc.detail, **extra) from None
