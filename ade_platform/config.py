"""One typed settings object, read from ade.yaml + environment once at start-up and passed explicitly.

Relative paths in ade.yaml are resolved against the file's own folder, so the demo config works from any
working directory. `${NAME}` and `${NAME:-default}` reference environment variables (for secrets); an
unset variable without a default is a configuration error naming the key.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SecretStr,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

REPO_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_CONFIG = REPO_ROOT / "ade.yaml"
TOOLSETS = (
    "dbt-artifacts",
    "dbt-project",
    "warehouse",
    "dbt-cloud",
    "orchestrator",
    "bi-api",
    "snowflake",
    "snowfakery",
    "lineage",
)
# The specs' own server names, accepted wherever a toolset is named (`ade mcp --server snowfakery-mcp`).
SERVER_ALIASES = {"snowfakery-mcp": "snowfakery"}
_ENV_REF = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")


class ConfigError(Exception):
    """A bad ade.yaml: names the key and the reason. Start-up stops on it."""


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class S3StoreSettings(_Model):
    """Where an s3:// store lives: any S3-compatible endpoint; unset keys fall back to boto3's own chain."""

    endpoint_url: str | None = Field(None, description="e.g. https://minio.internal:9000; unset: AWS S3.")
    region: str | None = None
    access_key_id: SecretStr | None = Field(None, description="${ENV} reference, never a literal.")
    secret_access_key: SecretStr | None = Field(None, description="${ENV} reference, never a literal.")
    addressing_style: Literal["path", "virtual", "auto"] = "path"

    @field_validator("endpoint_url", "region", "access_key_id", "secret_access_key", mode="before")
    @classmethod
    def _empty_is_none(cls, value: Any) -> Any:
        return None if value == "" else value


class StoreSettings(_Model):
    root: str | None = Field(None, description="Store root: a folder or an fsspec URL (s3://...).")
    retention: int = Field(20, ge=1, le=10_000, description="Versions kept per asset.")
    s3: S3StoreSettings | None = None
    pointer_ttl_seconds: float = Field(
        0,
        ge=0,
        le=60,
        description="Seconds a reader trusts its cached LATEST pointer before polling it again (object stores: "
        "one HEAD per poll). 0 polls on every read: an answer is never behind a published version.",
    )

    def root_options(self) -> dict[str, Any]:
        s3 = self.s3 or S3StoreSettings()
        return {
            "endpoint_url": s3.endpoint_url,
            "region": s3.region,
            "access_key_id": s3.access_key_id.get_secret_value() if s3.access_key_id else None,
            "secret_access_key": s3.secret_access_key.get_secret_value() if s3.secret_access_key else None,
            "addressing_style": s3.addressing_style,
            "pointer_ttl_seconds": self.pointer_ttl_seconds,
        }


class DbtSettings(_Model):
    project_dir: Path = Field(description="The dbt project root.")
    profiles_dir: Path | None = None
    target: str | None = None
    target_path: Path | None = Field(
        None, description="Where dbt writes artifacts; default <home>/dbt/target."
    )
    warehouse: str | None = Field(None, description="Warehouse (by name) this project builds into.")
    log_path: Path | None = Field(
        None,
        description="Where dbt runs outside ADE write dbt.log (their --log-path); default <project_dir>/logs. "
        "The dbt tools read its end to report an invocation that failed before writing artifacts.",
    )
    artifact_roots: list[Path] = Field(
        default_factory=list,
        description="More folders an artifact path (run_results_path, manifest_path, ...) may point into, "
        "e.g. one target folder per environment.",
    )


class PiiPatternSettings(_Model):
    name: str = Field(description="Reported as pii_pattern_matched, e.g. 'national_id'.")
    regex: str = Field(description="Matched (case-insensitive) against the snake_case column name.")
    risk_level: Literal["high", "medium", "low"] = "medium"

    @field_validator("regex")
    @classmethod
    def _compiles(cls, value: str) -> str:
        try:
            re.compile(value)
        except re.error as exc:
            raise ValueError(f"not a valid regular expression: {exc}") from None
        return value


class PiiSettings(_Model):
    patterns: list[PiiPatternSettings] = Field(
        default_factory=list, description="Column-name patterns checked before the built-in ones."
    )
    ignore: list[str] = Field(
        default_factory=list,
        description="Column-name regexes never flagged, checked first (e.g. '^contract_address$' on a chain).",
    )

    @field_validator("ignore")
    @classmethod
    def _ignore_compiles(cls, value: list[str]) -> list[str]:
        for regex in value:
            try:
                re.compile(regex)
            except re.error as exc:
                raise ValueError(f"{regex!r} is not a valid regular expression: {exc}") from None
        return value

    tags: list[str] = Field(
        default_factory=lambda: ["pii", "sensitive"],
        description="Tag or meta terms that mark a column as PII.",
    )


class FreshnessTarget(_Model):
    table: str = Field(description="[database.]schema.table whose freshness Dagster checks.")
    column: str = Field(description="The DATE/TIMESTAMP column whose newest value dates the table.")
    warn_after_hours: float | None = Field(None, gt=0)
    error_after_hours: float = Field(24, gt=0)


class DuckDBWarehouse(_Model):
    type: Literal["duckdb"]
    path: Path
    schemas: list[str] = Field(default_factory=list, description="Schemas to snapshot; empty = all.")
    hold_seconds: float = Field(
        0.5,
        ge=0,
        le=60,
        description=(
            "How long a reader keeps the file attached after a query, so the next query of a burst skips "
            "re-reading the catalog. The platform's writers take it over at once; a writer outside the "
            "platform (a dbt run in a shell) can meet DuckDB's lock for this long. 0 = attach per query."
        ),
    )
    freshness: list[FreshnessTarget] = Field(default_factory=list)


class SnowflakeWarehouse(_Model):
    type: Literal["snowflake"]
    account: str
    user: str
    password: SecretStr | None = None
    database: str | None = None
    warehouse: str | None = None
    role: str | None = None
    schemas: list[str] = Field(default_factory=list)
    host: str | None = None
    port: int | None = None
    protocol: Literal["https", "http"] = "https"
    freshness: list[FreshnessTarget] = Field(default_factory=list)


class BigQueryWarehouse(_Model):
    type: Literal["bigquery"]
    project: str
    datasets: list[str] = Field(default_factory=list)
    location: str | None = None
    credentials_path: Path | None = None
    api_endpoint: str | None = None
    freshness: list[FreshnessTarget] = Field(default_factory=list)


Warehouse = Annotated[DuckDBWarehouse | SnowflakeWarehouse | BigQueryWarehouse, Field(discriminator="type")]


class DatasetRecipeSettings(_Model):
    """Per-recipe generation settings of the datasets assets (keyed by the recipe's stem in ade.yaml)."""

    options: dict[str, str | int | float | bool] = Field(default_factory=dict, description="--option values.")
    reps: int | None = Field(None, ge=1, description="Repetitions per materialization (default: one).")
    target_table: str | None = Field(None, description="Stop when this table has target_count rows.")
    target_count: int | None = Field(None, ge=1)
    seed: int | None = Field(None, description="Seed for reproducible values.")
    continuation: bool = Field(False, description="Chain runs: continue from the previous run and append.")


class DatasetSettings(_Model):
    recipes_dir: Path = Field(description="Folder of Snowfakery recipes; each *.recipe.yml is an asset.")
    warehouse: str = Field(description="Warehouse (by name) the generated tables are loaded into.")
    schema_name: str = Field("raw", alias="schema")
    recipes: dict[str, DatasetRecipeSettings] = Field(
        default_factory=dict, description="Keyed by recipe stem."
    )
    schedule_cron: str | None = Field(
        None, description="Cron of the dataset regeneration schedule (off if unset)."
    )


class SnowfakerySettings(_Model):
    """The snowfakery toolset: where recipes live, and the limits every run is held to."""

    workspace_root: Path | None = Field(None, description="Recipe workspace; default <home>/snowfakery.")
    runs_dir: Path | None = Field(
        None, description="Server-managed run outputs; default <home>/snowfakery-runs."
    )
    docs_dir: Path | None = Field(None, description="Serve these docs/, schema/, examples/ instead of ours.")
    max_reps: int = Field(1000, ge=1)
    max_target_count: int = Field(100_000, ge=1)
    max_rows: int = Field(1_000_000, ge=1, description="Rows one run may write, all tables together.")
    timeout_seconds: float = Field(60, gt=0, le=86_400)
    max_output_bytes: int = Field(200_000_000, ge=1024, description="Largest file one run may write.")
    max_inline_chars: int = Field(
        20_000, ge=100, description="Output returned inline; the rest is a resource."
    )
    max_recipe_bytes: int = Field(1_000_000, ge=100)
    max_memory_mb: int = Field(2048, ge=0, description="Address-space limit of a run (0 = none).")
    max_runs_kept: int = Field(50, ge=1, description="Run folders kept; older ones are deleted.")
    allow_dburl: bool = Field(False, description="Allow run_recipe to write to a database URL.")
    allow_network: bool = Field(False, description="Allow recipes and plugins to open network connections.")
    allowed_plugins: list[str] = Field(
        default_factory=lambda: ["snowfakery.standard_plugins.*"],
        description="Plugins/providers a recipe may declare (fnmatch patterns).",
    )


def _spec_key(name: str, camel: str, default: Any, **kw: Any) -> Any:
    """A field readable by its ade.yaml name or by the snowflake spec's project.yaml (camelCase) name."""
    from pydantic import AliasChoices

    return Field(default, validation_alias=AliasChoices(name, camel), **kw)


class SnowflakeDefaultsSettings(_Model):
    database: str | None = Field(None, description="Pinned on every call; default: the connection's own.")
    schema_name: str | None = Field(None, alias="schema")
    warehouse: str | None = None
    role: str | None = None


def _default_exclusion_regexes() -> list[str]:
    from ade_platform.lib.guard.policy import DEFAULT_EXCLUSION_REGEXES

    return list(DEFAULT_EXCLUSION_REGEXES)


class SnowflakeExclusionSettings(_Model):
    """What the guardrail never touches. Globs and regexes both apply; either one matching excludes."""

    patterns: list[str] = Field(
        default_factory=list, description="Globs over DB.SCHEMA.OBJECT (see lib/guard/policy.py)."
    )
    regexes: list[str] = Field(
        default_factory=_default_exclusion_regexes,
        description=(
            "Python regexes searched case-insensitively in each part of a name (the spec's patterns). "
            "Default: the spec's ^PROD_, _PROD$, _BACKUP$, _ARCHIVE$, ^SYSTEM_; setting the key replaces "
            "them ([] turns them off)."
        ),
    )
    object_types: list[str] = _spec_key("object_types", "objectTypes", [])


class SnowflakeGuardrailSettings(_Model):
    max_scalar_rows: int = _spec_key("max_scalar_rows", "maxScalarRows", 1000, ge=1, le=100_000)
    max_stat_rows: int = _spec_key(
        "max_stat_rows",
        "maxStatRows",
        10_000,
        ge=1,
        le=10_000_000,
        description="Rows of a DATA result counted in the server (past it, counted in Snowflake).",
    )
    allow_numeric_aggregates: bool = _spec_key("allow_numeric_aggregates", "allowNumericAggregates", False)
    allow_filtered_counts: bool = _spec_key("allow_filtered_counts", "allowFilteredCounts", False)
    allowed_table_functions: list[str] = _spec_key("allowed_table_functions", "allowedTableFunctions", [])
    variant_sample_size: int = _spec_key("variant_sample_size", "variantSampleSize", 100, ge=1, le=10_000)
    allow_ddl_with_queries: bool = _spec_key(
        "allow_ddl_with_queries",
        "allowDdlWithQueries",
        False,
        description="Let execute_ddl run CREATE VIEW/TABLE ... AS SELECT (a view can encode a predicate).",
    )

    @classmethod
    def _variant(cls, value: Any) -> Any:
        if isinstance(value, dict) and isinstance(
            value.get("variantAnalysis") or value.get("variant_analysis"), dict
        ):
            value = dict(value)
            nested = value.pop("variantAnalysis", None) or value.pop("variant_analysis", None)
            if "sampleSize" in nested or "sample_size" in nested:
                value["variant_sample_size"] = nested.get("sampleSize", nested.get("sample_size"))
        return value


class SnowflakeSyncSettings(_Model):
    target_dir: Path | None = _spec_key(
        "target_dir",
        "targetDir",
        None,
        description="DDL repository root; default <home>/snowflake/repository.",
    )
    databases: list[str] = Field(default_factory=list, description="Databases to sync; empty = all visible.")
    include: list[str] = Field(
        default_factory=lambda: ["databases", "schemas", "tables", "views"],
        description="Object kinds the scheduled sync writes (also functions, procedures, stages, tasks).",
    )
    schedule_cron: str | None = Field("0 3 * * *", description="Cron of the scheduled sync (off if null).")
    staleness_interval_seconds: int = Field(3600, ge=60, description="How often the staleness sensor runs.")


class SnowflakeSettings(_Model):
    """The snowflake toolset: the `snow` CLI connection, the metadata-only guardrail, the DDL repository."""

    connection: str | None = Field(
        None, description="Connection name in the snow config; default: its default."
    )
    connections: list[str] = Field(
        default_factory=list, description="Other connection names a tool call may choose."
    )
    config_file: Path | None = _spec_key("config_file", "configFile", None)
    cli_path: str | None = _spec_key("cli_path", "cliPath", None, description="Override for `snow` on PATH.")
    timeout_seconds: float = _spec_key("timeout_seconds", "timeoutSeconds", 120, gt=0, le=3600)
    transport: Literal["cli", "connector"] = Field(
        "cli",
        description="cli: a `snow` process per statement (the spec's); connector: one logged-in "
        "snowflake-connector session per connection name, read from the same snow configuration.",
    )
    environment: str = Field(
        "development",
        max_length=64,
        description="The spec's SDAIDF_ENV (development, staging, ...): stamped on every answer's provenance.",
    )
    project_file: Path | None = Field(
        None, description="A spec-format project.yaml mapped onto this section."
    )
    defaults: SnowflakeDefaultsSettings = Field(default_factory=SnowflakeDefaultsSettings)
    exclusions: SnowflakeExclusionSettings = Field(default_factory=SnowflakeExclusionSettings)
    guardrail: SnowflakeGuardrailSettings = Field(default_factory=SnowflakeGuardrailSettings)
    sync: SnowflakeSyncSettings = Field(default_factory=SnowflakeSyncSettings)

    @field_validator("guardrail", mode="before")
    @classmethod
    def _guardrail_nested(cls, value: Any) -> Any:
        return SnowflakeGuardrailSettings._variant(value)

    @field_validator("exclusions")
    @classmethod
    def _patterns_valid(cls, value: SnowflakeExclusionSettings) -> SnowflakeExclusionSettings:
        from ade_platform.lib.guard import GuardPolicy

        try:  # raises on a malformed glob or regex
            GuardPolicy(exclusion_patterns=tuple(value.patterns), exclusion_regexes=tuple(value.regexes))
        except ValueError as exc:
            raise ValueError(str(exc)) from None
        return value


class DagsterInstanceSettings(_Model):
    """The Dagster instance behind materializations and live tools (dagster.yaml is written from this)."""

    storage: Literal["sqlite", "postgres"] = Field(
        "sqlite",
        description="sqlite: files under DAGSTER_HOME (one machine); postgres: runs, events, schedules.",
    )
    postgres_url_env: str = Field(
        "ADE_DAGSTER_PG_URL",
        pattern=r"^[A-Za-z_][A-Za-z0-9_]*$",
        description="The environment variable holding postgresql://user:password@host:port/db; dagster.yaml "
        "names the variable, never the URL, so no password is written to disk.",
    )
    max_concurrent_runs: int = Field(
        1, ge=1, le=1000, description="1 for the embedded DuckDB warehouse (one writer); raise on Postgres."
    )


# --- BI (issue 13): Looker and Metabase -------------------------------------------------------------------


class LookerSettings(_Model):
    """A Looker instance, reached through looker-sdk (API 4.0) with an API key's client id and secret."""

    base_url: str = Field(
        description="The instance URL the API is served from, e.g. https://acme.looker.com."
    )
    client_id: SecretStr = Field(description="API key client id, as a ${ENV} reference.")
    client_secret: SecretStr = Field(description="API key client secret, as a ${ENV} reference.")
    verify_ssl: bool = True

    @field_validator("client_id", "client_secret")
    @classmethod
    def _not_empty(cls, value: SecretStr) -> SecretStr:
        if not value.get_secret_value():
            raise ValueError("must not be empty (is its environment variable set?)")
        return value


class MetabaseSettings(_Model):
    """A Metabase instance, reached over its REST API with an API key (preferred) or a user session."""

    base_url: str = Field(description="The instance URL, e.g. https://metabase.acme.com.")
    api_key: SecretStr | None = Field(None, description="Sent as X-API-KEY; a ${ENV} reference.")
    username: str | None = Field(None, description="For POST /api/session when no api_key is set.")
    password: SecretStr | None = None

    @field_validator("api_key", "password", mode="before")
    @classmethod
    def _empty_is_none(cls, value: Any) -> Any:
        return None if value == "" else value

    @model_validator(mode="after")
    def _some_credentials(self) -> MetabaseSettings:
        if self.api_key is None and not (self.username and self.password):
            raise ValueError("set api_key, or username and password")
        return self


class BiSettings(_Model):
    """The bi-api toolset and the BI assets. A tool whose base_url is empty is not configured (so the demo's
    `${ADE_LOOKER_URL:-}` leaves it off when no emulator runs)."""

    looker: LookerSettings | None = None
    metabase: MetabaseSettings | None = None
    warehouse: str | None = Field(
        None,
        description="The warehouse the dashboards read (names tables, compares row counts); default: dbt's.",
    )
    timeout_seconds: float = Field(30, gt=0, le=600, description="Timeout of one API call.")
    tile_timeout_seconds: float = Field(60, gt=0, le=3600, description="Timeout of running one tile.")
    max_concurrency: int = Field(4, ge=1, le=32, description="Tiles run at once by the row-count checks.")
    sensor_interval_seconds: int = Field(300, ge=30, description="How often the dashboard-error sensor runs.")
    max_rows: int = Field(
        100,
        ge=1,
        le=5000,
        description="Rows bi_run_look returns at most (`truncated` says when there were more).",
    )
    run_look: Literal["rows", "shape"] = Field(
        "rows",
        description="rows: bi_run_look returns rows, PII-like columns and tables the Snowflake exclusions name "
        "masked; shape: only columns, types, row count and null percentages (no value at all).",
    )

    @field_validator("looker", "metabase", mode="before")
    @classmethod
    def _unset_when_no_url(cls, value: Any) -> Any:
        if isinstance(value, dict) and not value.get("base_url"):
            return None
        return value

    @property
    def tools(self) -> list[str]:
        """The configured BI tools, in a stable order."""
        return [name for name in ("looker", "metabase") if getattr(self, name) is not None]


# --- orchestrators (issue 12) ---
class TriggerSettings(_Model):
    """What orchestrator_trigger_dag may start on one backend, and the conf each DAG accepts."""

    triggerable: list[str] | None = Field(
        None,
        description="DAG ids / deployments (a flow name covers its deployments) / Dagster jobs an agent may "
        "trigger; anything else is trigger_not_allowed. Default: the tracked ones.",
    )
    conf_schemas: dict[str, dict[str, Any]] = Field(
        default_factory=dict, description="dag_id -> JSON schema the trigger's conf must match."
    )

    @field_validator("conf_schemas")
    @classmethod
    def _valid_schemas(cls, value: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
        if value:
            import jsonschema

            for dag_id, schema in value.items():
                try:
                    jsonschema.validators.validator_for(schema).check_schema(schema)
                except jsonschema.SchemaError as exc:
                    raise ValueError(f"{dag_id}: not a valid JSON schema ({exc.message})") from None
        return value


class AirflowSettings(TriggerSettings):
    base_url: str = Field(description="Airflow API server URL, e.g. http://airflow.internal:8080.")
    username: str | None = None
    password: SecretStr | None = Field(None, description="A ${ENV} reference.")
    api_version: Literal["auto", "v2", "v1"] = Field(
        "auto", description="auto probes the server: Airflow 3 (/api/v2, JWT) or Airflow 2 (/api/v1, basic)."
    )
    dags: list[str] = Field(default_factory=list, description="DAG ids tracked by the run-history asset.")
    timeout_seconds: float = Field(30, gt=0)


class PrefectSettings(TriggerSettings):
    api_url: str = Field(
        description="Prefect API URL: http://host:4200/api, or Prefect Cloud's workspace URL."
    )
    api_key: SecretStr | None = Field(None, description="Prefect Cloud API key (a ${ENV} reference).")
    auth_string: SecretStr | None = Field(
        None, description="Self-hosted server basic auth 'user:password' (a ${ENV} reference)."
    )
    flows: list[str] = Field(
        default_factory=list, description="Flow names (or flow/deployment) tracked by the run-history asset."
    )
    timeout_seconds: float = Field(30, gt=0)


class DagsterOrchestratorSettings(TriggerSettings):
    jobs: list[str] | None = Field(None, description="Jobs tracked by the run-history asset; default: all.")


class OrchestratorSettings(_Model):
    airflow: AirflowSettings | None = None
    prefect: PrefectSettings | None = None
    dagster: DagsterOrchestratorSettings = Field(default_factory=DagsterOrchestratorSettings)
    history_days: int = Field(7, ge=1, le=365, description="Days of run history the assets keep.")
    max_log_chars: int = Field(50_000, ge=1_000, le=1_000_000)
    pattern_timeout_seconds: float = Field(1.0, gt=0, le=30)
    max_conf_bytes: int = Field(16_384, ge=64, le=1_000_000, description="Largest trigger conf (JSON bytes).")
    max_conf_depth: int = Field(
        5, ge=1, le=20, description="Deepest nesting of a trigger conf's objects/lists."
    )
    max_conf_keys: int = Field(
        200, ge=1, le=10_000, description="Most object keys in a trigger conf, all levels."
    )


# --- end orchestrators ---
# --- dbt Cloud (issue 11) ---------------------------------------------------------------------------------------


class DbtCloudSettings(_Model):
    """The dbt-cloud toolset and its assets: one dbt Cloud account reached through the Administrative API v2."""

    base_url: str = Field(
        "https://cloud.getdbt.com/api/v2", description="API base URL, ending in /api/v2 (per region/tenant)."
    )
    account_id: int = Field(ge=1, description="dbt Cloud account id.")
    api_token: SecretStr = Field(description="Service token (read + job run scope); a ${ENV} reference.")
    project_id: int | None = Field(
        None, ge=1, description="Default project (the job inventory asset lists it)."
    )
    environment_id: int | None = Field(None, ge=1, description="Default environment filter of the inventory.")
    tracked_jobs: list[int] = Field(
        default_factory=list, description="Job ids whose runs and artifacts Dagster snapshots into the store."
    )
    dbt_tools_job: int | None = Field(
        None,
        ge=1,
        description="A tracked job whose latest run's artifacts feed the dbt-artifacts tools (the dbt_manifest, "
        "dbt_run_results, ... slots) instead of a local dbt project.",
    )
    poll_interval_seconds: float = Field(
        10, gt=0, le=300, description="dbtcloud_poll_run's status check period."
    )
    recent_runs: int = Field(20, ge=1, le=500, description="Runs per tracked job kept in dbt_cloud_runs.")
    timeout_seconds: float = Field(30, gt=0, le=600, description="Read timeout of one API request.")
    max_artifact_bytes: int = Field(
        200_000,
        ge=1024,
        description="Largest artifact inlined by dbtcloud_fetch_artifact; past it, a summary.",
    )
    sensor_interval_seconds: int = Field(60, ge=10, description="How often the failed-run sensor polls.")
    triggerable_jobs: list[int] | None = Field(
        None,
        description="Jobs dbtcloud_trigger_job may start (others: trigger_not_allowed); default: tracked_jobs.",
    )
    allow_steps_override: bool = Field(
        True,
        description="Whether dbtcloud_trigger_job takes steps_override, always under the dbt command policy "
        "(ade_platform/lib/dbt/command_policy.py); false refuses every override.",
    )
    allow_full_refresh: bool = Field(
        False, description="Whether an agent's steps_override may pass --full-refresh."
    )

    def triggerable(self) -> list[int]:
        return list(self.tracked_jobs if self.triggerable_jobs is None else self.triggerable_jobs)

    @field_validator("base_url")
    @classmethod
    def _http_url(cls, value: str) -> str:
        if not re.match(r"^https?://[^/\s]+", value):
            raise ValueError("must be an http(s) URL such as https://cloud.getdbt.com/api/v2")
        return value.rstrip("/")

    @field_validator("dbt_tools_job")
    @classmethod
    def _feeding_job_tracked(cls, value: int | None, info: Any) -> int | None:
        if value is not None and value not in (info.data.get("tracked_jobs") or []):
            raise ValueError("must be one of tracked_jobs (its runs are what Dagster snapshots)")
        return value


# --- end dbt Cloud ----------------------------------------------------------------------------------------------


class LimitSettings(_Model):
    max_lineage_nodes: int = Field(500, ge=1)
    max_rows: int = Field(1000, ge=1)
    query_timeout_seconds: float = Field(120, gt=0, description="The spec's default: 120 s.")


MIN_TOKEN_LENGTH = 32


class HttpSettings(_Model):
    host: str = "127.0.0.1"
    port: int = Field(8765, ge=1, le=65535)
    token: SecretStr | None = Field(
        None,
        description=f"Bearer token (at least {MIN_TOKEN_LENGTH} characters); required unless bound to loopback.",
    )
    allowed_hosts: list[str] = Field(
        default_factory=list,
        description="Host header values served besides 127.0.0.1, localhost and [::1] with the port: the names "
        "clients reach the gateway by (`name` on any port, `name:port`). Required when bound to 0.0.0.0.",
    )
    allowed_origins: list[str] = Field(
        default_factory=list,
        description="Browser origins (http(s)://host[:port]) allowed to call the gateway; any other Origin is "
        "refused (403). Requests without an Origin (non-browser clients) are not affected.",
    )

    @field_validator("token", mode="before")
    @classmethod
    def _empty_token_is_none(cls, value: Any) -> Any:
        return None if value == "" else value

    @field_validator("token")
    @classmethod
    def _token_long_enough(cls, value: SecretStr | None) -> SecretStr | None:
        if value is not None and len(value.get_secret_value()) < MIN_TOKEN_LENGTH:
            raise ValueError(f"must be at least {MIN_TOKEN_LENGTH} characters (e.g. `openssl rand -hex 24`)")
        return value

    @field_validator("allowed_hosts", "allowed_origins")
    @classmethod
    def _allow_list_parses(cls, value: list[str], info: ValidationInfo) -> list[str]:
        from ade_platform.lib.http_guard import normalize_origin, parse_host

        if info.field_name == "allowed_hosts":
            parse, form = parse_host, "host names (name, name:port or [v6]:port)"
        else:
            parse, form = normalize_origin, "origins (http(s)://host[:port], no path)"
        bad = [entry for entry in value if parse(entry) is None]
        if bad:
            raise ValueError(f"{bad} are not {form}")
        return value


class McpSettings(_Model):
    toolsets: list[str] = Field(default_factory=lambda: list(TOOLSETS))
    fast_read_only_live: bool = Field(
        True,
        description="Read-only live tools run in-process and record their audit run in the background.",
    )
    fast_workspace_live: bool = Field(
        True,
        description="Live tools whose only effects are workspace files (snowfakery.run_recipe without dburl) "
        "run in-process; their audit run follows, made durable by an fsynced intent in the audit journal.",
    )
    tool_names: Literal["spec", "portable"] = Field(
        "spec",
        description="spec: tool names exactly as the specs write them (some contain dots); portable: dots "
        "become underscores, for hosts whose model APIs only accept [A-Za-z0-9_-] in tool names.",
    )
    max_staleness_seconds: float | None = Field(None, gt=0, description="Answers older than this say stale.")
    observations_per_key: int = Field(
        50, ge=1, le=10_000, description="Changes kept per observed object (a tile, a table, a job's runs)."
    )
    observation_keys: int = Field(
        5_000,
        ge=1,
        le=1_000_000,
        description="Observed objects kept in all (the least recently seen go first).",
    )
    http: HttpSettings = Field(default_factory=HttpSettings)

    @field_validator("toolsets")
    @classmethod
    def _known_toolsets(cls, value: list[str]) -> list[str]:
        unknown = sorted(set(value) - set(TOOLSETS))
        if unknown:
            raise ValueError(f"unknown toolset(s) {unknown}; choose from {list(TOOLSETS)}")
        return value


class LineageBuilder(_Model):
    """A job/DAG/deployment that builds dbt nodes, where its API does not reveal its dbt command."""

    system: str = Field(description="dbt_cloud, airflow, prefect, dagster, or any name of your own.")
    job: str = Field(description="The job id or name, DAG id, or flow/deployment name.")
    select: list[str] = Field(default_factory=list, description="dbt selectors (as after --select).")
    exclude: list[str] = Field(default_factory=list, description="dbt selectors (as after --exclude).")

    @field_validator("select", "exclude", mode="before")
    @classmethod
    def _split(cls, value: Any) -> Any:
        return value.split() if isinstance(value, str) else value


class LineageSettings(_Model):
    builders: list[LineageBuilder] = Field(default_factory=list)
    max_nodes: int = Field(300, ge=1, description="Default node cap of a cross-stack trace.")
    live_budget_ms: int = Field(
        1500,
        ge=0,
        le=60_000,
        description="Time the incident tools spend probing the chain live (closest hops first); 0: snapshots only.",
    )


class ScheduleSettings(_Model):
    metadata_cron: str = Field("0 * * * *", description="Cron of the metadata refresh schedule.")
    timezone: str = "UTC"


class Settings(_Model):
    home: Path = Field(description="ADE_HOME: store, Dagster instance, warehouse files and run outputs.")
    config_path: Path | None = None
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
    log_level: Literal["debug", "info", "warning", "error", "critical"] = Field(
        "warning", description="Level of the platform's own logs; the LOG_LEVEL environment variable wins."
    )

    @field_validator("dbt_cloud", mode="before")
    @classmethod
    def _dbt_cloud_off_without_url(cls, value: Any) -> Any:
        # As for the BI tools: an empty base_url (the demo's `${ADE_DBT_CLOUD_URL:-}` when no emulator runs)
        # means the section is off, so `ade materialize` and `ade dev` work on the demo configuration alone.
        if isinstance(value, dict) and "base_url" in value and not value["base_url"]:
            return None
        return value

    def model_post_init(self, context: Any, /) -> None:
        # Remote store roots get their endpoint and credentials once, here: every reader and writer this
        # process opens on that URL (the gateway, Dagster's steps, sensors) uses them.
        if self.store.root and "://" in self.store.root:
            from ade_platform.store.paths import register_root_options

            register_root_options(self.store.root, self.store.root_options())

    @property
    def store_root(self) -> str:
        return self.store.root or str(self.home / "store")

    @property
    def dagster_home(self) -> Path:
        return Path(os.environ.get("DAGSTER_HOME") or self.home / "dagster")

    @property
    def dbt_target_path(self) -> Path | None:
        if self.dbt is None:
            return None
        return self.dbt.target_path or self.home / "dbt" / "target"

    def warehouse(self, name: str) -> DuckDBWarehouse | SnowflakeWarehouse | BigQueryWarehouse:
        try:
            return self.warehouses[name]
        except KeyError:
            raise ConfigError(f"warehouses.{name}: no warehouse of that name is configured") from None


def _expand(value: Any, key: str, env: dict[str, str]) -> Any:
    if isinstance(value, dict):
        return {k: _expand(v, f"{key}.{k}" if key else str(k), env) for k, v in value.items()}
    if isinstance(value, list):
        return [_expand(v, f"{key}[{i}]", env) for i, v in enumerate(value)]
    if not isinstance(value, str):
        return value

    def substitute(match: re.Match[str]) -> str:
        name, default = match.group(1), match.group(2)
        if name in env:
            return env[name]
        if default is not None:
            return default
        raise ConfigError(f"{key}: environment variable {name} is not set (referenced as ${{{name}}})")

    return _ENV_REF.sub(substitute, value)


_PATH_KEYS = {
    ("home",),
    ("dbt", "project_dir"),
    ("dbt", "profiles_dir"),
    ("dbt", "target_path"),
    ("dbt", "log_path"),
    ("datasets", "recipes_dir"),
    ("snowfakery", "workspace_root"),
    ("snowfakery", "runs_dir"),
    ("snowfakery", "docs_dir"),
    ("snowflake", "config_file"),
    ("snowflake", "project_file"),
    ("snowflake", "sync", "target_dir"),
}

# The snowfakery spec's environment variables (section 10) override the `snowfakery:` section.
_SNOWFAKERY_ENV = {
    "SNOWFAKERY_MCP_WORKSPACE_ROOT": "workspace_root",
    "SNOWFAKERY_MCP_MAX_REPS": "max_reps",
    "SNOWFAKERY_MCP_MAX_TARGET_COUNT": "max_target_count",
    "SNOWFAKERY_MCP_TIMEOUT_SECONDS": "timeout_seconds",
    "SNOWFAKERY_MCP_ALLOW_DBURL": "allow_dburl",
    "SNOWFAKERY_MCP_ALLOW_NETWORK": "allow_network",
}


def _resolve_paths(raw: dict[str, Any], base: Path) -> None:
    def fix(value: Any) -> Any:
        if isinstance(value, str) and value and "://" not in value:
            path = Path(value).expanduser()
            return str(path if path.is_absolute() else (base / path).resolve())
        return value

    for parts in _PATH_KEYS:
        node: Any = raw
        for part in parts[:-1]:
            node = node.get(part) if isinstance(node, dict) else None
        if isinstance(node, dict) and parts[-1] in node:
            node[parts[-1]] = fix(node[parts[-1]])
    dbt = raw.get("dbt")
    if isinstance(dbt, dict) and isinstance(dbt.get("artifact_roots"), list):
        dbt["artifact_roots"] = [fix(v) for v in dbt["artifact_roots"]]
    for wh in (raw.get("warehouses") or {}).values():
        if isinstance(wh, dict):
            for key in ("path", "credentials_path"):
                if key in wh:
                    wh[key] = fix(wh[key])
    store = raw.get("store")
    if isinstance(store, dict) and store.get("root"):
        store["root"] = fix(store["root"])


def load_settings(path: str | os.PathLike[str] | None = None, env: dict[str, str] | None = None) -> Settings:
    """Read, expand and validate the configuration. Raises ConfigError with the key and reason."""
    env = dict(os.environ if env is None else env)
    config_path = Path(path or env.get("ADE_CONFIG") or DEFAULT_CONFIG).expanduser().resolve()
    try:
        raw = yaml.safe_load(config_path.read_text()) or {}
    except FileNotFoundError:
        raise ConfigError(f"config file not found: {config_path}") from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"{config_path.name}: not valid YAML ({exc})") from None
    if not isinstance(raw, dict):
        raise ConfigError(f"{config_path.name}: the top level must be a mapping")
    # ADE_HOME (environment, else `home:`) is resolved first so the rest of the file can say ${ADE_HOME}.
    home = env.get("ADE_HOME") or _expand(raw.get("home", ".ade"), "home", env)
    home_path = Path(home).expanduser()
    env["ADE_HOME"] = str(
        home_path if home_path.is_absolute() else (config_path.parent / home_path).resolve()
    )
    raw = _expand(raw, "", env)
    raw["home"] = env["ADE_HOME"]
    overrides = {key: env[name] for name, key in _SNOWFAKERY_ENV.items() if env.get(name)}
    if overrides:
        raw["snowfakery"] = {**(raw.get("snowfakery") or {}), **overrides}
    _resolve_paths(raw, config_path.parent)
    if raw.get("snowflake") is not None or env.get("SDAIDF_CONFIG_PATH") or env.get("SNOW_CONNECTION"):
        from ade_platform.lib.snowflake.project import snowflake_section

        try:
            raw["snowflake"] = snowflake_section(raw.get("snowflake"), env, config_path.parent)
        except ValueError as exc:
            raise ConfigError(f"{config_path.name}: snowflake: {exc}") from None
    raw["config_path"] = str(config_path)
    if env.get("LOG_LEVEL"):  # snowflake-cli-mcp spec 5.2 (LOG_LEVEL="info")
        raw["log_level"] = env["LOG_LEVEL"].strip().lower()
    try:
        return Settings.model_validate(raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        key = ".".join(str(p) for p in first["loc"]) or "(top level)"
        raise ConfigError(f"{config_path.name}: {key}: {first['msg']}") from None
