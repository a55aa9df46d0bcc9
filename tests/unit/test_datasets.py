"""Snowfakery generation and DuckDB loading (ade_platform.lib.datasets)."""

from __future__ import annotations

import csv
from datetime import UTC, datetime, timedelta
from pathlib import Path

import duckdb
import pytest

from ade_platform.lib.datasets import DatasetRun, generate_dataset, load_into_duckdb

REPO_ROOT = Path(__file__).resolve().parents[2]
RECIPE = REPO_ROOT / "dbt_demo" / "recipes" / "jaffle_shop.recipe.yml"
SMALL = {"customer_count": "25"}


def _rows(path: Path) -> list[dict[str, str]]:
    with path.open(newline="") as handle:
        return list(csv.DictReader(handle))


@pytest.fixture(scope="module")
def small_run(tmp_path_factory: pytest.TempPathFactory) -> DatasetRun:
    return generate_dataset(RECIPE, tmp_path_factory.mktemp("small"), options=SMALL, seed=1)


def test_generates_three_tables_with_counts(small_run: DatasetRun) -> None:
    assert set(small_run.tables) == {"customers", "orders", "payments"}
    for name, path in small_run.tables.items():
        assert path.parent == small_run.output_dir
        assert small_run.row_counts[name] == len(_rows(path))
    assert small_run.row_counts["customers"] == 25
    # every order has one or two payments
    assert (
        small_run.row_counts["orders"]
        <= small_run.row_counts["payments"]
        <= 2 * small_run.row_counts["orders"]
    )
    assert small_run.total_rows == sum(small_run.row_counts.values())
    # Snowfakery's "Created ..." lines are collected, not printed
    assert any("customers.csv" in message for message in small_run.messages)


def test_expected_columns_and_loaded_at(small_run: DatasetRun) -> None:
    expected = {
        "customers": {
            "id",
            "full_name",
            "email",
            "phone",
            "date_of_birth",
            "address",
            "created_at",
            "_loaded_at",
        },
        "orders": {"id", "customer_id", "order_date", "status", "amount", "_loaded_at"},
        "payments": {"id", "order_id", "payment_method", "amount", "card_last_four", "_loaded_at"},
    }
    for name, columns in expected.items():
        rows = _rows(small_run.tables[name])
        assert set(rows[0]) == columns
        assert all(row["_loaded_at"] for row in rows)


def test_referential_integrity(small_run: DatasetRun) -> None:
    customers = {row["id"] for row in _rows(small_run.tables["customers"])}
    orders = _rows(small_run.tables["orders"])
    payments = _rows(small_run.tables["payments"])
    assert {row["customer_id"] for row in orders} <= customers
    assert {row["order_id"] for row in payments} <= {row["id"] for row in orders}
    # the payments of an order add up to its amount
    paid: dict[str, float] = {}
    for row in payments:
        paid[row["order_id"]] = paid.get(row["order_id"], 0.0) + float(row["amount"])
    for order in orders:
        assert paid[order["id"]] == pytest.approx(float(order["amount"]), abs=0.005)


def test_order_status_includes_the_deliberate_lost_value(small_run: DatasetRun) -> None:
    statuses = {row["status"] for row in _rows(small_run.tables["orders"])}
    assert "lost" in statuses
    assert statuses - {"lost"} <= {"placed", "shipped", "completed", "return_pending", "returned"}


def test_default_volume(tmp_path: Path) -> None:
    run = generate_dataset(RECIPE, tmp_path)
    assert run.row_counts["customers"] == 200
    assert 450 <= run.row_counts["orders"] <= 750
    assert run.row_counts["payments"] >= run.row_counts["orders"]


def test_seed_makes_generation_reproducible(tmp_path: Path) -> None:
    first = generate_dataset(RECIPE, tmp_path / "a", options=SMALL, seed=123)
    second = generate_dataset(RECIPE, tmp_path / "b", options=SMALL, seed=123)
    # _loaded_at and created_at are relative to "now" and may move; the rest must match
    for name in ("customers", "orders"):
        left = [{k: v for k, v in row.items() if not k.endswith("_at")} for row in _rows(first.tables[name])]
        right = [
            {k: v for k, v in row.items() if not k.endswith("_at")} for row in _rows(second.tables[name])
        ]
        assert left == right


def test_target_number_stops_on_table(tmp_path: Path) -> None:
    # each repetition of the recipe creates `customer_count` customers; it stops once the target is met
    run = generate_dataset(RECIPE, tmp_path, target_number=("customers", 12), options={"customer_count": "5"})
    assert run.row_counts["customers"] == 15


def test_reps_repeats_the_recipe(tmp_path: Path) -> None:
    run = generate_dataset(RECIPE, tmp_path, reps=3, options={"customer_count": "4"})
    assert run.row_counts["customers"] == 12


def test_continuation_continues_ids(tmp_path: Path) -> None:
    continuation = tmp_path / "state" / "continuation.yml"
    first = generate_dataset(RECIPE, tmp_path / "a", options=SMALL, continuation_out=continuation)
    assert first.continuation_file == continuation
    assert continuation.is_file()
    second = generate_dataset(RECIPE, tmp_path / "b", options=SMALL, continuation_in=continuation)
    first_ids = {int(row["id"]) for row in _rows(first.tables["customers"])}
    second_ids = {int(row["id"]) for row in _rows(second.tables["customers"])}
    assert min(second_ids) > max(first_ids)


def test_rejects_bad_arguments(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="not both"):
        generate_dataset(RECIPE, tmp_path, target_number=("customers", 1), reps=1)
    with pytest.raises(ValueError, match="reps"):
        generate_dataset(RECIPE, tmp_path, reps=0)
    with pytest.raises(FileNotFoundError):
        generate_dataset(tmp_path / "missing.recipe.yml", tmp_path)
    with pytest.raises(FileNotFoundError):
        generate_dataset(RECIPE, tmp_path, continuation_in=tmp_path / "missing.yml")


def test_stale_csvs_are_not_reported(tmp_path: Path) -> None:
    (tmp_path / "leftover.csv").write_text("id\n1\n")
    run = generate_dataset(RECIPE, tmp_path, options=SMALL)
    assert "leftover" not in run.tables


def test_load_into_duckdb_types_and_counts(small_run: DatasetRun, tmp_path: Path) -> None:
    db = tmp_path / "nested" / "demo.duckdb"
    counts = load_into_duckdb(db, "raw", small_run.tables)
    assert counts == small_run.row_counts
    with duckdb.connect(str(db), read_only=True) as con:
        types = {
            (table, column): data_type
            for table, column, data_type in con.execute(
                "SELECT table_name, column_name, data_type FROM information_schema.columns "
                "WHERE table_schema = 'raw'"
            ).fetchall()
        }
        first_columns = con.execute(
            "SELECT table_name, column_name FROM information_schema.columns "
            "WHERE table_schema = 'raw' AND ordinal_position = 1"
        ).fetchall()
        newest_customer_load = con.execute("SELECT max(_loaded_at) FROM raw.customers").fetchone()
    assert types["customers", "id"] == "BIGINT"
    assert types["orders", "customer_id"] == "BIGINT"
    assert types["payments", "order_id"] == "BIGINT"
    assert types["orders", "amount"] == "DECIMAL(18,2)"
    assert types["payments", "amount"] == "DECIMAL(18,2)"
    assert types["orders", "order_date"] == "DATE"
    assert types["customers", "date_of_birth"] == "DATE"
    assert types["payments", "card_last_four"] == "VARCHAR"
    assert types["customers", "phone"] == "VARCHAR"
    for table in ("customers", "orders", "payments"):
        assert types[table, "_loaded_at"] == "TIMESTAMP"
    assert {column for _, column in first_columns} == {"id"}
    # naive TIMESTAMPs hold UTC: the recipe loads customers 1-2 hours before generation
    assert newest_customer_load is not None
    age = datetime.now(UTC).replace(tzinfo=None) - newest_customer_load[0]
    assert timedelta(minutes=55) <= age <= timedelta(hours=2, minutes=5)


def test_load_replaces_tables(small_run: DatasetRun, tmp_path: Path) -> None:
    db = tmp_path / "demo.duckdb"
    load_into_duckdb(db, "raw", small_run.tables)
    bigger = generate_dataset(RECIPE, tmp_path / "bigger", options={"customer_count": "40"})
    counts = load_into_duckdb(db, "raw", bigger.tables)
    assert counts["customers"] == 40
    with duckdb.connect(str(db), read_only=True) as con:
        row = con.execute("SELECT count(*) FROM raw.customers").fetchone()
    assert row is not None
    assert row[0] == 40


def test_failed_load_keeps_previous_tables(small_run: DatasetRun, tmp_path: Path) -> None:
    db = tmp_path / "demo.duckdb"
    before = load_into_duckdb(db, "raw", small_run.tables)
    bigger = generate_dataset(RECIPE, tmp_path / "bigger", options={"customer_count": "40"})
    # customers loads fine, then orders fails: status text cannot be read as INTEGER
    with pytest.raises(duckdb.Error):
        load_into_duckdb(
            db,
            "raw",
            {"customers": bigger.tables["customers"], "orders": bigger.tables["orders"]},
            column_types={"orders": {"status": "INTEGER"}},
        )
    with duckdb.connect(str(db), read_only=True) as con:
        for table, count in before.items():
            row = con.execute(f"SELECT count(*) FROM raw.{table}").fetchone()
            assert row is not None
            assert row[0] == count


def test_column_types_override(small_run: DatasetRun, tmp_path: Path) -> None:
    db = tmp_path / "demo.duckdb"
    load_into_duckdb(
        db, "raw", {"orders": small_run.tables["orders"]}, column_types={"orders": {"id": "VARCHAR"}}
    )
    with duckdb.connect(str(db), read_only=True) as con:
        row = con.execute(
            "SELECT data_type FROM information_schema.columns "
            "WHERE table_schema = 'raw' AND table_name = 'orders' AND column_name = 'id'"
        ).fetchone()
    assert row == ("VARCHAR",)


def test_load_rejects_unsafe_names_and_missing_files(small_run: DatasetRun, tmp_path: Path) -> None:
    with pytest.raises(ValueError):
        load_into_duckdb(tmp_path / "x.duckdb", "raw; drop", small_run.tables)
    with pytest.raises(ValueError):
        load_into_duckdb(tmp_path / "x.duckdb", "raw", {"bad-name": small_run.tables["orders"]})
    with pytest.raises(FileNotFoundError):
        load_into_duckdb(tmp_path / "x.duckdb", "raw", {"orders": tmp_path / "missing.csv"})
