"""One Dagster resource per configured warehouse (key `warehouse_<name>`), and the client built from it.

DuckDB and BigQuery use small resources of ours; Snowflake uses dagster-snowflake's SnowflakeResource. Its
password is never a literal of the resource: an EnvVar naming the variable ade.yaml read it from (the Dagster UI
shows the name, never the value); otherwise the resource has none and the client connects with the password of
the settings.
"""

import re
from typing import Any

from dagster import ConfigurableResource, EnvVar

from ade_platform.clients.warehouses import WarehouseClient, open_client
from ade_platform.config import Settings
from ade_platform.defs.resources import env_var_for


def resource_key(warehouse: str) -> str:
    return "warehouse_" + re.sub(r"[^A-Za-z0-9_]", "_", warehouse)


class DuckDBWarehouseResource(ConfigurableResource):
    """An embedded DuckDB file, read through short-lived read-only connections."""

    name: str
    path: str
    schemas: list[str] = []
    timeout_seconds: float = 60

    def client(self) -> WarehouseClient:
        from ade_platform.clients.warehouses.duckdb import DuckDBClient

        return DuckDBClient(self.name, self.path, self.schemas, self.timeout_seconds)  # type: ignore[arg-type]


class BigQueryWarehouseResource(ConfigurableResource):
    """A BigQuery project (google-cloud-bigquery); api_endpoint points at an emulator or fake."""

    name: str
    project: str
    datasets: list[str] = []
    location: str | None = None
    credentials_path: str | None = None
    api_endpoint: str | None = None
    timeout_seconds: float = 60

    def client(self) -> WarehouseClient:
        from ade_platform.clients.warehouses.bigquery import BigQueryClient
        from ade_platform.config import BigQueryWarehouse

        settings = BigQueryWarehouse(
            type="bigquery",
            project=self.project,
            datasets=self.datasets,
            location=self.location,
            credentials_path=self.credentials_path,  # type: ignore[arg-type]
            api_endpoint=self.api_endpoint,
        )
        return BigQueryClient(self.name, settings, self.timeout_seconds)


def warehouse_resources(settings: Settings) -> dict[str, Any]:
    """resource key -> resource, for every configured warehouse."""
    timeout = settings.limits.query_timeout_seconds
    resources: dict[str, Any] = {}
    for name, wh in settings.warehouses.items():
        key = resource_key(name)
        if wh.type == "duckdb":
            resources[key] = DuckDBWarehouseResource(
                name=name, path=str(wh.path), schemas=list(wh.schemas), timeout_seconds=timeout
            )
        elif wh.type == "bigquery":
            resources[key] = BigQueryWarehouseResource(
                name=name,
                project=wh.project,
                datasets=list(wh.datasets),
                location=wh.location,
                credentials_path=str(wh.credentials_path) if wh.credentials_path else None,
                api_endpoint=wh.api_endpoint,
                timeout_seconds=timeout,
            )
        else:
            resources[key] = _snowflake_resource(settings, name, wh, timeout)
    return resources


def _snowflake_resource(settings: Settings, name: str, wh: Any, timeout: float) -> Any:
    from dagster_snowflake import SnowflakeResource

    from ade_platform.clients.warehouses.snowflake import connection_args

    args = connection_args(wh, timeout)
    args.pop("password", None)
    direct = {
        k: args.pop(k)
        for k in ("account", "user", "database", "warehouse", "role", "login_timeout", "network_timeout")
        if k in args
    }
    args.pop("application", None)
    password = _password_var(settings, name, wh)
    if password is None and wh.password is not None:
        # Not in the environment under a name the resource could give (a literal in ade.yaml, settings built in
        # code): the resource names Snowflake's own password authenticator and holds no secret; client_for
        # connects with the password of the settings.
        direct["authenticator"] = "snowflake"
    return SnowflakeResource(password=password, additional_snowflake_connection_args=args or None, **direct)


def _password_var(settings: Settings, name: str, wh: Any) -> EnvVar | None:
    return env_var_for(settings, f"warehouses.{name}.password", wh.password)


def client_for(resource: Any, name: str, settings: Settings) -> WarehouseClient:
    """The warehouse client behind a resource (Snowflake's connections come from dagster-snowflake)."""
    if hasattr(resource, "client"):
        return resource.client()
    wh = settings.warehouses[name]
    if wh.password is not None and _password_var(settings, name, wh) is None:
        # A password the resource does not hold (see _snowflake_resource): the client connects with the settings'.
        return open_client(settings, name)
    return open_client(settings, name, connection_factory=lambda: resource.get_connection(raw_conn=True))
