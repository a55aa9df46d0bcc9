"""dbt-project through MCP against the demo project (dbt_demo) after the demo was materialized."""

from __future__ import annotations

import pytest

from ade_platform.config import Settings
from mcp_bridge.server import build_server
from tests.helpers import call_tools

pytestmark = pytest.mark.integration


def test_demo_project_files(demo_settings: Settings) -> None:
    calls = [
        ("fs_read_model_sql", {"model_name": "fct_payments_daily"}),
        ("fs_read_model_sql", {"model_name": "fct_payments_daily", "compiled": True}),
        ("fs_list_models", {"materialization": "incremental"}),
        ("fs_list_models", {"tag": "finance"}),
        ("fs_find_models_referencing", {"source_or_model": "stg_orders"}),
        ("fs_find_models_referencing", {"source_or_model": "raw.orders"}),
        ("fs_read_project_config", {}),
        ("fs_read_schema_yaml", {"schema_path": "models/staging/_staging.yml"}),
        ("fs_read_schema_yaml", {"schema_path": "profiles.yml"}),
    ]
    results = call_tools(build_server(demo_settings, only="dbt-project"), calls)
    (
        (_, raw),
        (ok_comp, comp),
        (_, incr),
        (_, fin),
        (_, refs),
        (_, srcs),
        (_, cfg),
        (_, yml),
        (ok_prof, prof),
    ) = results
    assert "is_incremental()" in raw["sql"] and raw["compiled"] is False
    assert ok_comp, comp
    assert "{{" not in comp["sql"] and '"demo"."main"."stg_payments"' in comp["sql"]
    assert comp["compiled_source"] in ("target_compiled_file", "manifest", "last_build_manifest")
    assert [m["model_name"] for m in incr["models"]] == ["fct_payments_daily"]
    assert sorted(m["model_name"] for m in fin["models"]) == ["fct_payments_daily", "finance_orders"]
    assert sorted(r["model_name"] for r in refs["references"]) == ["fct_payments_daily", "orders"]
    assert all(r["line_number"] > 0 for r in refs["references"])
    assert [r["model_name"] for r in srcs["references"]] == ["stg_orders"]
    assert cfg["content"]["name"] == "dbt_demo"
    email = next(c for c in yml["content"]["models"][0]["columns"] if c["name"] == "email")
    assert email["tags"] == ["pii"]
    assert not ok_prof and prof["error"] == "path_not_allowed"
