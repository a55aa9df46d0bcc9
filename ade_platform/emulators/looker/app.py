"""The HTTP surface of the Looker emulator (Starlette). Paths, parameters and envelopes follow the Looker API
4.0 reference; the calls a read-only client needs are served, and create_dashboard (POST /dashboards) so a
test can add a dashboard after the inventory was taken."""

from __future__ import annotations

import inspect
import os
import secrets
import time
from pathlib import Path
from typing import Any

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Route

from ade_platform.emulators import _warehouse
from ade_platform.emulators.looker import DEMO_CLIENT_ID, DEMO_CLIENT_SECRET, content, lookml

API = "/api/4.0"
DOCS = "https://cloud.google.com/looker/docs/r/err/4.0"
TOKEN_SECONDS = 3600
MAX_LIMIT = 5000


def _error(status: int, message: str, doc_path: str) -> JSONResponse:
    return JSONResponse({"message": message, "documentation_url": f"{DOCS}/{status}/{doc_path}"}, status)


def _pick(body: Any, fields: str | None) -> Any:
    """Looker's `fields` parameter: only the named top-level keys."""
    if not fields:
        return body
    wanted = {f.strip() for f in fields.split(",") if f.strip()}
    if isinstance(body, list):
        return [{k: v for k, v in item.items() if k in wanted} for item in body]
    return {k: v for k, v in body.items() if k in wanted}


class LookerEmulator:
    def __init__(self, warehouse: Path, client_id: str, client_secret: str, query_timeout: float = 60):
        self.warehouse = warehouse
        self.client_id = client_id
        self.client_secret = client_secret
        self.query_timeout = query_timeout
        self.tokens: dict[str, float] = {}

    # --- auth -------------------------------------------------------------------------------------------

    async def login(self, request: Request) -> Response:
        form = dict(await request.form()) if request.method == "POST" else {}
        params = {**request.query_params, **form}
        if params.get("client_id") != self.client_id or params.get("client_secret") != self.client_secret:
            # Looker answers a wrong API key with 404, not 401.
            return _error(404, "Not found", "post/login")
        token = secrets.token_urlsafe(30)
        self.tokens[token] = time.time() + TOKEN_SECONDS
        return JSONResponse(
            {
                "access_token": token,
                "token_type": "Bearer",
                "expires_in": TOKEN_SECONDS,
                "refresh_token": None,
            }
        )

    def _authorized(self, request: Request) -> bool:
        header = request.headers.get("authorization", "")
        scheme, _, token = header.partition(" ")
        if scheme.lower() not in ("token", "bearer"):
            return False
        expiry = self.tokens.get(token.strip())
        return expiry is not None and expiry > time.time()

    async def logout(self, request: Request) -> Response:
        token = request.headers.get("authorization", "").partition(" ")[2].strip()
        if self.tokens.pop(token, None) is None:
            return _error(401, "Requires authentication.", "delete/logout")
        return Response(status_code=204)

    # --- content ----------------------------------------------------------------------------------------

    def dashboards(self, request: Request) -> Response:
        rows = [content.dashboard_json(d, with_elements=False) for d in content.DASHBOARDS]
        return JSONResponse(_pick(rows, request.query_params.get("fields")))

    def search_dashboards(self, request: Request) -> Response:
        q = request.query_params
        rows = [content.dashboard_json(d, with_elements=False) for d in content.DASHBOARDS]
        if q.get("title"):
            pattern = q["title"].lower().replace("%", "")
            rows = [r for r in rows if pattern in r["title"].lower()]
        if q.get("folder_id"):
            rows = [r for r in rows if r["folder_id"] == q["folder_id"]]
        offset = int(q.get("offset") or 0)
        limit = int(q["limit"]) if q.get("limit") else len(rows)
        return JSONResponse(_pick(rows[offset : offset + limit], q.get("fields")))

    async def create_dashboard(self, request: Request) -> Response:
        """POST /dashboards (create_dashboard): a WriteDashboard body with a title and an existing folder_id."""
        try:
            body = await request.json()
        except ValueError:
            return _error(400, "Invalid JSON", "post/dashboards")
        title, folder = (body or {}).get("title"), str((body or {}).get("folder_id") or "")
        if not title or folder not in content.FOLDERS:
            return _error(
                422, "Validation Failed: title and an existing folder_id are required", "post/dashboards"
            )
        now = time.strftime("%Y-%m-%dT%H:%M:%S.000+00:00", time.gmtime())
        return JSONResponse(content.dashboard_json(content.create_dashboard(str(title), folder, now)))

    def dashboard(self, request: Request) -> Response:
        dashboard_id = request.path_params["dashboard_id"]
        if dashboard_id not in content.DASHBOARDS:
            return _error(404, "Not found", "get/dashboards/:dashboard_id")
        return JSONResponse(_pick(content.dashboard_json(dashboard_id), request.query_params.get("fields")))

    def dashboard_elements(self, request: Request) -> Response:
        dashboard_id = request.path_params["dashboard_id"]
        if dashboard_id not in content.DASHBOARDS:
            return _error(404, "Not found", "get/dashboards/:dashboard_id/dashboard_elements")
        rows = [content.element_json(dashboard_id, e) for e in content.DASHBOARDS[dashboard_id]["elements"]]
        return JSONResponse(_pick(rows, request.query_params.get("fields")))

    def looks(self, request: Request) -> Response:
        rows = [content.look_json(i, with_query=False) for i in content.LOOKS]
        return JSONResponse(_pick(rows, request.query_params.get("fields")))

    def look(self, request: Request) -> Response:
        look_id = _int(request.path_params["look_id"])
        if look_id not in content.LOOKS:
            return _error(404, "Not found", "get/looks/:look_id")
        return JSONResponse(_pick(content.look_json(look_id), request.query_params.get("fields")))

    def query(self, request: Request) -> Response:
        query_id = _int(request.path_params["query_id"])
        if query_id not in content.QUERIES:
            return _error(404, "Not found", "get/queries/:query_id")
        return JSONResponse(_pick(content.query_json(query_id), request.query_params.get("fields")))

    def explore(self, request: Request) -> Response:
        model, explore = request.path_params["model"], request.path_params["explore"]
        if explore not in content.MODELS.get(model, {}):
            return _error(404, "Not found", "get/lookml_models/:lookml_model_name/explores/:explore_name")
        return JSONResponse(_pick(content.explore_json(model, explore), request.query_params.get("fields")))

    def run_look(self, request: Request) -> Response:
        look_id = _int(request.path_params["look_id"])
        if look_id not in content.LOOKS:
            return _error(404, "Not found", "get/looks/:look_id/run/:result_format")
        return self._run(content.LOOKS[look_id]["query_id"], request, "get/looks/:look_id/run/:result_format")

    def run_query(self, request: Request) -> Response:
        query_id = _int(request.path_params["query_id"])
        if query_id not in content.QUERIES:
            return _error(404, "Not found", "get/queries/:query_id/run/:result_format")
        return self._run(query_id, request, "get/queries/:query_id/run/:result_format")

    async def run_inline_query(self, request: Request) -> Response:
        """POST /queries/run/{result_format}: a WriteQuery (model, view, fields, filters, sorts, limit) run
        without saving it, as Looker runs a dashboard tile with the dashboard's filters merged in."""
        doc = "post/queries/run/:result_format"
        try:
            body = await request.json()
        except ValueError:
            return _error(400, "Invalid JSON", doc)
        if (
            not isinstance(body, dict)
            or body.get("model") != "jaffle"
            or body.get("view") not in content.MODELS["jaffle"]
        ):
            return _error(422, "Validation Failed: model and view must name an explore", doc)
        query = {k: body.get(k) for k in ("view", "fields", "filters", "sorts")}
        limit = body.get("limit") or "500"
        return await run_in_threadpool(self._run_body, query, str(limit), request, doc)

    def _run(self, query_id: int, request: Request, doc: str) -> Response:
        limit = request.query_params.get("limit") or content.query_json(query_id)["limit"]
        return self._run_body(content.QUERIES[query_id], limit, request, doc)

    def _run_body(self, query: dict[str, Any], raw_limit: str, request: Request, doc: str) -> Response:
        fmt = request.path_params["result_format"]
        if fmt not in ("json", "sql"):
            return _error(400, f"Unsupported result_format '{fmt}' in this emulator (json, sql)", doc)
        try:
            limit = int(raw_limit)
        except ValueError:
            return _error(422, "Validation Failed: limit must be an integer", doc)
        limit = min(max(limit, 1), MAX_LIMIT)
        try:
            sql, params, fields = lookml.compile_query_body(query, limit)
        except KeyError as exc:
            return JSONResponse([{"looker_error": f"Unknown field {exc.args[0]!r}"}])
        if fmt == "sql":
            return PlainTextResponse(sql)
        try:
            _, rows = _warehouse.run_sql(self.warehouse, sql, params, limit=limit, timeout=self.query_timeout)
        except _warehouse.QueryFailed as exc:
            # Looker reports a database error inside a 200 answer, as a one-row result.
            return JSONResponse([{"looker_error": str(exc)}])
        return JSONResponse(
            [{f: _warehouse.jsonable(v) for f, v in zip(fields, row, strict=False)} for row in rows]
        )

    def versions(self, request: Request) -> Response:
        base = str(request.base_url).rstrip("/")
        return JSONResponse(
            {
                "looker_release_version": "25.20.0",
                "current_version": {"version": "4.0", "full_version": "4.0.25.20", "status": "current"},
                "supported_versions": [
                    {"version": "4.0", "status": "current", "swagger_url": f"{base}/api/4.0/swagger.json"}
                ],
                "api_server_url": base,
            }
        )


def _int(value: str) -> int:
    try:
        return int(value)
    except ValueError:
        return -1


def build_app(warehouse: Path | None = None) -> Starlette:
    emu = LookerEmulator(
        warehouse or _warehouse.warehouse_path(os.environ.get("LOOKER_EMULATOR_WAREHOUSE")),
        os.environ.get("LOOKER_EMULATOR_CLIENT_ID") or DEMO_CLIENT_ID,
        os.environ.get("LOOKER_EMULATOR_CLIENT_SECRET") or DEMO_CLIENT_SECRET,
    )

    def authed(handler: Any) -> Any:
        async def endpoint(request: Request) -> Response:
            if not emu._authorized(request):
                return _error(401, "Requires authentication.", request.url.path.removeprefix(API + "/"))
            if inspect.iscoroutinefunction(handler):
                return await handler(request)
            return await run_in_threadpool(handler, request)

        return endpoint

    routes = [
        Route("/api/versions", emu.versions),
        Route(f"{API}/login", emu.login, methods=["POST"]),
        Route(f"{API}/logout", emu.logout, methods=["DELETE"]),
        Route(f"{API}/dashboards", authed(emu.create_dashboard), methods=["POST"]),
        Route(f"{API}/dashboards", authed(emu.dashboards)),
        Route(f"{API}/dashboards/search", authed(emu.search_dashboards)),
        Route(f"{API}/dashboards/{{dashboard_id}}", authed(emu.dashboard)),
        Route(f"{API}/dashboards/{{dashboard_id}}/dashboard_elements", authed(emu.dashboard_elements)),
        Route(f"{API}/looks", authed(emu.looks)),
        Route(f"{API}/looks/{{look_id}}", authed(emu.look)),
        Route(f"{API}/looks/{{look_id}}/run/{{result_format}}", authed(emu.run_look)),
        Route(f"{API}/queries/run/{{result_format}}", authed(emu.run_inline_query), methods=["POST"]),
        Route(f"{API}/queries/{{query_id}}", authed(emu.query)),
        Route(f"{API}/queries/{{query_id}}/run/{{result_format}}", authed(emu.run_query)),
        Route(f"{API}/lookml_models/{{model}}/explores/{{explore}}", authed(emu.explore)),
    ]

    async def not_found(request: Request, exc: Exception) -> Response:
        return _error(404, "Not found", request.url.path.removeprefix(API + "/"))

    return Starlette(routes=routes, exception_handlers={404: not_found})
