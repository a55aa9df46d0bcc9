"""The REST surface of the BigQuery fake (tests/fakes/bigquery.py): Starlette routes served by uvicorn on
loopback, response shapes and error bodies as Google's REST reference documents them."""

from __future__ import annotations

import socket
import threading
import time
import uuid
from typing import TYPE_CHECKING, Any

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

if TYPE_CHECKING:
    from tests.fakes.bigquery import FakeBigQuery

_STATUS = {
    400: "INVALID_ARGUMENT",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    409: "ALREADY_EXISTS",
    500: "INTERNAL",
}


class ApiError(Exception):
    """An error answer: {"error": {"code", "message", "errors": [{"reason", "message", "domain"}], "status"}}."""

    def __init__(self, status: int, reason: str, message: str):
        self.status = status
        self.reason = reason
        self.message = message
        super().__init__(message)

    def response(self) -> JSONResponse:
        body = {
            "error": {
                "code": self.status,
                "message": self.message,
                "errors": [{"message": self.message, "domain": "global", "reason": self.reason}],
                "status": _STATUS.get(self.status, "UNKNOWN"),
            }
        }
        return JSONResponse(body, status_code=self.status)


def build_app(fake: FakeBigQuery) -> Starlette:
    from tests.fakes import bigquery as model

    def project_of(request: Request) -> str:
        project = request.path_params["project"]
        if project != fake.project:
            raise ApiError(404, "notFound", f"Not found: Project {project}")
        return project

    def handler(fn: Any) -> Any:
        async def endpoint(request: Request) -> JSONResponse:
            fake.requests.append((request.method, request.url.path))
            try:
                project_of(request)
                body = await request.json() if request.method == "POST" and await request.body() else {}
                return JSONResponse(await run_in_threadpool(fn, request, body))
            except ApiError as err:
                return err.response()

        return endpoint

    def query_response(
        record: dict[str, Any], max_results: int | None, start: int, int64: bool
    ) -> dict[str, Any]:
        total = len(record["rows"])
        rows = model.encode_rows(record, start, max_results, int64)
        body: dict[str, Any] = {
            "schema": {"fields": record["fields"]},
            "jobReference": {"projectId": fake.project, "jobId": record["job_id"], "location": fake.location},
            "totalRows": str(total),
            "rows": rows,
            "totalBytesProcessed": str(record["bytes"]),
            "jobComplete": True,
            "cacheHit": False,
            "location": fake.location,
        }
        if start + len(rows) < total:
            body["pageToken"] = str(start + len(rows))
        if record["statement_type"] in ("INSERT", "UPDATE", "DELETE", "MERGE"):
            body["numDmlAffectedRows"] = str(total)
        return body

    def jobs_query(request: Request, body: dict[str, Any]) -> dict[str, Any]:
        if body.get("useLegacySql"):
            raise ApiError(400, "invalidQuery", "Legacy SQL is not supported by this fake")
        record = fake.run_query(
            body.get("query", ""), body.get("queryParameters") or [], bool(body.get("dryRun"))
        )
        if record["error"]:
            reason, message, status = record["error"]
            raise ApiError(status, reason, message)
        int64 = bool((body.get("formatOptions") or {}).get("useInt64Timestamp"))
        max_results = body.get("maxResults")
        response = query_response(record, int(max_results) if max_results is not None else None, 0, int64)
        return {"kind": "bigquery#queryResponse", "queryId": record["job_id"], **response}

    def get_query_results(request: Request, body: dict[str, Any]) -> dict[str, Any]:
        record = fake.jobs.get(request.path_params["job_id"])
        if record is None:
            raise ApiError(404, "notFound", f"Not found: Job {fake.project}:{request.path_params['job_id']}")
        if record["error"]:
            reason, message, status = record["error"]
            raise ApiError(status, reason, message)
        params = request.query_params
        start = int(params.get("pageToken") or params.get("startIndex") or 0)
        max_results = int(params["maxResults"]) if params.get("maxResults") else None
        int64 = params.get("formatOptions.useInt64Timestamp", "false").lower() == "true"
        return {
            "kind": "bigquery#getQueryResultsResponse",
            "etag": uuid.uuid4().hex[:12],
            **query_response(record, max_results, start, int64),
        }

    def jobs_insert(request: Request, body: dict[str, Any]) -> dict[str, Any]:
        config = body.get("configuration") or {}
        query = config.get("query")
        if not query:
            raise ApiError(400, "invalid", "Only query jobs are supported by this fake")
        if query.get("useLegacySql"):
            raise ApiError(400, "invalidQuery", "Legacy SQL is not supported by this fake")
        dry_run = bool(config.get("dryRun"))
        job_id = (body.get("jobReference") or {}).get("jobId")
        record = fake.run_query(
            query.get("query", ""), query.get("queryParameters") or [], dry_run, job_id=job_id
        )
        if record["error"] and dry_run:
            reason, message, status = record["error"]
            raise ApiError(status, reason, message)
        return model.job_resource(fake, record)

    def jobs_get(request: Request, body: dict[str, Any]) -> dict[str, Any]:
        record = fake.jobs.get(request.path_params["job_id"])
        if record is None:
            raise ApiError(404, "notFound", f"Not found: Job {fake.project}:{request.path_params['job_id']}")
        return model.job_resource(fake, record)

    def jobs_cancel(request: Request, body: dict[str, Any]) -> dict[str, Any]:
        return {"kind": "bigquery#jobCancelResponse", "job": jobs_get(request, body)}

    def dataset_entry(dataset: str) -> dict[str, Any]:
        return {
            "kind": "bigquery#dataset",
            "id": f"{fake.project}:{dataset}",
            "datasetReference": {"projectId": fake.project, "datasetId": dataset},
            "location": fake.location,
        }

    def datasets_list(request: Request, body: dict[str, Any]) -> dict[str, Any]:
        return {
            "kind": "bigquery#datasetList",
            "etag": uuid.uuid4().hex[:12],
            "datasets": [dataset_entry(d) for d in fake.datasets()],
        }

    def datasets_get(request: Request, body: dict[str, Any]) -> dict[str, Any]:
        dataset = request.path_params["dataset"]
        fake._require_dataset(dataset)
        return {**dataset_entry(dataset), "creationTime": model.now_ms(), "lastModifiedTime": model.now_ms()}

    def table_ref(dataset: str, table: str) -> dict[str, Any]:
        return {"projectId": fake.project, "datasetId": dataset, "tableId": table}

    def tables_list(request: Request, body: dict[str, Any]) -> dict[str, Any]:
        dataset = request.path_params["dataset"]
        tables = fake.tables(dataset)
        return {
            "kind": "bigquery#tableList",
            "etag": uuid.uuid4().hex[:12],
            "tables": [
                {
                    "kind": "bigquery#table",
                    "id": f"{fake.project}:{dataset}.{name}",
                    "tableReference": table_ref(dataset, name),
                    "type": kind,
                    "creationTime": model.now_ms(),
                }
                for name, kind in tables
            ],
            "totalItems": len(tables),
        }

    def tables_get(request: Request, body: dict[str, Any]) -> dict[str, Any]:
        dataset, table = request.path_params["dataset"], request.path_params["table"]
        fields, kind, rows = fake.table_schema(dataset, table)
        return {
            "kind": "bigquery#table",
            "etag": uuid.uuid4().hex[:12],
            "id": f"{fake.project}:{dataset}.{table}",
            "tableReference": table_ref(dataset, table),
            "schema": {"fields": fields},
            "numRows": str(rows),
            "numBytes": str(rows * len(fields) * 8),
            "type": kind,
            "location": fake.location,
            "creationTime": model.now_ms(),
            "lastModifiedTime": model.now_ms(),
        }

    base = "/bigquery/v2/projects/{project}"
    routes = [
        Route(f"{base}/queries", handler(jobs_query), methods=["POST"]),
        Route(f"{base}/queries/{{job_id}}", handler(get_query_results), methods=["GET"]),
        Route(f"{base}/jobs", handler(jobs_insert), methods=["POST"]),
        Route(f"{base}/jobs/{{job_id}}", handler(jobs_get), methods=["GET"]),
        Route(f"{base}/jobs/{{job_id}}/cancel", handler(jobs_cancel), methods=["POST"]),
        Route(f"{base}/datasets", handler(datasets_list), methods=["GET"]),
        Route(f"{base}/datasets/{{dataset}}", handler(datasets_get), methods=["GET"]),
        Route(f"{base}/datasets/{{dataset}}/tables", handler(tables_list), methods=["GET"]),
        Route(f"{base}/datasets/{{dataset}}/tables/{{table}}", handler(tables_get), methods=["GET"]),
    ]
    return Starlette(routes=routes)


class _Server:
    def __init__(self, app: Starlette):
        import uvicorn

        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            self.port = sock.getsockname()[1]
        self.server = uvicorn.Server(
            uvicorn.Config(app, host="127.0.0.1", port=self.port, log_level="warning", lifespan="off")
        )
        self.thread = threading.Thread(target=self.server.run, name="fake-bigquery", daemon=True)
        self.thread.start()
        deadline = time.monotonic() + 10
        while not self.server.started:
            if time.monotonic() > deadline or not self.thread.is_alive():
                raise RuntimeError("the BigQuery fake did not start")
            time.sleep(0.02)

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=5)


def serve(fake: FakeBigQuery) -> tuple[_Server, str]:
    server = _Server(build_app(fake))
    return server, f"http://127.0.0.1:{server.port}"
