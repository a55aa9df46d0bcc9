"""An HTTP-level fake of the BigQuery REST API (v2), served on loopback, backed by in-memory DuckDB.

Written from Google's published REST reference (https://cloud.google.com/bigquery/docs/reference/rest),
covering the calls ADE Platform makes:
    POST /bigquery/v2/projects/{p}/queries                       jobs.query
    GET  /bigquery/v2/projects/{p}/queries/{jobId}               jobs.getQueryResults
    POST /bigquery/v2/projects/{p}/jobs                          jobs.insert (query jobs, dryRun)
    GET  /bigquery/v2/projects/{p}/jobs/{jobId}                  jobs.get
    POST /bigquery/v2/projects/{p}/jobs/{jobId}/cancel           jobs.cancel
    GET  /bigquery/v2/projects/{p}/datasets[/{d}]                datasets.list / datasets.get
    GET  /bigquery/v2/projects/{p}/datasets/{d}/tables[/{t}]     tables.list / tables.get
GoogleSQL is transpiled to DuckDB with sqlglot. Datasets are DuckDB schemas. `{p}.{d}.INFORMATION_SCHEMA`
COLUMNS/TABLES and `region-*.INFORMATION_SCHEMA.JOBS` are views over DuckDB's catalog and the fake's own
job log. Bytes processed are a deterministic estimate (rows x columns x 8 of every table referenced).

    with FakeBigQuery(project="demo-project") as fake:
        fake.sql("create schema shop; create table shop.orders (id bigint)")
        client = bigquery.Client(project=fake.project, credentials=AnonymousCredentials(),
                                 client_options={"api_endpoint": fake.url})
"""

from __future__ import annotations

import base64
import json
import threading
import time
import uuid
from datetime import UTC, date, datetime
from datetime import time as dtime
from decimal import Decimal
from typing import Any

import duckdb
import sqlglot
from sqlglot import exp

from tests.fakes.bigquery_http import ApiError, serve

USER_EMAIL = "fake-user@example.com"
_META = "bq_meta"
_INTERNAL_SCHEMAS = ("information_schema", "pg_catalog", "main", _META)
# DuckDB type -> (REST TableFieldSchema.type, GoogleSQL name in INFORMATION_SCHEMA)
_TYPES = {
    "BOOLEAN": ("BOOLEAN", "BOOL"),
    "TINYINT": ("INTEGER", "INT64"), "SMALLINT": ("INTEGER", "INT64"), "INTEGER": ("INTEGER", "INT64"),
    "BIGINT": ("INTEGER", "INT64"), "HUGEINT": ("INTEGER", "INT64"), "UBIGINT": ("INTEGER", "INT64"),
    "UINTEGER": ("INTEGER", "INT64"), "USMALLINT": ("INTEGER", "INT64"), "UTINYINT": ("INTEGER", "INT64"),
    "FLOAT": ("FLOAT", "FLOAT64"), "DOUBLE": ("FLOAT", "FLOAT64"),
    "VARCHAR": ("STRING", "STRING"), "BLOB": ("BYTES", "BYTES"), "UUID": ("STRING", "STRING"),
    "DATE": ("DATE", "DATE"), "TIME": ("TIME", "TIME"), "TIMESTAMP": ("DATETIME", "DATETIME"),
    "TIMESTAMP WITH TIME ZONE": ("TIMESTAMP", "TIMESTAMP"), "JSON": ("JSON", "JSON"),
    "INTERVAL": ("INTERVAL", "INTERVAL"),
}  # fmt: skip
_STATEMENT_TYPES = {
    exp.Select: "SELECT", exp.Union: "SELECT", exp.Insert: "INSERT", exp.Update: "UPDATE",
    exp.Delete: "DELETE", exp.Merge: "MERGE", exp.Create: "CREATE_TABLE", exp.Drop: "DROP_TABLE",
}  # fmt: skip


def bq_type(duckdb_type: str) -> tuple[str, str]:
    """(REST field type, GoogleSQL type name) of a DuckDB column type."""
    text = duckdb_type.upper()
    if text.startswith("DECIMAL"):
        return "NUMERIC", "NUMERIC"
    if text.startswith("STRUCT"):
        return "RECORD", "STRUCT"
    if text.endswith("[]"):
        return bq_type(text[:-2])[0], f"ARRAY<{bq_type(text[:-2])[1]}>"
    return _TYPES.get(text, ("STRING", "STRING"))


def _ms(moment: datetime) -> str:
    return str(int(moment.timestamp() * 1000))


def _encode(value: Any, field_type: str, int64_timestamps: bool) -> Any:
    """A cell as the REST API encodes it: strings for scalars, {"f": [...]} for records."""
    if value is None:
        return None
    if isinstance(value, list):
        return [{"v": _encode(v, field_type, int64_timestamps)} for v in value]
    if field_type == "BOOLEAN":
        return "true" if value else "false"
    if field_type == "TIMESTAMP":
        moment = value if value.tzinfo else value.replace(tzinfo=UTC)
        micros = int(moment.timestamp() * 1_000_000)
        return str(micros) if int64_timestamps else f"{micros / 1_000_000:.6E}"
    if field_type == "DATETIME":
        return value.isoformat(timespec="microseconds" if value.microsecond else "seconds")
    if isinstance(value, (date, dtime)):
        return value.isoformat()
    if isinstance(value, (bytes, bytearray)):
        return base64.b64encode(bytes(value)).decode()
    if isinstance(value, dict):
        return {"f": [{"v": _encode(v, "STRING", int64_timestamps)} for v in value.values()]}
    if isinstance(value, (Decimal, float, int)):
        return str(value)
    if field_type == "JSON" and not isinstance(value, str):
        return json.dumps(value)
    return str(value)


class FakeBigQuery:
    """The fake server. Use as a context manager, or call start()/stop()."""

    def __init__(self, project: str = "test-project", location: str = "US"):
        self.project = project
        self.location = location
        self.db = duckdb.connect()
        self.lock = threading.RLock()
        self.jobs: dict[str, dict[str, Any]] = {}
        self.requests: list[tuple[str, str]] = []  # (method, path): what clients called
        self.db.execute(f"create schema {_META}")
        self.db.execute(
            f"""create table {_META}.jobs (project_id varchar, job_id varchar, job_type varchar, statement_type varchar,
                query varchar, user_email varchar, creation_time timestamptz, start_time timestamptz,
                end_time timestamptz, state varchar, total_bytes_processed bigint, total_bytes_billed bigint,
                error_result struct(reason varchar, message varchar))"""
        )
        self.install_functions()
        self._server: Any = None
        self.url = ""

    # -- seeding ------------------------------------------------------------------------------------
    def sql(self, statements: str) -> None:
        """Run DuckDB SQL directly (create datasets as schemas, tables, rows)."""
        with self.lock:
            self.db.execute(statements)

    def add_job(self, query: str, *, user_email: str = USER_EMAIL, hours_ago: float = 1.0, seconds: float = 2.0,
                bytes_processed: int = 1024, error: str | None = None) -> str:  # fmt: skip
        """Record a past query job, as if someone had run it (for INFORMATION_SCHEMA.JOBS)."""
        job_id = f"job_{uuid.uuid4().hex[:16]}"
        start = datetime.now(UTC).timestamp() - hours_ago * 3600
        with self.lock:
            self.db.execute(
                f"insert into {_META}.jobs values (?, ?, 'QUERY', 'SELECT', ?, ?, to_timestamp(?), to_timestamp(?),"
                " to_timestamp(?), 'DONE', ?, ?, ?)",
                [self.project, job_id, query, user_email, start, start, start + seconds, bytes_processed,
                 bytes_processed, {"reason": error, "message": error} if error else None],
            )  # fmt: skip
        return job_id

    # -- lifecycle ----------------------------------------------------------------------------------
    def start(self) -> str:
        self._server, self.url = serve(self)
        return self.url

    def stop(self) -> None:
        if self._server is not None:
            self._server.stop()
            self._server = None

    def __enter__(self) -> FakeBigQuery:
        self.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    # -- catalog ------------------------------------------------------------------------------------
    def datasets(self) -> list[str]:
        with self.lock:
            rows = self.db.execute(
                "select schema_name from information_schema.schemata order by 1"
            ).fetchall()
        return [r[0] for r in rows if r[0].lower() not in _INTERNAL_SCHEMAS]

    def tables(self, dataset: str) -> list[tuple[str, str]]:
        self._require_dataset(dataset)
        with self.lock:
            rows = self.db.execute(
                "select table_name, table_type from information_schema.tables where table_schema = ? order by 1",
                [dataset],
            ).fetchall()
        return [(name, "VIEW" if "VIEW" in ttype else "TABLE") for name, ttype in rows]

    def table_schema(self, dataset: str, table: str) -> tuple[list[dict[str, Any]], str, int]:
        self._require_dataset(dataset)
        with self.lock:
            cols = self.db.execute(
                "select column_name, data_type, is_nullable from information_schema.columns "
                "where table_schema = ? and table_name = ? order by ordinal_position",
                [dataset, table],
            ).fetchall()
            kind = self.db.execute(
                "select table_type from information_schema.tables where table_schema = ? and table_name = ?",
                [dataset, table],
            ).fetchone()
            if not cols or kind is None:
                raise ApiError(404, "notFound", f"Not found: Table {self.project}:{dataset}.{table}")
            count = self.db.execute(f'select count(*) from "{dataset}"."{table}"').fetchone()[0]
        fields = [
            {"name": name, "type": bq_type(dtype)[0], "mode": "NULLABLE" if nullable == "YES" else "REQUIRED"}
            for name, dtype, nullable in cols
        ]
        return fields, ("VIEW" if "VIEW" in kind[0] else "TABLE"), int(count)

    def _require_dataset(self, dataset: str) -> None:
        if dataset not in self.datasets():
            raise ApiError(404, "notFound", f"Not found: Dataset {self.project}:{dataset}")

    # -- queries ------------------------------------------------------------------------------------
    def translate(self, query: str) -> tuple[str, str, list[tuple[str, str]]]:
        """(DuckDB SQL, statement type, referenced (dataset, table)) of a GoogleSQL statement."""
        try:
            tree = sqlglot.parse_one(query, read="bigquery")
        except sqlglot.errors.ParseError as exc:
            raise ApiError(400, "invalidQuery", f"Syntax error: {str(exc).splitlines()[0]}") from None
        statement = next(
            (name for kind, name in _STATEMENT_TYPES.items() if isinstance(tree, kind)), "SCRIPT"
        )
        referenced: list[tuple[str, str]] = []
        for table in list(tree.find_all(exp.Table)):
            name = table.name
            alias = table.alias or name.split(".")[-1]
            if name.upper().startswith("INFORMATION_SCHEMA."):
                view = name.split(".", 1)[1].lower()
                if view in ("jobs", "jobs_by_project", "jobs_by_user"):
                    replacement = exp.to_table(f"{_META}.jobs").as_(alias)
                elif view in ("columns", "tables"):
                    dataset = table.db
                    inner = self._info_schema_sql(view, dataset)
                    replacement = sqlglot.parse_one(f"({inner}) as {alias}", read="duckdb")
                else:
                    raise ApiError(
                        400,
                        "invalidQuery",
                        f"Table INFORMATION_SCHEMA.{view.upper()} is not supported by the fake",
                    )
                table.replace(replacement)
                continue
            if table.args.get("catalog") is not None:
                table.set("catalog", None)
            if table.db:
                referenced.append((table.db, name))
        return tree.sql(dialect="duckdb"), statement, referenced

    def _info_schema_sql(self, view: str, dataset: str) -> str:
        quoted = dataset.replace("'", "''")
        if view == "tables":
            return (
                f"select '{self.project}' as table_catalog, table_schema, table_name, "
                "case when table_type like '%VIEW%' then 'VIEW' else 'BASE TABLE' end as table_type "
                f"from information_schema.tables where table_schema = '{quoted}'"
            )
        return (
            f"select '{self.project}' as table_catalog, table_schema, table_name, column_name, ordinal_position, "
            f"is_nullable, {_META}.bq_type_name(data_type) as data_type, column_default "
            f"from information_schema.columns where table_schema = '{quoted}'"
        )

    def estimate_bytes(self, referenced: list[tuple[str, str]]) -> int:
        total = 0
        for dataset, table in referenced:
            try:
                fields, _, rows = self.table_schema(dataset, table)
            except ApiError:
                continue
            total += rows * len(fields) * 8
        return total

    def run_query(
        self, query: str, params: list[dict[str, Any]], dry_run: bool = False, job_id: str | None = None
    ) -> dict[str, Any]:
        """Run (or dry-run) a statement; returns the job record the REST handlers answer from."""
        sql, statement, referenced = self.translate(query)
        values = {p["name"]: _param_value(p) for p in params or []}
        job_id = job_id or f"job_{uuid.uuid4().hex[:20]}"
        created = datetime.now(UTC)
        record: dict[str, Any] = {
            "job_id": job_id, "query": query, "statement_type": statement, "created": created,
            "bytes": self.estimate_bytes(referenced), "referenced": referenced, "dry_run": dry_run,
            "fields": [], "rows": [], "error": None,
        }  # fmt: skip
        with self.lock:
            try:
                if dry_run:
                    described = (
                        self.db.execute(f"describe {sql}", values or None).fetchall()
                        if statement == "SELECT"
                        else []
                    )
                    record["fields"] = [
                        {"name": r[0], "type": bq_type(r[1])[0], "mode": "NULLABLE"} for r in described
                    ]
                else:
                    cursor = self.db.execute(sql, values or None)
                    if cursor.description:
                        record["fields"] = [
                            {"name": d[0], "type": bq_type(str(d[1]))[0], "mode": "NULLABLE"}
                            for d in cursor.description
                        ]
                        record["rows"] = cursor.fetchall()
            except duckdb.CatalogException as exc:
                record["error"] = ("notFound", f"Not found: {str(exc).splitlines()[0]}", 404)
            except duckdb.Error as exc:
                record["error"] = ("invalidQuery", str(exc).splitlines()[0], 400)
            record["ended"] = datetime.now(UTC)
            self.jobs[job_id] = record
            if not dry_run:
                error = record["error"]
                self.db.execute(
                    f"insert into {_META}.jobs values (?, ?, 'QUERY', ?, ?, ?, ?, ?, ?, 'DONE', ?, ?, ?)",
                    [self.project, job_id, statement, query, USER_EMAIL, created, created, record["ended"],
                     record["bytes"], record["bytes"], {"reason": error[0], "message": error[1]} if error else None],
                )  # fmt: skip
        return record

    def install_functions(self) -> None:
        cases = " ".join(f"when '{k}' then '{v[1]}'" for k, v in _TYPES.items())
        self.db.execute(
            f"create or replace macro {_META}.bq_type_name(t) as case "
            f"when upper(t) like 'DECIMAL%' then 'NUMERIC' when upper(t) like '%[]' then 'ARRAY' "
            f"else (case upper(t) {cases} else 'STRING' end) end"
        )


def _param_value(param: dict[str, Any]) -> Any:
    kind = (param.get("parameterType") or {}).get("type", "STRING")
    raw = (param.get("parameterValue") or {}).get("value")
    if raw is None:
        return None
    if kind in ("INT64", "INTEGER"):
        return int(raw)
    if kind in ("FLOAT64", "FLOAT"):
        return float(raw)
    if kind in ("BOOL", "BOOLEAN"):
        return str(raw).lower() == "true"
    return raw


def encode_rows(
    record: dict[str, Any], start: int, count: int | None, int64_timestamps: bool
) -> list[dict[str, Any]]:
    fields = record["fields"]
    rows = record["rows"][start : None if count is None else start + count]
    return [
        {"f": [{"v": _encode(v, f["type"], int64_timestamps)} for v, f in zip(row, fields, strict=False)]}
        for row in rows
    ]


def job_resource(fake: FakeBigQuery, record: dict[str, Any]) -> dict[str, Any]:
    """The Job resource (jobs.insert / jobs.get) of a query job."""
    stats = {
        "creationTime": _ms(record["created"]),
        "startTime": _ms(record["created"]),
        "endTime": _ms(record["ended"]),
        "totalBytesProcessed": str(record["bytes"]),
        "query": {
            "totalBytesProcessed": str(record["bytes"]),
            "totalBytesBilled": "0" if record["dry_run"] else str(record["bytes"]),
            "statementType": record["statement_type"],
            "cacheHit": False,
            "schema": {"fields": record["fields"]},
            "referencedTables": [
                {"projectId": fake.project, "datasetId": d, "tableId": t} for d, t in record["referenced"]
            ],
        },
    }
    status: dict[str, Any] = {"state": "DONE"}
    if record["error"]:
        reason, message, _ = record["error"]
        status["errorResult"] = {"reason": reason, "message": message, "location": "query"}
        status["errors"] = [status["errorResult"]]
    return {
        "kind": "bigquery#job",
        "etag": uuid.uuid4().hex[:12],
        "id": f"{fake.project}:{fake.location}.{record['job_id']}",
        "jobReference": {"projectId": fake.project, "jobId": record["job_id"], "location": fake.location},
        "configuration": {
            "jobType": "QUERY",
            "dryRun": record["dry_run"],
            "query": {"query": record["query"], "useLegacySql": False},
        },
        "status": status,
        "statistics": stats,
        "user_email": USER_EMAIL,
    }


def now_ms() -> str:
    return str(int(time.time() * 1000))
