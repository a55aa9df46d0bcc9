"""Snowflake through snowflake-connector-python, one authenticated session per snow connection name.

The `snow` CLI transport (cli.py) starts a process and logs in for every statement: seconds
each. This transport reads the same connection definitions the CLI reads (`config.toml` `[connections.*]`
and `connections.toml`, in SNOWFLAKE_HOME or ~/.snowflake, or the configured `config_file`), logs in once
per connection name and keeps that session: a statement then costs one round trip. It implements the same
SnowRunner contract and answers in the shape `snow ... --format JSON_EXT` prints (VARIANT parsed, decimals
that are not whole and dates as text), so the proxy, guardrail and exclusions in front of it are the same.

Credentials stay in the connector: nothing here logs, returns or raises the connection's parameters.
Statements of one session run one at a time (a session has one current database/schema, set with USE when
a runner pinned to another context runs); a closed or expired session is opened again on the next call.

A connection name has two sessions. Statements whose results the proxy withholds (DATA: only the shape is
answered) run on a session of their own (`withheld()`), so no statement whose rows are returned - metadata,
counts, DDL, discovery - ever shares a session with a withheld result: LAST_QUERY_ID(n), for any n, on the
answering session never names one. The guard refuses every statement that reaches an earlier result
(lib/guard: `session_reach`); this is the second wall, for a construct it might not know. It costs no
statement per call, one login per connection name (made on the first DATA statement).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import os
import threading
import tomllib
from collections.abc import Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any

from ade_platform.clients.snowflake.base import SnowContext, check_statement_text, classify_failure
from ade_platform.lib.snowflake.errors import CliFailure
from ade_platform.lib.snowflake.objects import ObjectKind, ObjectName, quote_ident

Row = dict[str, Any]
# Connection keys of the snow configuration that the connector takes as they are.
_CONNECT_KEYS = frozenset(
    {
        "account", "user", "password", "host", "port", "protocol", "region", "database", "schema", "role",
        "warehouse", "authenticator", "token", "token_file_path", "private_key_file", "private_key_file_pwd",
        "passcode", "passcode_in_password", "oauth_client_id", "oauth_client_secret", "login_timeout",
        "network_timeout", "client_session_keep_alive", "ocsp_fail_open", "insecure_mode",
    }
)  # fmt: skip
_VARIANT_TYPES = (5, 9, 10)  # OBJECT, ARRAY, VARIANT: the CLI prints them parsed


def snow_config_dir() -> Path:
    home = os.environ.get("SNOWFLAKE_HOME")
    return Path(home).expanduser() if home else Path.home() / ".snowflake"


def connection_parameters(name: str | None, config_file: str | Path | None = None) -> dict[str, Any]:
    """The named connection as the snow CLI resolves it (default: `default_connection_name`, else
    "default"): `[connections.<name>]` of config.toml, overridden by `[<name>]` of connections.toml."""
    config_path = Path(config_file).expanduser() if config_file else snow_config_dir() / "config.toml"
    config = _read_toml(config_path)
    connections = dict(config.get("connections") or {})
    for key, value in _read_toml(config_path.with_name("connections.toml")).items():
        if isinstance(value, dict):
            connections[key] = {**connections.get(key, {}), **value}
    chosen = name or config.get("default_connection_name") or "default"
    if chosen not in connections:
        raise CliFailure("AUTH_FAILED", f"connection {chosen!r} is not configured in the snow configuration")
    return {k: v for k, v in connections[chosen].items() if k in _CONNECT_KEYS}


def _read_toml(path: Path) -> dict[str, Any]:
    try:
        with path.open("rb") as fh:
            return tomllib.load(fh)
    except FileNotFoundError:
        return {}
    except (OSError, tomllib.TOMLDecodeError):
        raise CliFailure("AUTH_FAILED", f"the snow configuration {path.name} cannot be read") from None


class Session:
    """One logged-in connector session and the context it currently has (guarded by its lock)."""

    def __init__(self, parameters: dict[str, Any], timeout: float):
        self._parameters = parameters
        self.timeout = timeout
        self.lock = threading.Lock()
        self._conn: Any = None
        self._context: tuple[str | None, str | None] = (None, None)

    def execute(self, query: str, database: str | None, schema: str | None) -> list[Row]:
        # A statement waits for the one before it at most the statement timeout: a call never hangs behind a
        # stuck session (the statement itself is cancelled server-side when its own timeout passes).
        if not self.lock.acquire(timeout=self.timeout):
            raise CliFailure(
                "QUERY_TIMEOUT", "the connection's session stayed busy past the configured timeout"
            )
        try:
            conn = self._connected()
            cursor = conn.cursor()
            try:
                if database is not None and self._context != (database, schema):
                    cursor.execute(f"USE DATABASE {quote_ident(database)}")
                    if schema is not None:
                        cursor.execute(f"USE SCHEMA {quote_ident(database)}.{quote_ident(schema)}")
                    self._context = (database, schema)
                cursor.execute(query, timeout=int(max(1, self.timeout)))
                return rows_as_cli_prints(cursor)
            except Exception as exc:
                raise connector_failure(exc) from None
            finally:
                cursor.close()
        finally:
            self.lock.release()

    def close(self) -> None:
        with self.lock:
            conn, self._conn = self._conn, None
            if conn is not None:
                conn.close()

    def _connected(self) -> Any:
        if self._conn is not None and not self._conn.is_closed():
            return self._conn
        import snowflake.connector  # the driver loads on the first statement (start-up speed)

        try:
            self._conn = snowflake.connector.connect(**self._parameters)
        except Exception as exc:
            failure = connector_failure(exc)
            if failure.code == "QUERY_FAILED":
                failure = CliFailure("AUTH_FAILED", failure.raw, failure.sf_code)
            raise failure from None
        current = self._conn.cursor().execute("SELECT CURRENT_DATABASE(), CURRENT_SCHEMA()").fetchone()
        self._context = (current[0], current[1]) if current else (None, None)
        return self._conn


_SESSIONS: dict[tuple[str | None, str], Session] = {}
_SESSIONS_LOCK = threading.Lock()
ANSWERS, WITHHELD = "answers", "withheld"  # what a session's results are for (see the module's docstring)


def session_for(
    connection: str | None,
    config_file: str | None,
    timeout: float,
    overrides: dict[str, str],
    purpose: str = ANSWERS,
) -> Session:
    """The process's session of a connection name for results that are answered, or for results that are
    withheld (role/warehouse overrides are part of its login)."""
    key = (connection, json.dumps([config_file, sorted(overrides.items()), purpose]))
    with _SESSIONS_LOCK:
        if key not in _SESSIONS:
            parameters = {**connection_parameters(connection, config_file), **overrides}
            parameters.setdefault("login_timeout", 30)
            parameters.setdefault("network_timeout", max(30, int(timeout)))
            _SESSIONS[key] = Session(parameters, timeout)
        return _SESSIONS[key]


class SqlRunner:
    """The SnowRunner calls as SQL statements, over a subclass's `_execute` (one statement, rows as the CLI
    prints them) and its `database` context."""

    database: str | None

    def _execute(self, query: str) -> list[Row]:
        raise NotImplementedError

    def sql(self, query: str) -> list[Row]:
        return self._execute(query)

    def sql_batch(self, statements: Sequence[str]) -> list[list[Row]]:
        return [self._execute(s) for s in statements]

    def withheld(self) -> SqlRunner:
        """A runner for statements whose results are not returned (a subclass that keeps a session gives
        them a session of their own)."""
        return self

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


@dataclass(frozen=True)
class SnowConnector(SnowContext, SqlRunner):
    """A SnowRunner on the session of one snow connection name, pinned to a database/schema context."""

    _session: Session | None = field(default=None, compare=False, repr=False)

    def session(self, purpose: str = ANSWERS) -> Session:
        if self._session is not None and purpose == ANSWERS:
            return self._session
        overrides = {k: v for k, v in (("role", self.role), ("warehouse", self.warehouse)) if v}
        return session_for(self.connection, self.config_file, self.timeout, overrides, purpose)

    def pinned(self, database: str | None, schema: str | None) -> SnowConnector:
        return dataclasses.replace(self, database=database, schema=schema, _session=self.session())

    def withheld(self) -> SnowConnector:
        return dataclasses.replace(self, _session=self.session(WITHHELD))

    def _execute(self, query: str) -> list[Row]:
        check_statement_text(query)  # the same refusals as the CLI transport, whatever the transport
        return self.session().execute(query, self.database, self.schema)


def rows_as_cli_prints(cursor: Any) -> list[Row]:
    """A connector cursor's rows as `snow sql --format JSON_EXT` prints them."""
    names = [d.name for d in cursor.description or []]
    types = [d.type_code for d in cursor.description or []]
    return [{n: _cell(v, t) for n, v, t in zip(names, row, types, strict=True)} for row in cursor.fetchall()]


def _cell(value: Any, type_code: int) -> Any:
    """A value as `snow --format JSON_EXT` prints it."""
    if type_code in _VARIANT_TYPES and isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError:
            return value
    if isinstance(value, Decimal):
        whole = value == value.to_integral_value() and value.as_tuple().exponent >= 0  # type: ignore[operator]
        return int(value) if whole else str(value)
    if isinstance(value, (dt.date, dt.datetime, dt.time)):
        return value.isoformat()
    if isinstance(value, bytes):
        return value.hex()
    return value


def connector_failure(exc: Exception) -> CliFailure:
    """A connector error as the CLI transport reports it (code, raw text to scrub, Snowflake number)."""
    if isinstance(exc, CliFailure):
        return exc
    import snowflake.connector  # loaded already: only a connector call fails with its errors

    if isinstance(exc, snowflake.connector.errors.Error):
        message = str(exc.msg or "")
        if not message[:6].isdigit():
            message = f"{(exc.errno or 0):06d} ({exc.sqlstate}): {message}"
        if "timeout" in message.lower() and "cancel" in message.lower():
            return CliFailure(
                "QUERY_TIMEOUT", "the statement exceeded the configured timeout and was cancelled"
            )
        code, sf_code = classify_failure(message)
        return CliFailure(code, message, sf_code)
    return CliFailure("QUERY_FAILED", type(exc).__name__)
