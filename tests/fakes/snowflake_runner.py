"""SnowRunner doubles for the snowflake tests.

- `ScriptedRunner`: answers from a function of the SQL text (unit tests of the proxy and services).
- `ConnectorRunner`: the same fakesnow server the real `snow` CLI talks to, through snowflake-connector
  in-process, printing rows the way `snow ... --format JSON_EXT` does (VARIANT parsed, decimals and dates
  as strings). It lets the adversarial corpus run in full without a CLI start-up per statement; a
  representative subset of the corpus goes through the real CLI as well.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from ade_platform.clients.snow_cli import check_statement_text, classify_failure
from ade_platform.lib.snowflake.errors import CliFailure
from ade_platform.lib.snowflake.objects import ObjectKind, ObjectName, quote_ident

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


def _cell(value: Any, type_code: int) -> Any:
    if type_code in (5, 9, 10) and isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError:
            return value
    if isinstance(value, Decimal):
        return (
            int(value)
            if value == value.to_integral_value() and value.as_tuple().exponent >= 0
            else str(value)
        )
    if isinstance(value, (dt.date, dt.datetime, dt.time)):
        return value.isoformat()
    if isinstance(value, bytes):
        return value.hex()
    return value


@dataclass
class ConnectorRunner:
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
                message = str(exc.msg or "")
                if not message[:6].isdigit():
                    message = f"{(exc.errno or 0):06d} ({exc.sqlstate}): {message}"
                code, sf_code = classify_failure(message)
                raise CliFailure(code, message, sf_code) from None
            names = [d.name for d in cur.description or []]
            types = [d.type_code for d in cur.description or []]
            return [
                {n: _cell(v, t) for n, v, t in zip(names, row, types, strict=True)} for row in cur.fetchall()
            ]
        finally:
            conn.close()

    def sql(self, query: str) -> list[Row]:
        return self._execute(query)

    def sql_batch(self, statements: Sequence[str]) -> list[list[Row]]:
        return [self._execute(s) for s in statements]

    def object_list(
        self, kind: ObjectKind, *, database: str | None, schema: str | None, like: str | None
    ) -> list[Row]:
        sql = f"SHOW {kind.plural}"
        if like:
            sql += " LIKE '" + like.replace("'", "''") + "'"
        if schema:
            sql += f" IN SCHEMA {quote_ident(database or self.database or '')}.{quote_ident(schema)}"
        elif database:
            sql += f" IN DATABASE {quote_ident(database)}"
        return self._execute(sql)

    def object_describe(self, name: ObjectName) -> list[Row]:
        return self._execute(f"DESCRIBE {name.kind.sql} {name.fqn}")

    def pinned(self, database: str | None, schema: str | None) -> ConnectorRunner:
        return dataclasses.replace(self, database=database, schema=schema)


class NullLiveRunner:
    """A LiveRunner stand-in that runs the call without recording a Dagster run (corpus-sized tests)."""

    def run(self, tool: str, fn: Callable[[], Any], **_: Any) -> Any:
        from ade_platform.live import LiveResult

        return LiveResult(run_id="not-recorded", value=fn(), elapsed_ms=0.0)
