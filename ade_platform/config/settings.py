"""`Settings`: every section of ade.yaml in one typed, frozen object, read once at start-up and passed explicitly."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import Field, PrivateAttr, ValidationInfo, field_validator, model_validator

from ade_platform.config.base import ConfigError, _Model, off_while_empty
from ade_platform.config.bi import BiSettings
from ade_platform.config.dagster import DagsterInstanceSettings, ScheduleSettings
from ade_platform.config.datasets import DatasetSettings
from ade_platform.config.dbt import DbtSettings
from ade_platform.config.dbt_cloud import DbtCloudSettings
from ade_platform.config.incidents import IncidentSettings
from ade_platform.config.lineage import LineageSettings
from ade_platform.config.mcp import LimitSettings, McpSettings
from ade_platform.config.openlineage import OpenLineageSettings
from ade_platform.config.orchestrators import OrchestratorSettings
from ade_platform.config.pii import PiiSettings
from ade_platform.config.profiles import ProfileSettings
from ade_platform.config.snowfakery import SnowfakerySettings
from ade_platform.config.snowflake import SnowflakeSettings
from ade_platform.config.store import StoreSettings
from ade_platform.config.warehouses import BigQueryWarehouse, DuckDBWarehouse, SnowflakeWarehouse, Warehouse
from ade_platform.store.location import StoreLocation

# The sections that are off when the key named here is present but empty.
_OFF_WHEN_EMPTY = {"dbt_cloud": "base_url", "snowflake": "config_file"}


class Settings(_Model):
    home: Path = Field(description="ADE_HOME: store, Dagster instance, warehouse files and run outputs.")
    config_path: Path | None = None
    dagster_home: Path = Field(
        description="DAGSTER_HOME: the Dagster instance's folder (the DAGSTER_HOME environment variable when "
        "the settings were loaded, else <home>/dagster)."
    )
    store: StoreSettings = Field(default_factory=StoreSettings)
    dbt: DbtSettings | None = None
    pii: PiiSettings = Field(default_factory=PiiSettings)
    warehouses: dict[str, Warehouse] = Field(default_factory=dict)
    datasets: DatasetSettings | None = None
    snowfakery: SnowfakerySettings = Field(default_factory=SnowfakerySettings)
    snowflake: SnowflakeSettings | None = None
    bi: BiSettings = Field(default_factory=BiSettings)

    dbt_cloud: DbtCloudSettings | None = None
    mcp: McpSettings = Field(default_factory=McpSettings)
    limits: LimitSettings = Field(default_factory=LimitSettings)
    schedules: ScheduleSettings = Field(default_factory=ScheduleSettings)
    dagster: DagsterInstanceSettings = Field(default_factory=DagsterInstanceSettings)

    orchestrators: OrchestratorSettings = Field(default_factory=OrchestratorSettings)
    lineage: LineageSettings = Field(default_factory=LineageSettings)
    openlineage: OpenLineageSettings = Field(default_factory=OpenLineageSettings)
    incidents: IncidentSettings = Field(default_factory=IncidentSettings)
    profiles: ProfileSettings = Field(default_factory=ProfileSettings)
    log_level: Literal["debug", "info", "warning", "error", "critical"] = Field(
        "warning", description="Level of the platform's own logs; the LOG_LEVEL environment variable wins."
    )
    # key ("store.s3.secret_access_key") -> the environment variable ade.yaml read it from, for the Dagster
    # resources that name a secret's variable (EnvVar) instead of carrying its value. Set by load_settings.
    _env_references: dict[str, str] = PrivateAttr(default_factory=dict)

    @model_validator(mode="before")
    @classmethod
    def _dagster_home_under_home(cls, value: Any) -> Any:
        # Settings built in code (tests, benchmarks) name only `home`; load_settings resolves DAGSTER_HOME itself.
        if isinstance(value, dict) and value.get("dagster_home") is None and value.get("home") is not None:
            value = {**value, "dagster_home": Path(value["home"]) / "dagster"}
        return value

    @field_validator(*_OFF_WHEN_EMPTY, mode="before")
    @classmethod
    def _off_while_its_address_is_empty(cls, value: Any, info: ValidationInfo) -> Any:
        # As for the BI tools: a section whose address is given empty (the demo's `${ADE_DBT_CLOUD_URL:-}`,
        # `${ADE_SNOWFLAKE_CONFIG:-}` when no emulator runs) is off, so `ade materialize` and `ade dev` work on the
        # demo configuration alone. A snowflake section that leaves config_file out reads the snow CLI's own.
        return off_while_empty(value, _OFF_WHEN_EMPTY[info.field_name or ""])

    def model_post_init(self, context: Any, /) -> None:
        if isinstance(context, dict):
            self._env_references = dict(context.get("env_references") or {})

    @property
    def store_root(self) -> StoreLocation:
        """Where the store lives, with the options to reach it: what every StoreReader and StoreWriter opens."""
        return self.store.location(self.home)

    @property
    def dbt_target_path(self) -> Path | None:
        """The watched dbt target folder: where the team's own dbt runs write (`dbt.target_path`, default the
        project's `target/`)."""
        if self.dbt is None:
            return None
        return self.dbt.target_path or self.dbt.project_dir / "target"

    @property
    def dbt_own_output(self) -> Path:
        """Where ADE's own dbt commands write (parse: `target/`, builds: `invocations/<command>`), apart from the
        watched folder: ADE's builds and the team's never overwrite each other."""
        return self.home / "dbt"

    def warehouse(self, name: str) -> DuckDBWarehouse | SnowflakeWarehouse | BigQueryWarehouse:
        try:
            return self.warehouses[name]
        except KeyError:
            raise ConfigError(f"warehouses.{name}: no warehouse of that name is configured") from None

    def env_reference(self, key: str) -> str | None:
        """The environment variable the value at `key` (e.g. "warehouses.sf.password") was read from, when ade.yaml
        gave it as one `${NAME}` reference and NAME was set; None for a literal or a default."""
        return self._env_references.get(key)
