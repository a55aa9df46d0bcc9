"""BI clients: Looker (looker-sdk, API 4.0) and Metabase (REST over httpx) behind one contract (`BiClient`).

Client libraries are imported lazily, inside the clients: importing this package costs nothing.
"""

from __future__ import annotations

from ade_platform.clients.bi.base import BiClient, BiError, LookRun
from ade_platform.clients.warehouses import exclusion_policy
from ade_platform.config import Settings
from ade_platform.lib.bi.look_rows import LookRules
from ade_platform.lib.bi.tables import Naming
from ade_platform.lib.warehouse.pii import patterns_from

__all__ = ["BiClient", "BiError", "LookRun", "bi_warehouse", "look_rules", "naming_for", "open_client"]


def bi_warehouse(settings: Settings) -> str | None:
    """The warehouse the BI tools read: bi.warehouse, else dbt's, else the first configured one."""
    name = settings.bi.warehouse or (settings.dbt.warehouse if settings.dbt else None)
    if name is None and settings.warehouses:
        name = next(iter(settings.warehouses))
    return name


def naming_for(settings: Settings) -> Naming:
    """How unqualified table names in the dashboards' SQL resolve (in the warehouse the BI tools read)."""
    name = bi_warehouse(settings)
    if name is None:
        return Naming()
    wh = settings.warehouse(name)
    if wh.type == "duckdb":
        return Naming("duckdb", wh.path.stem, "main")
    if wh.type == "snowflake":
        return Naming("snowflake", wh.database.upper() if wh.database else None, None)
    return Naming("bigquery", wh.project, None)


def look_rules(settings: Settings) -> LookRules:
    """What bi_run_look masks: the Snowflake exclusions (their defaults when no snowflake section is configured,
    as `ade guard` does) and the PII patterns with the `pii` settings."""
    naming = naming_for(settings)
    policy = exclusion_policy(settings, naming.database, naming.schema)
    patterns = patterns_from(settings.pii.patterns, settings.pii.ignore)
    return LookRules(policy, patterns, naming.sqlglot_dialect, naming.schema)


def open_client(settings: Settings, name: str) -> BiClient:
    """The client of one configured BI tool (`name`: looker, metabase); BiError backend_not_configured when it is
    not in ade.yaml."""
    naming = naming_for(settings)
    timeout = settings.bi.timeout_seconds
    if name == "looker" and settings.bi.looker is not None:
        from ade_platform.clients.bi.looker import LookerClient

        return LookerClient(settings.bi.looker, naming, timeout)
    if name == "metabase" and settings.bi.metabase is not None:
        from ade_platform.clients.bi.metabase import MetabaseClient

        return MetabaseClient(settings.bi.metabase, naming, timeout)
    configured = ", ".join(settings.bi.tools) or "none"
    raise BiError(
        "backend_not_configured",
        f"{name} is not configured (bi.{name} in ade.yaml); configured: {configured}",
    )
