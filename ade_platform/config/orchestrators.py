"""`orchestrators:` Airflow, Prefect and Dagster as the orchestrator toolset and the run-history assets see them."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, SecretStr, ValidationInfo, field_validator

from ade_platform.config.base import _Model, off_while_empty


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

    @field_validator("airflow", "prefect", mode="before")
    @classmethod
    def _off_while_its_url_is_empty(cls, value: Any, info: ValidationInfo) -> Any:
        # The demo's `${ADE_AIRFLOW_URL:-}` / `${ADE_PREFECT_URL:-}`: off unless `make demo-full` started them.
        return off_while_empty(value, {"airflow": "base_url", "prefect": "api_url"}[info.field_name])
