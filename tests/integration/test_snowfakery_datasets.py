"""Datasets as Dagster assets: per-recipe options, chained runs (continuation files), the schedule, and row
counts as asset metadata, loaded into a real DuckDB warehouse."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pytest
import yaml

from ade_platform.config import load_settings

pytestmark = pytest.mark.integration

SHOP = """# a small shop: stores and their sales; a hidden counter object is never written
- snowfakery_version: 3
- option: store_count
  default: 1
- object: __numbers
  just_once: true
  fields:
    base: 100
- object: store
  count: ${{ int(store_count) }}
  fields:
    code: S${{ __numbers.base + id }}
  friends:
    - object: sale
      count: 2
      fields:
        store_id:
          reference: store
        amount: ${{ random_number(min=1, max=9) }}
"""
PLAIN = "- object: region\n  count: 2\n  fields:\n    name: ${{ fake.city }}\n"


def _settings(tmp_path: Path):
    recipes = tmp_path / "recipes"
    recipes.mkdir()
    (recipes / "shop.recipe.yml").write_text(SHOP)
    (recipes / "plain.recipe.yml").write_text(PLAIN)
    config = {
        "home": str(tmp_path / "home"),
        "warehouses": {"wh": {"type": "duckdb", "path": str(tmp_path / "home" / "wh.duckdb")}},
        "datasets": {
            "recipes_dir": str(recipes),
            "warehouse": "wh",
            "schema": "raw",
            "schedule_cron": "0 4 * * *",
            "recipes": {"shop": {"options": {"store_count": 3}, "continuation": True, "seed": 7}},
        },
        "mcp": {"toolsets": ["snowfakery"]},
    }
    (tmp_path / "ade.yaml").write_text(yaml.safe_dump(config))
    return load_settings(tmp_path / "ade.yaml", env={})


def test_recipes_are_grouped_described_scheduled_assets_that_chain(tmp_path: Path) -> None:
    import dagster as dg

    from ade_platform.defs import datasets
    from ade_platform.defs.datasets import GROUP, JOB
    from ade_platform.defs.inputs import DomainInputs

    settings = _settings(tmp_path)
    defs = datasets.defs(settings, DomainInputs())
    graph = defs.resolve_asset_graph()
    keys = {k.to_user_string() for k in graph.get_all_asset_keys()}
    assert keys == {"raw/store", "raw/sale", "raw/region"}  # the hidden object is not an asset
    for key in graph.get_all_asset_keys():
        node = graph.get(key)
        assert node.group_name == GROUP and node.description
    schedule = defs.resolve_schedule_def("datasets_schedule")
    assert schedule.cron_schedule == "0 4 * * *" and schedule.job_name == JOB

    job = defs.resolve_job_def(JOB)
    instance = dg.DagsterInstance.ephemeral()
    generated = []
    for _ in range(2):
        result = job.execute_in_process(instance=instance)
        assert result.success
        metadata = {
            ev.materialization.asset_key.to_user_string(): ev.materialization.metadata
            for ev in result.get_asset_materialization_events()
        }
        generated.append({k: (m["rows_generated"].value, m["row_count"].value) for k, m in metadata.items()})
        assert metadata["raw/sale"]["run_summary"].value["rows_generated"] == {"sale": 6, "store": 3}
    # options apply; the chained recipe appends and continues its ids, the plain one is replaced
    assert generated[0] == {"raw/store": (3, 3), "raw/sale": (6, 6), "raw/region": (2, 2)}
    assert generated[1] == {"raw/store": (3, 6), "raw/sale": (6, 12), "raw/region": (2, 2)}
    with duckdb.connect(str(settings.warehouse("wh").path), read_only=True) as con:
        assert con.execute("select min(id), max(id), count(distinct id) from raw.store").fetchone() == (
            1,
            6,
            6,
        )
        codes = [r[0] for r in con.execute("select code from raw.store order by id").fetchall()]
        assert codes[:3] == ["S101", "S102", "S103"]
    assert (settings.home / "datasets" / "shop" / "continuation.yml").is_file()


def test_the_code_location_registers_the_dataset_job(tmp_path: Path) -> None:
    from ade_platform.definitions import build_definitions
    from ade_platform.defs.datasets import JOB

    defs = build_definitions(_settings(tmp_path))
    assert defs.resolve_job_def(JOB) is not None
    assert defs.resolve_schedule_def("datasets_schedule") is not None
