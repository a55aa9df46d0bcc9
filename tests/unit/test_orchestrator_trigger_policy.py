"""What orchestrator_trigger_dag may start (ade_platform/lib/orchestrators/trigger_policy.py) and its settings."""

from __future__ import annotations

import pytest

from ade_platform.clients.orchestrators import conf_schema, triggerable_dags
from ade_platform.config import ConfigError, load_settings
from ade_platform.lib.orchestrators.trigger_policy import (
    ConfRefused,
    check_conf,
    check_conf_schema,
    trigger_allowed,
)

LIMITS = {"max_bytes": 1024, "max_depth": 3, "max_keys": 10}


def test_allow_lists() -> None:
    assert trigger_allowed("airflow", "dbt_nightly", ["dbt_nightly"])
    assert not trigger_allowed("airflow", "drop_everything", ["dbt_nightly"])
    assert not trigger_allowed("airflow", "dbt_nightly", [])
    assert not trigger_allowed("airflow", "dbt_nightly", None)  # only Dagster has an "every job" default
    # a Prefect flow name covers its deployments; a deployment does not cover its flow or a sibling
    assert trigger_allowed("prefect", "hello/on-demand", ["hello"])
    assert not trigger_allowed("prefect", "hello", ["hello/on-demand"])
    assert not trigger_allowed("prefect", "hello/other", ["hello/on-demand"])
    assert not trigger_allowed("airflow", "hello/x", ["hello"])
    # the platform's internal Dagster jobs never, even when listed
    assert trigger_allowed("dagster", "refresh_metadata", None)
    for internal in ("__ASSET_JOB", "live__warehouse_execute"):
        assert not trigger_allowed("dagster", internal, None)
        assert not trigger_allowed("dagster", internal, [internal])


def test_conf_bounds() -> None:
    check_conf(None, **LIMITS)
    check_conf({"reason": "rerun", "ids": [1, 2.5, True, None], "opts": {"full": False}}, **LIMITS)
    refused = {
        "deep": {"a": {"b": {"c": {"d": 1}}}},
        "deep list": {"a": [[[1]]]},
        "keys": {f"k{i}": i for i in range(11)},
        "nested keys": {"a": {f"k{i}": i for i in range(10)}},
        "bytes": {"reason": "x" * 2000},
        "nan": {"x": float("nan")},
        "inf": {"x": [float("inf")]},
        "object": {"x": object()},
        "bytes value": {"x": b"raw"},
        "int key": {1: "x"},
    }
    for conf in refused.values():
        with pytest.raises(ConfRefused):
            check_conf(conf, **LIMITS)
    with pytest.raises(ConfRefused, match="JSON object"):
        check_conf(["not", "an", "object"], **LIMITS)  # type: ignore[arg-type]


def test_a_very_deep_conf_is_refused_without_recursion() -> None:
    conf: dict = {}
    inner = conf
    for _ in range(50_000):
        inner["x"] = {}
        inner = inner["x"]
    with pytest.raises(ConfRefused, match="deeper"):
        check_conf(conf, **LIMITS)


def test_conf_schema_names_the_path_never_the_value() -> None:
    schema = {
        "type": "object",
        "properties": {"reason": {"type": "string"}, "limit": {"type": "integer", "maximum": 100}},
        "required": ["reason"],
        "additionalProperties": False,
    }
    check_conf_schema({"reason": "rerun", "limit": 5}, schema, "dbt_nightly")
    with pytest.raises(ConfRefused, match=r"conf\['limit'\].*maximum"):
        check_conf_schema({"reason": "rerun", "limit": 1000}, schema, "dbt_nightly")
    with pytest.raises(ConfRefused, match="required"):
        check_conf_schema(None, schema, "dbt_nightly")
    with pytest.raises(ConfRefused) as refused:
        check_conf_schema({"reason": "x", "password": "hunter2-secret"}, schema, "dbt_nightly")
    assert "hunter2-secret" not in str(refused.value)


def _settings(tmp_path, body: str):
    (tmp_path / "ade.yaml").write_text("home: .\n" + body)
    return load_settings(tmp_path / "ade.yaml", env={"ADE_HOME": str(tmp_path / "home")})


def test_triggerable_defaults_to_the_tracked(tmp_path) -> None:
    settings = _settings(
        tmp_path,
        "orchestrators:\n"
        "  airflow: {base_url: 'http://a:8080', dags: [dbt_nightly]}\n"
        "  prefect: {api_url: 'http://p:4200/api', flows: [hello], triggerable: []}\n"
        "  dagster:\n"
        "    conf_schemas: {refresh_metadata: {type: object, maxProperties: 1}}\n",
    )
    assert triggerable_dags(settings, "airflow") == ["dbt_nightly"]
    assert triggerable_dags(settings, "prefect") == []  # an empty list turns triggers off
    assert triggerable_dags(settings, "dagster") is None  # every job tracked: every platform job
    assert conf_schema(settings, "dagster", "refresh_metadata") == {"type": "object", "maxProperties": 1}
    assert conf_schema(settings, "airflow", "dbt_nightly") is None


def test_a_bad_conf_schema_stops_start_up(tmp_path) -> None:
    with pytest.raises(ConfigError, match="conf_schemas"):
        _settings(tmp_path, "orchestrators:\n  dagster:\n    conf_schemas: {x: {type: not-a-type}}\n")


def test_dbt_cloud_trigger_settings(tmp_path) -> None:
    base = "dbt_cloud:\n  account_id: 1\n  api_token: t\n  tracked_jobs: [1, 2]\n"
    settings = _settings(tmp_path, base)
    section = settings.dbt_cloud
    assert section.triggerable() == [1, 2] and section.allow_steps_override and not section.allow_full_refresh
    settings = _settings(tmp_path, base + "  triggerable_jobs: [3]\n  allow_steps_override: false\n")
    assert settings.dbt_cloud.triggerable() == [3] and not settings.dbt_cloud.allow_steps_override
