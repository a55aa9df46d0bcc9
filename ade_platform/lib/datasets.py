"""Generate synthetic datasets with Snowfakery and load them into DuckDB.

Plain functions, no Dagster or MCP import: the Dagster assets and the snowfakery toolset both call
these. Generation writes one CSV per table; loading (re)creates `schema.table` from those CSVs in
one transaction.
"""

from __future__ import annotations

import csv
import json
import random
import re
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import duckdb
from faker import Faker
from snowfakery import generate_data
from snowfakery.api import COUNT_REPS, stopping_criteria_from_target_number

from ade_platform.lib.snowfakery.quiet import QuietApplication
from ade_platform.lib.warehouse import file_lock

# Snowfakery's CSV writer lists the tables it wrote in this file; it is the only reliable way to
# tell this run's CSVs from stale ones left in the same folder by an earlier recipe.
CSVW_METADATA = "csvw_metadata.json"

# Columns kept as text even when every value looks numeric: leading zeros matter and they are
# identifiers, not quantities.
TEXT_COLUMNS = frozenset(
    {"phone", "phone_number", "card_last_four", "postcode", "postal_code", "zip", "zip_code"}
)

# DuckDB types forced by column-name convention; anything else keeps the type DuckDB detects.
ID_TYPE = "BIGINT"
AMOUNT_TYPE = "DECIMAL(18, 2)"

_INTEGER_TYPES = {"TINYINT", "SMALLINT", "INTEGER", "BIGINT", "HUGEINT", "UTINYINT", "USMALLINT", "UINTEGER"}
_NUMERIC_TYPES = frozenset({*_INTEGER_TYPES, "UBIGINT", "FLOAT", "DOUBLE", "DECIMAL"})

_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


@dataclass(frozen=True)
class DatasetRun:
    """What one Snowfakery run produced."""

    recipe: Path
    output_dir: Path
    tables: dict[str, Path]
    row_counts: dict[str, int]
    continuation_file: Path | None = None
    seed: int | None = None
    elapsed_seconds: float = 0.0
    messages: list[str] = field(default_factory=list)

    @property
    def total_rows(self) -> int:
        return sum(self.row_counts.values())


def generate_dataset(
    recipe: Path,
    output_dir: Path,
    *,
    target_number: tuple[str, int] | None = None,
    reps: int | None = None,
    options: dict[str, str] | None = None,
    continuation_in: Path | None = None,
    continuation_out: Path | None = None,
    seed: int | None = None,
) -> DatasetRun:
    """Run a Snowfakery recipe and write one CSV per table into `output_dir`.

    `target_number` (table, count) and `reps` are Snowfakery's two mutually exclusive stopping
    criteria; without either the recipe runs once. `seed` makes the random choices reproducible
    (it seeds the process-wide `random` and Faker generators, which Snowfakery shares); values
    relative to "now" still move with the clock.
    """
    recipe = Path(recipe)
    output_dir = Path(output_dir)
    if not recipe.is_file():
        raise FileNotFoundError(f"recipe not found: {recipe}")
    if target_number is not None and reps is not None:
        raise ValueError("pass either target_number or reps, not both")
    if reps is not None and reps < 1:
        raise ValueError(f"reps must be at least 1, got {reps}")
    if target_number is not None:
        table, count = target_number
        if not table or count < 1:
            raise ValueError(f"target_number must be (table, count >= 1), got {target_number!r}")
    if continuation_in is not None and not Path(continuation_in).is_file():
        raise FileNotFoundError(f"continuation file not found: {continuation_in}")

    stop_on = (COUNT_REPS, reps) if reps is not None else target_number
    stopping_criteria = stopping_criteria_from_target_number(stop_on)
    app = QuietApplication(stopping_criteria)

    output_dir.mkdir(parents=True, exist_ok=True)
    if continuation_out is not None:
        Path(continuation_out).parent.mkdir(parents=True, exist_ok=True)
    if seed is not None:
        random.seed(seed)
        Faker.seed(seed)

    started = time.monotonic()
    generate_data(
        recipe,
        parent_application=app,
        user_options=dict(options or {}),
        target_number=stop_on,
        output_format="csv",
        output_folder=output_dir,
        continuation_file=continuation_in,
        generate_continuation_file=continuation_out,
    )
    elapsed = time.monotonic() - started

    tables = _written_tables(output_dir)
    return DatasetRun(
        recipe=recipe,
        output_dir=output_dir,
        tables=tables,
        row_counts={name: _count_csv_rows(path) for name, path in tables.items()},
        continuation_file=Path(continuation_out) if continuation_out is not None else None,
        seed=seed,
        elapsed_seconds=elapsed,
        messages=app.messages,
    )


def _written_tables(output_dir: Path) -> dict[str, Path]:
    metadata = json.loads((output_dir / CSVW_METADATA).read_text())
    tables: dict[str, Path] = {}
    for entry in metadata.get("tables", []):
        path = output_dir / entry["url"]
        tables[path.stem] = path
    return dict(sorted(tables.items()))


def _count_csv_rows(path: Path) -> int:
    # csv.reader, not line counting: quoted values (addresses) may contain newlines
    with path.open(newline="") as handle:
        return max(sum(1 for _ in csv.reader(handle)) - 1, 0)


def load_into_duckdb(
    db_path: Path,
    schema: str,
    tables: Mapping[str, Path],
    *,
    column_types: Mapping[str, Mapping[str, str]] | None = None,
    append: bool = False,
) -> dict[str, int]:
    """(Re)create `schema.<table>` from each CSV and return the row count of every table.

    With `append`, rows are added to existing tables (matched by column name) instead: that is how
    runs chained with a continuation file grow a dataset.

    Types: `id`/`*_id` become BIGINT, `amount`/`*_amount` DECIMAL(18, 2), timestamps with an
    offset are converted to UTC and stored as naive TIMESTAMP (dbt's freshness check reads a
    naive timestamp as UTC), phone/card/postcode-like columns stay VARCHAR; the rest keeps the
    type DuckDB detects. `column_types` ({table: {column: type}}) overrides all of that.

    Everything happens in one transaction, so a failed load leaves the previous tables intact.
    """
    _check_identifier(schema)
    for name in tables:
        _check_identifier(name)
    missing = [str(path) for path in tables.values() if not Path(path).is_file()]
    if missing:
        raise FileNotFoundError(f"CSV files not found: {', '.join(missing)}")

    db_path = Path(db_path)
    db_path.parent.mkdir(parents=True, exist_ok=True)
    overrides = column_types or {}
    counts: dict[str, int] = {}
    # The write lock waits for a gateway read in flight instead of failing on DuckDB's file lock.
    with file_lock.writing(db_path), duckdb.connect(str(db_path)) as con:
        con.execute("BEGIN TRANSACTION")
        try:
            con.execute(f'CREATE SCHEMA IF NOT EXISTS "{schema}"')
            existing = {
                str(row[0])
                for row in con.execute(
                    "SELECT table_name FROM information_schema.tables WHERE table_schema = ?", [schema]
                ).fetchall()
            }
            for name, path in tables.items():
                select = _typed_select(con, Path(path), overrides.get(name, {}))
                if append and name in existing:
                    con.execute(f'INSERT INTO "{schema}"."{name}" BY NAME {select}')
                else:
                    con.execute(f'CREATE OR REPLACE TABLE "{schema}"."{name}" AS {select}')
                row = con.execute(f'SELECT count(*) FROM "{schema}"."{name}"').fetchone()
                counts[name] = int(row[0]) if row else 0
            con.execute("COMMIT")
        except BaseException:
            con.execute("ROLLBACK")
            raise
    return counts


def _check_identifier(name: str) -> None:
    # names are interpolated into SQL, so only plain identifiers are accepted
    if not _IDENTIFIER.match(name):
        raise ValueError(f"not a valid table/schema name: {name!r}")


def _sql_string(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


def _typed_select(con: duckdb.DuckDBPyConnection, path: Path, overrides: Mapping[str, str]) -> str:
    """A SELECT over the CSV with the column types decided by `load_into_duckdb`'s rules."""
    source = _sql_string(str(path))
    detected = con.execute(f"DESCRIBE SELECT * FROM read_csv_auto({source})").fetchall()
    columns = [(str(row[0]), str(row[1])) for row in detected]

    # read as text what must stay text, so DuckDB never strips leading zeros
    text_columns = {
        name: "VARCHAR" for name, _ in columns if name.lower() in TEXT_COLUMNS and name not in overrides
    }
    read_types = {**text_columns, **dict(overrides.items())}
    if read_types:
        struct = ", ".join(f"{_sql_string(k)}: {_sql_string(v)}" for k, v in read_types.items())
        reader = f"read_csv_auto({source}, types = {{{struct}}})"
    else:
        reader = f"read_csv_auto({source})"

    # the id column first: Snowfakery writes it last, but people (and lineage tools) expect it first
    ordered = sorted(columns, key=lambda column: column[0] != "id")
    expressions = [_column_expression(name, kind, overrides) for name, kind in ordered]
    return f"SELECT {', '.join(expressions)} FROM {reader}"


def _column_expression(name: str, detected_type: str, overrides: Mapping[str, str]) -> str:
    # CSV headers are data, not trusted identifiers: escape embedded quotes
    quoted = '"' + name.replace('"', '""') + '"'
    lowered = name.lower()
    if name in overrides or lowered in TEXT_COLUMNS:
        return quoted
    # only numeric-looking columns are cast: an `external_id` full of UUIDs stays text
    numeric = detected_type.upper().split("(")[0] in _NUMERIC_TYPES
    if numeric and (lowered == "id" or lowered.endswith("_id")):
        return f"CAST({quoted} AS {ID_TYPE}) AS {quoted}"
    if numeric and (lowered == "amount" or lowered.endswith("_amount")):
        return f"CAST({quoted} AS {AMOUNT_TYPE}) AS {quoted}"
    if detected_type.upper() in ("TIMESTAMP WITH TIME ZONE", "TIMESTAMPTZ"):
        return f"timezone('UTC', {quoted}) AS {quoted}"
    return quoted
