"""SnowRunner doubles for the snowflake tests.

- `ScriptedRunner`: answers from a function of the SQL text (unit tests of the proxy and services).
- `ConnectorRunner`: the same fakesnow server the real `snow` CLI talks to, through snowflake-connector
  in-process, printing rows the way `snow ... --format JSON_EXT` does (VARIANT parsed, decimals and dates
  as strings). It lets the adversarial corpus run in full without a CLI start-up per statement; a
  representative subset of the corpus goes through the real CLI as well.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ade_platform.clients.snow_cli import check_statement_text
from ade_platform.clients.snow_connector import SqlRunner, connector_failure, rows_as_cli_prints
from ade_platform.lib.snowflake.objects import ObjectKind, ObjectName

Row = dict[str, Any]


@dataclass
class ScriptedRunner:
    answer: Callable[[str], list[Row]]
    connection: str | None = "test"
    database: str | None = "DB"
    schema: str | None = "APP"
    log: list[str] = field(default_factory=list)

    def sql(self, query: str) -> list[Row]:
        self.log.append(query)
        return self.answer(query)

    def sql_batch(self, statements: Sequence[str]) -> list[list[Row]]:
        return [self.sql(s) for s in statements]

    def object_list(
        self, kind: ObjectKind, *, database: str | None, schema: str | None, like: str | None
    ) -> list[Row]:
        return self.sql(f"SHOW {kind.plural}")

    def object_describe(self, name: ObjectName) -> list[Row]:
        return self.sql(f"DESCRIBE {name.kind.sql} {name.fqn}")

    def pinned(self, database: str | None, schema: str | None) -> ScriptedRunner:
        return dataclasses.replace(self, database=database, schema=schema)

    def withheld(self) -> ScriptedRunner:
        return self


@dataclass
class ConnectorRunner(SqlRunner):
    port: int
    connection: str | None = "ade_fake"
    database: str | None = None
    schema: str | None = None

    def _execute(self, query: str) -> list[Row]:
        import snowflake.connector

        check_statement_text(query)
        conn = snowflake.connector.connect(
            user="fake",
            password="snow",
            account="fakesnow",
            host="127.0.0.1",
            port=self.port,
            protocol="http",
            database=self.database,
            schema=self.schema,
            network_timeout=8,
            login_timeout=20,
        )
        try:
            cur = conn.cursor()
            try:
                cur.execute(query)
            except snowflake.connector.errors.Error as exc:
                raise connector_failure(exc) from None
            return rows_as_cli_prints(cur)
        finally:
            conn.close()

    def pinned(self, database: str | None, schema: str | None) -> ConnectorRunner:
        return dataclasses.replace(self, database=database, schema=schema)


class NullLiveRunner:
    """A LiveRunner stand-in that runs the call without recording a Dagster run (corpus-sized tests)."""

    def run(self, tool: str, fn: Callable[[], Any], **_: Any) -> Any:
        from ade_platform.live import LiveResult

        return LiveResult(run_id="not-recorded", value=fn(), elapsed_ms=0.0)
