"""`snowflake:` the snowflake toolset: the `snow` CLI connection, the metadata-only guardrail, the DDL repository.

Several keys also read under the snowflake spec's project.yaml (camelCase) names; a spec-format project.yaml is
mapped onto this section when the settings are loaded (ade_platform/config/loading.py).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import AliasChoices, Field, field_validator

from ade_platform.config.base import _Model


def _spec_key(name: str, camel: str, default: Any, **kw: Any) -> Any:
    """A field readable by its ade.yaml name or by the snowflake spec's project.yaml (camelCase) name."""
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
    allow_task_execution: bool = _spec_key(
        "allow_task_execution",
        "allowTaskExecution",
        False,
        description="Let execute_ddl run ALTER TASK|ALERT ... RESUME and EXECUTE TASK|ALERT (a task's body may "
        "predate the guard's body checks, or belong to someone else).",
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
