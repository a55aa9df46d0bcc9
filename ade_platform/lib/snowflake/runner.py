"""What the Snowflake services need from an executor: the `snow` CLI client implements it."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from ade_platform.lib.snowflake.objects import ObjectKind, ObjectName

Row = dict[str, Any]


class SnowRunner(Protocol):
    """Runs statements and object commands on one connection, in a pinned database/schema context.

    Results are lists of row dicts as ``snow ... --format JSON_EXT`` prints them (VARIANT/OBJECT/ARRAY
    values parsed). Failures raise ``CliFailure`` whose ``raw`` text must be scrubbed before display.
    """

    connection: str | None
    database: str | None
    schema: str | None

    def sql(self, query: str) -> list[Row]: ...

    def sql_batch(self, statements: Sequence[str]) -> list[list[Row]]: ...

    def object_list(
        self, kind: ObjectKind, *, database: str | None, schema: str | None, like: str | None
    ) -> list[Row]: ...

    def object_describe(self, name: ObjectName) -> list[Row]: ...

    def pinned(self, database: str | None, schema: str | None) -> SnowRunner: ...

    def withheld(self) -> SnowRunner:
        """The runner for statements whose results are withheld from the caller (DATA): on a transport that
        keeps a session across calls, one that no statement whose rows are returned shares, so a later call
        cannot reach a withheld result through LAST_QUERY_ID / RESULT_SCAN / DESCRIBE RESULT."""
        ...


def resolve_context(runner: SnowRunner) -> SnowRunner:
    """Pin the connection's own database/schema when the settings do not: the guard matches unqualified
    names against this context, so every later call must run in exactly it (one extra statement, once)."""
    if runner.database is not None:
        return runner
    rows = runner.sql("SELECT CURRENT_DATABASE() AS DATABASE_NAME, CURRENT_SCHEMA() AS SCHEMA_NAME")
    row = rows[0] if rows else {}
    database, schema = row.get("DATABASE_NAME"), row.get("SCHEMA_NAME")
    return runner.pinned(str(database) if database else None, str(schema) if schema and database else None)
