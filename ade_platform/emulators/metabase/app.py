"""The HTTP surface of the Metabase emulator (Starlette). Paths, bodies and error shapes follow Metabase's REST
API documentation; only what a read-only client needs is served."""

from __future__ import annotations

import inspect
import os
import secrets
import time
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Route

from ade_platform.emulators import _warehouse
from ade_platform.emulators.metabase import DEMO_API_KEY, DEMO_PASSWORD, DEMO_USERNAME, content


def _not_found() -> Response:
    return PlainTextResponse("Not found.", 404)


def _bad_id(name: str) -> Response:
    message = "value must be an integer greater than zero."
    return JSONResponse({"errors": {name: message}, "specific-errors": {name: [message]}}, 400)


def _id(request: Request, name: str = "id") -> int | None:
    try:
        value = int(request.path_params[name])
    except ValueError:
        return None
    return value if value > 0 else None


def _by_id(known: Callable[[int], bool], to_json: Callable[[int], Any]) -> Callable[[Request], Response]:
    """The endpoint of one kind of object, by the positive integer id in its path: 400 for an id that is not
    one, 404 for one that is not `known`."""

    def endpoint(request: Request) -> Response:
        object_id = _id(request)
        if object_id is None:
            return _bad_id("id")
        if not known(object_id):
            return _not_found()
        return JSONResponse(to_json(object_id))

    return endpoint


class MetabaseEmulator:
    def __init__(
        self, warehouse: Path, api_key: str, username: str, password: str, query_timeout: float = 60
    ):
        self.warehouse = warehouse
        self.api_key = api_key
        self.username = username
        self.password = password
        self.query_timeout = query_timeout
        self.sessions: set[str] = set()

    async def session(self, request: Request) -> Response:
        try:
            body = await request.json()
        except ValueError:
            body = {}
        if not isinstance(body, dict) or not body.get("username") or not body.get("password"):
            return JSONResponse({"errors": {"username": "value must be a non-blank string."}}, 400)
        if body["username"] != self.username or body["password"] != self.password:
            return JSONResponse({"errors": {"password": "did not match stored password"}}, 401)
        token = str(uuid.uuid4())
        self.sessions.add(token)
        return JSONResponse({"id": token})

    def authorized(self, request: Request) -> bool:
        key = request.headers.get("x-api-key")
        if key is not None:
            return secrets.compare_digest(key, self.api_key)
        return request.headers.get("x-metabase-session", "") in self.sessions

    def dashboards(self, request: Request) -> Response:
        return JSONResponse([content.dashboard_json(d, with_cards=False) for d in content.DASHBOARDS])

    def collections(self, request: Request) -> Response:
        return JSONResponse([content.collection_json(c) for c in content.COLLECTIONS])

    def card_query(self, request: Request) -> Response:
        card_id = _id(request, "card_id")
        if card_id is None:
            return _bad_id("card-id")
        if card_id not in content.CARDS:
            return _not_found()
        return self._query(card_id, {}, "question")

    async def dashcard_query(self, request: Request) -> Response:
        """POST /api/dashboard/:dashboard-id/dashcard/:dashcard-id/card/:card-id/query with `parameters`: the
        question run as the dashboard shows it, the dashboard's parameter values applied through its mappings."""
        ids = [_id(request, name) for name in ("dashboard_id", "dashcard_id", "card_id")]
        if None in ids:
            return _bad_id("dashboard-id, dashcard-id and card-id")
        dashboard_id, dashcard_id, card_id = ids
        dashboard = content.DASHBOARDS.get(dashboard_id)  # type: ignore[arg-type]
        if dashboard is None or (dashcard_id, card_id) not in dashboard["dashcards"]:
            return _not_found()
        try:
            body = await request.json()
        except ValueError:
            body = {}
        given = body.get("parameters") if isinstance(body, dict) else None
        values = content.parameter_values(dashboard_id, dashcard_id, given if isinstance(given, list) else [])  # type: ignore[arg-type]
        return await run_in_threadpool(self._query, card_id, values, "dashboard")

    def _query(self, card_id: int, values: dict[str, Any], context: str) -> Response:
        sql, params = content.card_sql(card_id, values)
        started = datetime.now(UTC)
        t0 = time.perf_counter()
        base: dict[str, Any] = {
            "database_id": content.DATABASE["id"],
            "started_at": started.isoformat(),
            "json_query": content.dataset_query(card_id),
            "context": context,
        }
        try:
            columns, rows = _warehouse.run_sql(
                self.warehouse, sql, params, limit=content.MAX_RESULTS, timeout=self.query_timeout
            )
        except _warehouse.QueryFailed as exc:
            # Metabase answers 202 even when the database rejects the question; the body says it failed.
            return JSONResponse(
                {
                    **base,
                    "status": "failed",
                    "class": "class java.sql.SQLException",
                    "error": str(exc),
                    "error_type": "invalid-query",
                    "row_count": 0,
                    "running_time": round((time.perf_counter() - t0) * 1000),
                    "data": {"rows": [], "cols": []},
                },
                202,
            )
        return JSONResponse(
            {
                **base,
                "status": "completed",
                "row_count": len(rows),
                "running_time": round((time.perf_counter() - t0) * 1000),
                "data": {
                    "rows": [[_warehouse.jsonable(v) for v in row] for row in rows],
                    "cols": [{"name": c, "display_name": c, "source": "native"} for c in columns],
                    "native_form": {"query": sql},
                    "results_timezone": "UTC",
                    "rows_truncated": content.MAX_RESULTS if len(rows) >= content.MAX_RESULTS else None,
                },
            },
            202,
        )


def build_app(warehouse: Path | None = None) -> Starlette:
    emu = MetabaseEmulator(
        warehouse or _warehouse.warehouse_path(os.environ.get("METABASE_EMULATOR_WAREHOUSE")),
        os.environ.get("METABASE_EMULATOR_API_KEY") or DEMO_API_KEY,
        os.environ.get("METABASE_EMULATOR_USERNAME") or DEMO_USERNAME,
        os.environ.get("METABASE_EMULATOR_PASSWORD") or DEMO_PASSWORD,
    )

    def authed(handler: Any) -> Any:
        async def endpoint(request: Request) -> Response:
            if not emu.authorized(request):
                return PlainTextResponse("Unauthenticated", 401)
            if inspect.iscoroutinefunction(handler):
                return await handler(request)
            return await run_in_threadpool(handler, request)

        return endpoint

    async def health(request: Request) -> Response:
        return JSONResponse({"status": "ok"})

    routes = [
        Route("/api/health", health),
        Route("/api/session", emu.session, methods=["POST"]),
        Route("/api/dashboard/", authed(emu.dashboards)),
        Route("/api/dashboard/{id}", authed(_by_id(content.DASHBOARDS.__contains__, content.dashboard_json))),
        Route("/api/card/{id}", authed(_by_id(content.CARDS.__contains__, content.card_json))),
        Route("/api/card/{card_id}/query", authed(emu.card_query), methods=["POST"]),
        Route(
            "/api/dashboard/{dashboard_id}/dashcard/{dashcard_id}/card/{card_id}/query",
            authed(emu.dashcard_query),
            methods=["POST"],
        ),
        Route("/api/table/{id}", authed(_by_id(content.TABLES.__contains__, content.table_json))),
        Route(
            "/api/database/{id}",
            authed(_by_id(lambda i: i == content.DATABASE["id"], lambda _: content.DATABASE)),
        ),
        Route("/api/collection/", authed(emu.collections)),
    ]

    async def not_found(request: Request, exc: Exception) -> Response:
        return _not_found()

    return Starlette(routes=routes, exception_handlers={404: not_found})
