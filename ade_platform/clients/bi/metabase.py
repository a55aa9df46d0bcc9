"""Metabase over its REST API (httpx): an API key in `X-API-KEY`, or a session from POST /api/session.

Dashboards come from /api/dashboard (their dashcards carry the cards), questions run through
POST /api/card/:id/query, which answers 202 whether or not the database accepted the query: the body's
`status` says. Requests go through the shared HTTP helper (clients/http.py: retries on 429 and 5xx, redirects
refused); a session that expired is renewed once.
"""

from __future__ import annotations

import re
import threading
from typing import Any

import httpx

from ade_platform.clients.bi.base import BiClient, BiError, safe_error
from ade_platform.clients.http import HttpClient, segment
from ade_platform.config import MetabaseSettings
from ade_platform.lib.bi.shapes import (
    AppliedFilter,
    DashboardInfo,
    DashboardSummary,
    ElementInfo,
    new_element,
)
from ade_platform.lib.bi.tables import Naming, table_from_name, tables_in_sql
from ade_platform.lib.bi.tiles import TileError

_OPTIONAL_CLAUSE = re.compile(r"\[\[(.*?)\]\]", re.DOTALL)
_VARIABLE = re.compile(r"\{\{\s*[^{}]*?\s*\}\}")


def plain_sql(sql: str) -> str:
    """A native question's SQL without Metabase's own syntax, for a SQL parser: optional clauses `[[...]]` kept
    (a table they join is still read), variables `{{name}}` as NULL."""
    return _VARIABLE.sub("NULL", _OPTIONAL_CLAUSE.sub(lambda m: m[1], sql))


class MetabaseClient(BiClient):
    tool = "metabase"

    def __init__(self, cfg: MetabaseSettings, naming: Naming, timeout: float):
        super().__init__(naming, timeout)
        self.base_url = cfg.base_url.rstrip("/")
        self._cfg = cfg
        # Redirects are not followed: X-API-KEY would go along.
        self._http = HttpClient(
            self.base_url,
            name="Metabase",
            error=BiError,
            timeout=timeout,
            headers={"Accept": "application/json"},
        )
        self._session: str | None = None
        self._lock = threading.Lock()
        self._tables: dict[int, Any] = {}
        self._collections: dict[Any, str] | None = None

    # --- transport -------------------------------------------------------------------------------------

    def _login(self) -> str:
        body = {"username": self._cfg.username, "password": self._cfg.password.get_secret_value()}  # type: ignore[union-attr]
        resp = self._send("POST", "/api/session", json=body, auth=False)
        if resp.status_code in (400, 401, 403):
            raise BiError("auth_failed", "Metabase refused the configured username / password")
        if resp.status_code >= 400:
            raise BiError("upstream_error", f"Metabase answered {resp.status_code} to the session login")
        return resp.json()["id"]

    def _auth_headers(self, renew: bool = False) -> dict[str, str]:
        if self._cfg.api_key is not None:
            return {"X-API-KEY": self._cfg.api_key.get_secret_value()}
        with self._lock:
            if self._session is None or renew:
                self._session = self._login()
            return {"X-Metabase-Session": self._session}

    def _send(
        self, method: str, path: str, *, json: Any = None, auth: bool = True, timeout: float | None = None
    ) -> httpx.Response:
        def send(renew: bool = False) -> httpx.Response:
            headers = self._auth_headers(renew) if auth else {}
            # Every Metabase call here reads (a login, a question's query sent as POST): safe to send again.
            return self._http.request(
                method, path, json=json, headers=headers, timeout=timeout or self.timeout, repeatable=True
            )

        resp = send()
        if resp.status_code == 401 and auth and self._cfg.api_key is None:
            resp = send(renew=True)  # the session expired: log in again, once
        return resp

    def _get(self, path: str, *, not_found: tuple[str, str] | None = None) -> Any:
        return self._json(self._send("GET", path), not_found)

    def _json(self, resp: httpx.Response, not_found: tuple[str, str] | None) -> Any:
        if resp.status_code in (401, 403):
            raise BiError("auth_failed", f"Metabase refused the request ({resp.status_code})")
        if resp.status_code in (400, 404) and not_found is not None:
            raise BiError(*not_found)
        if resp.status_code >= 400:
            raise BiError("upstream_error", f"Metabase answered {resp.status_code}: {safe_error(resp.text)}")
        return resp.json()

    # --- dashboards ------------------------------------------------------------------------------------

    def _collection_names(self) -> dict[Any, str]:
        if self._collections is None:
            self._collections = {c["id"]: c.get("name") for c in self._get("/api/collection/")}
        return self._collections

    def _summary(self, d: dict[str, Any]) -> DashboardSummary:
        collection = d.get("collection") or {}
        folder = collection.get("name")
        if folder is None and d.get("collection_id") is not None:
            folder = self._collection_names().get(d["collection_id"])
        return DashboardSummary(
            id=str(d["id"]),
            title=d.get("name") or "",
            folder=folder,
            created_at=d.get("created_at"),
            last_updated_at=d.get("updated_at"),
            view_count=d.get("view_count"),
            url=f"{self.base_url}/dashboard/{d['id']}",
        )

    def list_dashboards(self) -> list[DashboardSummary]:
        return [self._summary(d) for d in self._get("/api/dashboard/") if not d.get("archived")]

    def dashboard(self, dashboard_id: str) -> DashboardInfo:
        missing = ("dashboard_not_found", f"Metabase has no dashboard {dashboard_id!r}")
        if not dashboard_id.isdigit():
            raise BiError(*missing)
        d = self._get(f"/api/dashboard/{segment(dashboard_id)}", not_found=missing)
        dashcards = d.get("dashcards") or d.get("ordered_cards") or []  # ordered_cards before v0.47
        # The parameters the dashboard renders its cards with: those with a default value
        defaults = {
            p["id"]: p for p in d.get("parameters") or [] if p.get("id") and p.get("default") is not None
        }
        elements = [self._element(c) for c in dashcards]
        for element, dashcard in zip(elements, dashcards, strict=True):
            element["dashboard_id"] = str(d["id"])
            element["dashboard_filters"] = [
                AppliedFilter(
                    name=str(defaults[m["parameter_id"]].get("name") or m["parameter_id"]),
                    value=defaults[m["parameter_id"]]["default"],
                    field=None,
                    parameter={
                        "id": m["parameter_id"],
                        "type": defaults[m["parameter_id"]].get("type"),
                        "target": m.get("target"),
                    },
                )
                for m in dashcard.get("parameter_mappings") or []
                if m.get("parameter_id") in defaults and m.get("card_id") in (None, dashcard.get("card_id"))
            ]
        return DashboardInfo(**self._summary(d), elements=elements)

    def _table(self, table_id: int) -> dict[str, Any] | None:
        with self._lock:
            if table_id in self._tables:
                return self._tables[table_id]
        try:
            table = self._get(f"/api/table/{segment(table_id)}", not_found=("upstream_error", "missing"))
        except BiError as exc:
            if exc.detail != "missing":
                raise
            table = None
        with self._lock:
            self._tables[table_id] = table
        return table

    def _element(self, dashcard: dict[str, Any]) -> ElementInfo:
        card = dashcard.get("card") or None
        card_id = dashcard.get("card_id")
        info = new_element(
            id=str(dashcard["id"]),
            title=(card or {}).get("name"),
            type=(card or {}).get("display") or "text",
            runnable=card_id is not None,
            question_id=str(card_id) if card_id else None,
            database_id=str(card["database_id"]) if card and card.get("database_id") is not None else None,
        )
        if card is None:
            virtual = (dashcard.get("visualization_settings") or {}).get("virtual_card") or {}
            info["type"] = virtual.get("display") or "text"
            return info
        query = card.get("dataset_query") or {}
        if query.get("type") == "native":
            info["sql"] = (query.get("native") or {}).get("query")
            info["tables"] = tables_in_sql(plain_sql(info["sql"] or ""), self.naming)
        elif query.get("type") == "query":
            source = (query.get("query") or {}).get("source-table")
            table = self._table(source) if isinstance(source, int) else None
            if table:
                name = ".".join(p for p in (table.get("schema"), table["name"]) if p)
                ref = table_from_name(name, self.naming, "source_table")
                info["tables"] = [ref] if ref else []
        return info

    # --- running ---------------------------------------------------------------------------------------

    def run_element(self, element: ElementInfo, timeout: float) -> int:
        """The dashcard's query with the dashboard's parameter values (their defaults), as the dashboard shows
        it; a question known without its dashboard runs on its own."""
        card = segment(element["question_id"])
        if element.get("dashboard_id"):
            path = (
                f"/api/dashboard/{segment(element['dashboard_id'])}/dashcard/{segment(element['id'])}"
                f"/card/{card}/query"
            )
            parameters = [
                {**f["parameter"], "value": f["value"]} for f in element.get("dashboard_filters") or []
            ]
            payload: dict[str, Any] | None = {"parameters": parameters}
        else:
            path, payload = f"/api/card/{card}/query", None
        try:
            body = self._json(
                self._send("POST", path, timeout=timeout, json=payload),
                ("upstream_error", "the question no longer exists"),
            )
        except BiError as exc:
            if exc.code == "auth_failed":
                raise
            raise TileError(exc.detail) from None
        if body.get("status") != "completed":
            raise TileError(
                safe_error(str(body.get("error") or f"the question's status is {body.get('status')}"))
            )
        return int(
            body.get("row_count")
            if body.get("row_count") is not None
            else len((body.get("data") or {}).get("rows") or [])
        )

    def close(self) -> None:
        self._http.close()
