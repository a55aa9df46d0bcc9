"""BigQuery through google-cloud-bigquery's REST client (tested against tests/fakes/bigquery.py).

REST calls used: jobs.query (+ jobs.get / jobs.getQueryResults when a result spans pages), jobs.insert
with dryRun (explain, bytes estimate), datasets.list, tables.get, and queries over INFORMATION_SCHEMA
(COLUMNS/TABLES for snapshots, JOBS for query history). `api_endpoint` points the client at an emulator
or fake; with no credentials file it then uses anonymous credentials.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

from ade_platform.clients.warehouses.base import (
    QueryResult,
    ResolvedTable,
    ServiceWarehouseClient,
    WarehouseError,
    described_table,
    history_row,
    jsonable,
    safe_message,
    unique_columns,
)
from ade_platform.lib.warehouse.schema import ColumnRow

_URL_PREFIX = re.compile(r"^[A-Z]+ https?://\S+: ")
_NAME = re.compile(r"^[A-Za-z0-9_.:-]+$")  # project and dataset ids, safe inside backquotes
_COLUMNS_SQL = """
select c.table_catalog, c.table_schema, c.table_name, t.table_type, c.column_name, c.data_type,
       c.is_nullable, c.ordinal_position, c.column_default
from `{project}.{dataset}`.INFORMATION_SCHEMA.COLUMNS as c
join `{project}.{dataset}`.INFORMATION_SCHEMA.TABLES as t
  on t.table_name = c.table_name
order by c.table_name, c.ordinal_position
"""
_HISTORY_SQL = """
select job_id, query, user_email, start_time, end_time,
       timestamp_diff(end_time, start_time, millisecond) as duration_ms,
       total_bytes_processed, state, error_result.reason as error_reason
from `region-{location}`.INFORMATION_SCHEMA.JOBS
where creation_time >= timestamp_sub(current_timestamp(), interval @days day)
  and job_type = 'QUERY'
  and query like @pattern
order by creation_time desc
limit @max_rows
"""


def _column_row(r: dict[str, Any]) -> ColumnRow:
    """One row of _COLUMNS_SQL as a ColumnRow."""
    return ColumnRow(
        r["table_catalog"], r["table_schema"], r["table_name"], r["table_type"], r["column_name"],
        r["data_type"], r["is_nullable"] == "YES", r["ordinal_position"], r.get("column_default"),
    )  # fmt: skip


class BigQueryClient(ServiceWarehouseClient):
    type = "bigquery"

    def __init__(self, name: str, settings: Any, timeout: float = 60):
        super().__init__(name, settings, timeout)

    @property
    def schemas(self) -> Sequence[str]:
        return tuple(self.settings.datasets)

    @property
    def location(self) -> str:
        return (self.settings.location or "US").lower()

    def client(self) -> Any:
        with self._lock:
            if self._handle is None:
                from google.cloud import bigquery

                options: dict[str, Any] = {}
                credentials = None
                if self.settings.api_endpoint:
                    options["client_options"] = {"api_endpoint": self.settings.api_endpoint}
                if self.settings.credentials_path:
                    from google.oauth2 import service_account

                    credentials = service_account.Credentials.from_service_account_file(
                        str(self.settings.credentials_path)
                    )
                elif self.settings.api_endpoint:
                    from google.auth.credentials import AnonymousCredentials

                    credentials = AnonymousCredentials()
                try:
                    self._handle = bigquery.Client(
                        project=self.settings.project,
                        credentials=credentials,
                        location=self.settings.location,
                        **options,
                    )
                except Exception:
                    raise WarehouseError(
                        "connection_failed", f"cannot create a BigQuery client for warehouse '{self.name}'"
                    ) from None
            return self._handle

    def _retry(self) -> Any:
        from google.cloud.bigquery.retry import DEFAULT_RETRY

        return DEFAULT_RETRY.with_deadline(max(1.0, self.timeout))

    def _error(self, exc: Exception, sql: str | None = None) -> WarehouseError:
        from google.api_core import exceptions as gexc

        if isinstance(exc, WarehouseError):
            return exc
        if isinstance(exc, (gexc.Unauthorized, gexc.Forbidden)):
            return WarehouseError("auth_failed", f"BigQuery refused the request of warehouse '{self.name}'")
        if isinstance(exc, (gexc.DeadlineExceeded, TimeoutError)) or type(exc).__name__ in (
            "Timeout",
            "ReadTimeout",
        ):
            return WarehouseError("query_timeout", f"the query exceeded {self.timeout:g}s")
        if isinstance(exc, gexc.GoogleAPICallError):
            errors = getattr(exc, "errors", None) or []
            message = (
                errors[0].get("message") if errors and isinstance(errors[0], dict) else None
            ) or _URL_PREFIX.sub("", getattr(exc, "message", None) or str(exc))
            return WarehouseError("query_failed", f"BigQuery error {exc.code}: {safe_message(message, sql)}")
        if type(exc).__name__ in ("ConnectionError", "RetryError", "TransportError"):
            return WarehouseError("connection_failed", f"cannot reach BigQuery for warehouse '{self.name}'")
        return WarehouseError("query_failed", f"BigQuery request failed ({type(exc).__name__})")

    def _job_config(self, params: dict[str, Any] | None = None, dry_run: bool = False) -> Any:
        from google.cloud import bigquery

        query_params = []
        for key, value in (params or {}).items():
            kind = "INT64" if isinstance(value, int) and not isinstance(value, bool) else "STRING"
            query_params.append(bigquery.ScalarQueryParameter(key, kind, value))
        return bigquery.QueryJobConfig(
            query_parameters=query_params,
            use_legacy_sql=False,
            dry_run=dry_run,
            use_query_cache=not dry_run,
            job_timeout_ms=int(self.timeout * 1000),
        )

    def query(
        self, sql: str, *, max_rows: int | None = None, params: dict[str, Any] | None = None
    ) -> QueryResult:
        try:
            rows = self.client().query_and_wait(
                sql,
                job_config=self._job_config(params),
                api_timeout=self.timeout,
                wait_timeout=self.timeout,
                retry=self._retry(),
                max_results=max_rows,
            )
            columns = [f.name for f in rows.schema]
            data = [tuple(row.values()) for row in rows]
        except Exception as exc:
            raise self._error(exc, sql) from None
        names = unique_columns(columns)
        return QueryResult(
            names,
            [dict(zip(names, map(jsonable, row), strict=False)) for row in data],
            bytes_processed=int(rows.total_bytes_processed)
            if rows.total_bytes_processed is not None
            else None,
            query_id=rows.job_id or rows.query_id,
        )

    def dry_run(self, sql: str) -> Any:
        try:
            return self.client().query(
                sql, job_config=self._job_config(dry_run=True), retry=self._retry(), timeout=self.timeout
            )
        except Exception as exc:
            raise self._error(exc, sql) from None

    def explain(self, sql: str) -> dict[str, Any]:
        job = self.dry_run(sql)
        plan = {
            "statementType": job.statement_type,
            "totalBytesProcessed": job.total_bytes_processed,
            "referencedTables": [t.to_api_repr() for t in job.referenced_tables or []],
            "schema": [{"name": f.name, "type": f.field_type, "mode": f.mode} for f in job.schema or []],
        }
        return {
            "plan_text": json.dumps(plan, indent=2),
            "estimated_bytes_scanned": int(job.total_bytes_processed)
            if job.total_bytes_processed is not None
            else None,
            "estimated_cost_credits": None,
            "notes": "BigQuery dry run (jobs.insert with dryRun): bytes the query would process, not run.",
        }

    def query_history(self, pattern: str, lookback_days: int, limit: int) -> list[dict[str, Any]]:
        sql = _HISTORY_SQL.format(location=self.location)
        result = self.query(
            sql, params={"days": int(lookback_days), "pattern": pattern, "max_rows": int(limit)}
        )
        entries = []
        for row in result.rows:
            state = row.get("state")
            status = (
                "RUNNING"
                if state in ("RUNNING", "PENDING")
                else ("FAILED" if row.get("error_reason") else "SUCCESS")
            )
            entries.append(
                history_row(
                    query_id=row.get("job_id"), text=row.get("query"), user=row.get("user_email"),
                    start=row.get("start_time"), end=row.get("end_time"), duration_ms=row.get("duration_ms"),
                    bytes_scanned=row.get("total_bytes_processed"), rows_produced=None, status=status,
                    dialect="bigquery",
                )
            )  # fmt: skip
        return entries

    def _datasets(self) -> list[str]:
        if self.settings.datasets:
            return list(self.settings.datasets)
        try:
            return [
                d.dataset_id for d in self.client().list_datasets(retry=self._retry(), timeout=self.timeout)
            ]
        except Exception as exc:
            raise self._error(exc) from None

    def column_rows(self) -> list[ColumnRow]:
        rows: list[ColumnRow] = []
        project = self.settings.project
        for dataset in self._datasets():
            result = self.query(_COLUMNS_SQL.format(project=project, dataset=dataset))
            rows.extend(_column_row(r) for r in result.rows)
        return rows

    def _qualified(self, parts: Sequence[str]) -> tuple[Sequence[str], str, str, str]:
        """A table name as given (a lone table needs exactly one configured dataset) -> (parts, project,
        dataset, table)."""
        if len(parts) == 1:
            datasets = self.settings.datasets
            if len(datasets) != 1:
                raise WarehouseError("invalid_argument", "qualify the table with its dataset: dataset.table")
            parts = (datasets[0], parts[0])
        project, dataset, table = (self.settings.project, *parts) if len(parts) == 2 else tuple(parts)
        return parts, project, dataset, table

    def describe_table(self, parts: Sequence[str]) -> dict[str, Any]:
        # The same INFORMATION_SCHEMA view the snapshots read (tables.get spells types the legacy way).
        parts, project, dataset, table = self._qualified(parts)
        if not all(_NAME.match(p) for p in (project, dataset)):
            raise WarehouseError("invalid_argument", f"{'.'.join(parts)!r} is not a BigQuery table name")
        sql = _COLUMNS_SQL.format(project=project, dataset=dataset).replace(
            "order by", "where lower(c.table_name) = lower(@t)\norder by"
        )
        result = self.query(sql, params={"t": table})
        return described_table([_column_row(r) for r in result.rows], parts, self.name)

    def resolve_table(self, parts: Sequence[str]) -> ResolvedTable:
        from google.api_core import exceptions as gexc

        parts, project, dataset, table = self._qualified(parts)
        try:
            found = self.client().get_table(
                f"{project}.{dataset}.{table}", retry=self._retry(), timeout=self.timeout
            )
        except gexc.NotFound:
            raise WarehouseError(
                "table_not_found", f"no table {'.'.join(parts)!r} in warehouse '{self.name}'"
            ) from None
        except Exception as exc:
            raise self._error(exc) from None
        columns = [
            {"name": f.name, "type": f.field_type, "nullable": f.mode != "REQUIRED", "position": i}
            for i, f in enumerate(found.schema, start=1)
        ]
        return ResolvedTable(parts=(found.project, found.dataset_id, found.table_id), columns=columns)
