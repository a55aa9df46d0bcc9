"""Looker through looker-sdk (API 4.0), configured from ade.yaml instead of a looker.ini file.

Three adjustments to the stock SDK, all at its documented extension points:
- settings come from a `ApiSettings` subclass holding the configured values (no ini file, no LOOKERSDK_*
  environment), so the client secret lives only in memory;
- the transport follows the shared retry policy (clients/http.py: 429 and 5xx, Retry-After, capped backoff),
  refuses redirects, and turns an unreachable host into `connection_failed`;
- error answers are mapped here, by HTTP status: the stock SDK would look each error up on Looker's CDN.
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
from typing import Any

from ade_platform.clients.bi.base import BiClient, BiError, LookRun, safe_error
from ade_platform.clients.http import host_of, redirect_refused, retrying, segment
from ade_platform.config import LookerSettings
from ade_platform.lib.bi.look_rows import TABLE_COLUMN, LookField
from ade_platform.lib.bi.shapes import (
    AppliedFilter,
    DashboardInfo,
    DashboardSummary,
    ElementInfo,
    TableRef,
    new_element,
)
from ade_platform.lib.bi.tables import Naming, table_from_name
from ade_platform.lib.bi.tiles import TileError

_SEARCH_PAGE = 100


class LookerHttpError(Exception):
    def __init__(self, status: int, message: str):
        self.status = status
        self.message = message
        super().__init__(f"{status}: {message}")


def _sdk_classes() -> Any:
    """The SDK subclasses, built on first use (looker_sdk is imported lazily)."""
    import requests
    from looker_sdk.rtl import api_settings, transport
    from looker_sdk.rtl.requests_transport import NullAuth, RequestsTransport
    from looker_sdk.sdk.api40.methods import Looker40SDK

    class Settings(api_settings.ApiSettings):
        def __init__(self, cfg: LookerSettings, timeout: float):  # no super(): it would read looker.ini
            self.filename = ""
            self.section = None
            self.env_prefix = None
            self.base_url = cfg.base_url.rstrip("/")
            self.verify_ssl = cfg.verify_ssl
            self.timeout = max(1, int(timeout))
            self.headers = {"Content-Type": "application/json"}
            self.agent_tag = f"{transport.AGENT_PREFIX} ade-platform"
            self._cfg = cfg

        def read_config(self) -> api_settings.SettingsConfig:
            return {
                "client_id": self._cfg.client_id.get_secret_value(),
                "client_secret": self._cfg.client_secret.get_secret_value(),
                "base_url": self.base_url,
            }

    class Transport(RequestsTransport):
        def request(
            self, method, path, query_params=None, body=None, authenticator=None, transport_options=None
        ):
            headers: dict[str, str] = {}
            timeout = self.settings.timeout
            if authenticator:
                headers.update(authenticator(transport_options or {}))
            if transport_options:
                headers.update(transport_options.get("headers") or {})
                timeout = transport_options.get("timeout") or timeout
            host = host_of(path)
            # Every call of this client reads; its one POST is the login, which changes nothing.
            repeatable = method.name != "POST" or path.endswith("/login")

            def send() -> Any:
                try:
                    return self.session.request(
                        method.name,
                        path,
                        auth=NullAuth(),
                        params=query_params,
                        data=body,
                        headers=headers,
                        timeout=timeout,
                        # a 307 would re-send the body (the login's client secret) to wherever it points
                        allow_redirects=False,
                    )
                except requests.Timeout:
                    raise BiError(
                        "connection_failed", f"Looker at {host} did not answer within {timeout} s"
                    ) from None

            try:
                resp = retrying(
                    method.name, send, repeatable=repeatable, retry_on=(requests.RequestException,)
                )
            except requests.RequestException as exc:
                raise BiError(
                    "connection_failed", f"cannot reach Looker at {host} ({type(exc).__name__})"
                ) from None
            if resp.is_redirect:
                raise BiError("upstream_error", redirect_refused("Looker", resp))
            ret = transport.Response(
                resp.ok, resp.content, transport.response_mode(resp.headers.get("content-type"))
            )
            ret.status = resp.status_code  # the SDK's Response has no status; _return below reads it
            encoding = requests.utils.get_encoding_from_headers(resp.headers)
            if encoding:
                ret.encoding = encoding
            return ret

    class Sdk(Looker40SDK):
        def _return(self, response, structure):
            if not response.ok:
                raise LookerHttpError(getattr(response, "status", 0), _message(response.value))
            return super()._return(response, structure)

    def build(cfg: LookerSettings, timeout: float) -> Any:
        from looker_sdk.rtl import auth_session, serialize

        settings = Settings(cfg, timeout)
        tr = Transport(settings, requests.Session())
        return Sdk(
            auth_session.AuthSession(settings, tr, serialize.deserialize40, "4.0"),
            serialize.deserialize40,
            serialize.serialize40,
            tr,
            "4.0",
        )

    return build


def _message(raw: bytes) -> str:
    try:
        body = json.loads(raw.decode("utf-8", "replace"))
    except ValueError:
        return safe_error(raw.decode("utf-8", "replace"))
    if isinstance(body, dict) and body.get("message"):
        return safe_error(str(body["message"]))
    return "no message"


def _iso(value: Any) -> str | None:
    if value is None:
        return None
    return value.isoformat() if hasattr(value, "isoformat") else str(value)


class LookerClient(BiClient):
    tool = "looker"

    def __init__(self, cfg: LookerSettings, naming: Naming, timeout: float):
        super().__init__(naming, timeout)
        self.base_url = cfg.base_url.rstrip("/")
        build = _sdk_classes()
        self._sdk = build(cfg, timeout)
        self._explores: dict[tuple[str, str], dict[str, Any]] = {}
        self._lock = threading.Lock()

    # --- calls and their errors ----------------------------------------------------------------------

    def _call(self, fn: Any, *, not_found: tuple[str, str] | None = None) -> Any:
        from looker_sdk import error as sdk_error

        try:
            return fn()
        except LookerHttpError as exc:
            if exc.status in (401, 403):
                raise BiError(
                    "auth_failed", f"Looker refused the request ({exc.status}: {exc.message})"
                ) from None
            if exc.status == 404 and not_found is not None:
                raise BiError(*not_found) from None
            raise BiError("upstream_error", f"Looker answered {exc.status}: {exc.message}") from None
        except sdk_error.SDKError:
            # Raised by the SDK's login: the API key was refused (Looker answers 404 to a wrong key).
            raise BiError("auth_failed", "Looker refused the configured client id / secret") from None

    def _url(self, relative: str | None) -> str | None:
        return f"{self.base_url}{relative}" if relative else None

    # --- dashboards ------------------------------------------------------------------------------------

    def list_dashboards(self) -> list[DashboardSummary]:
        fields = "id,title,folder,created_at,updated_at,last_updated_at,view_count,url"
        found: list[DashboardSummary] = []
        offset = 0
        while True:
            page = self._call(
                lambda o=offset: self._sdk.search_dashboards(
                    fields=fields, limit=_SEARCH_PAGE, offset=o, sorts="id"
                )
            )
            for d in page:
                found.append(self._summary(d))
            if len(page) < _SEARCH_PAGE:
                return found
            offset += _SEARCH_PAGE

    def _summary(self, d: Any) -> DashboardSummary:
        return DashboardSummary(
            id=str(d.id),
            title=d.title or "",
            folder=d.folder.name if d.folder else None,
            created_at=_iso(d.created_at),
            last_updated_at=_iso(getattr(d, "last_updated_at", None) or d.updated_at),
            view_count=d.view_count,
            url=self._url(d.url) or self._url(f"/dashboards/{d.id}"),
        )

    def dashboard(self, dashboard_id: str) -> DashboardInfo:
        d = self._call(
            lambda: self._sdk.dashboard(segment(dashboard_id)),  # the SDK leaves an encoded value as it is
            not_found=("dashboard_not_found", f"Looker has no dashboard {dashboard_id!r}"),
        )
        # The filters the dashboard renders its tiles with: each one's default value (an empty one filters nothing)
        defaults = {f.name: f.default_value for f in d.dashboard_filters or [] if f.name and f.default_value}
        elements = [self._element(e, defaults) for e in d.dashboard_elements or []]
        for element in elements:
            element["dashboard_id"] = str(d.id)
        return DashboardInfo(**self._summary(d), elements=elements)

    def _explore(self, model: str, explore: str) -> dict[str, Any]:
        key = (model, explore)
        with self._lock:
            if key in self._explores:
                return self._explores[key]
        try:
            e = self._call(
                lambda: self._sdk.lookml_model_explore(
                    segment(model), segment(explore), fields="name,sql_table_name,fields"
                ),
                not_found=("upstream_error", "missing"),
            )
            fields = e.fields
            info = {
                "sql_table_name": e.sql_table_name,
                "dimensions": {f.name: f.sql for f in (fields.dimensions or [])},
                "measures": {f.name: f.sql for f in (fields.measures or [])},
                "types": {f.name: f.type for f in [*(fields.dimensions or []), *(fields.measures or [])]},
                "error": None,
            }
        except BiError as exc:
            if exc.detail != "missing":
                raise
            info = {
                "sql_table_name": None,
                "dimensions": {},
                "measures": {},
                "types": {},
                "error": f"explore '{explore}' not found in model '{model}'",
            }
        with self._lock:
            self._explores[key] = info
        return info

    def _element(self, e: Any, defaults: dict[str, str]) -> ElementInfo:
        query = (
            e.query
            or (e.look.query if e.look else None)
            or (e.result_maker.query if e.result_maker else None)
        )
        query_id = e.query_id or (query.id if query else None)
        if query is None and query_id:
            query = self._call(lambda: self._sdk.query(segment(query_id)))
        info = new_element(
            id=str(e.id),
            title=e.title or e.title_text,
            type=e.type or "vis",
            runnable=bool(e.look_id or query_id),
            look_id=str(e.look_id) if e.look_id else None,
            query_id=str(query_id) if query_id else None,
        )
        if query is None:
            return info
        listens = [
            listen
            for filterable in (e.result_maker.filterables or [] if e.result_maker else [])
            for listen in filterable.listen or []
        ]
        info["dashboard_filters"] = [
            AppliedFilter(
                name=lt.dashboard_filter_name,
                value=defaults[lt.dashboard_filter_name],
                field=lt.field,
                parameter=None,
            )
            for lt in listens
            if lt.dashboard_filter_name in defaults and lt.field
        ]
        explore = self._explore(query.model, query.view)
        fields = list(query.fields or [])
        info["model"], info["explore"] = query.model, query.view
        info["dimensions"] = [f for f in fields if f in explore["dimensions"]]
        info["measures"] = [f for f in fields if f in explore["measures"]]
        used = [f for f in fields + list((query.filters or {}).keys())]
        sqls = [explore["dimensions"].get(f) or explore["measures"].get(f) or "" for f in used]
        info["columns"] = sorted({c for sql in sqls for c in TABLE_COLUMN.findall(sql)})
        if explore["sql_table_name"]:
            ref = table_from_name(explore["sql_table_name"], self.naming, "explore_sql_table_name")
            info["tables"] = [ref] if ref else []
        unknown = [f for f in fields if f not in explore["dimensions"] and f not in explore["measures"]]
        if explore["error"]:
            info["static_error"] = f"LookML error: {explore['error']}"
        elif unknown:
            info["static_error"] = (
                f"LookML error: field '{unknown[0]}' does not exist in explore '{query.view}'"
            )
        return info

    # --- running ---------------------------------------------------------------------------------------

    def _rows(self, raw: str) -> list[dict[str, Any]]:
        rows = json.loads(raw) if raw else []
        if isinstance(rows, dict):
            rows = [rows]
        # Looker reports a database error inside a 200 answer, as a one-row result.
        if len(rows) == 1 and isinstance(rows[0], dict) and "looker_error" in rows[0]:
            raise TileError(safe_error(str(rows[0]["looker_error"])))
        return rows

    def run_element(self, element: ElementInfo, timeout: float) -> int:
        options = {"timeout": max(1, int(timeout))}
        try:
            if element.get("dashboard_filters") and element["query_id"]:
                raw = self._run_filtered(element, options)
            elif element["look_id"]:
                raw = self._call(
                    lambda: self._sdk.run_look(segment(element["look_id"]), "json", transport_options=options)
                )
            else:
                raw = self._call(
                    lambda: self._sdk.run_query(
                        segment(element["query_id"]), "json", transport_options=options
                    )
                )
        except BiError as exc:
            if exc.code == "auth_failed":
                raise
            raise TileError(exc.detail) from None
        return len(self._rows(raw))

    def _run_filtered(self, element: ElementInfo, options: dict[str, Any]) -> str:
        """The tile's query with the dashboard's filters merged into its own (a dashboard filter on a field the
        query filters too replaces it, as Looker does), run inline: what the dashboard shows."""
        from looker_sdk.sdk.api40 import models

        q = self._call(lambda: self._sdk.query(segment(element["query_id"])))
        filters = {
            **(q.filters or {}),
            **{f["field"]: f["value"] for f in element["dashboard_filters"] if f["field"]},
        }
        body = models.WriteQuery(
            model=q.model,
            view=q.view,
            fields=q.fields,
            pivots=q.pivots,
            fill_fields=q.fill_fields,
            filters=filters,
            filter_expression=q.filter_expression,
            sorts=q.sorts,
            limit=q.limit,
            dynamic_fields=q.dynamic_fields,
            query_timezone=q.query_timezone,
        )
        return self._call(lambda: self._sdk.run_inline_query("json", body, transport_options=options))

    def run_look(self, look_id: int, limit: int) -> LookRun:
        missing = ("look_not_found", f"Looker has no look {look_id}")
        look = self._call(
            lambda: self._sdk.look(segment(look_id), fields="id,title,query"), not_found=missing
        )
        fields, tables, pivots = self._look_query(look.query)
        started = time.perf_counter()
        sql = self._generated_sql(look_id, limit)
        raw = self._call(lambda: self._sdk.run_look(segment(look_id), "json", limit=limit), not_found=missing)
        try:
            rows = self._rows(raw)
        except TileError as exc:
            raise BiError("look_error", f"look {look_id} failed: {exc}") from None
        return LookRun(
            look_id=look_id,
            title=look.title,
            row_count=len(rows),
            rows=rows,
            elapsed_ms=round((time.perf_counter() - started) * 1000, 1),
            fields=fields,
            tables=tables,
            pivots=pivots,
            sql=sql,
        )

    def _generated_sql(self, look_id: int, limit: int) -> str | None:
        """The SQL Looker generates for the Look (`run_look` with result_format `sql` runs nothing); None when
        Looker would not give it (masking then fails closed on every column)."""
        try:
            text = self._call(lambda: self._sdk.run_look(segment(look_id), "sql", limit=limit))
        except BiError as exc:
            if exc.code == "auth_failed":
                raise
            return None
        if isinstance(text, bytes):
            text = text.decode("utf-8", "replace")
        return text if isinstance(text, str) and text.strip() else None

    def _look_query(self, query: Any) -> tuple[list[LookField], list[TableRef], list[str]]:
        """The Look's fields (LookML type and SQL, and the table of those of the explore's base view), the
        table its explore reads, its pivots. A joined view's table is not resolved: its fields say None."""
        if query is None:
            return [], [], []
        explore = self._explore(query.model, query.view)
        sqls = {**explore["dimensions"], **explore["measures"]}
        name = explore["sql_table_name"]
        ref = table_from_name(name, self.naming, "explore_sql_table_name") if name else None
        fields = [
            LookField(
                name=f,
                type=explore["types"].get(f),
                sql=sqls.get(f),
                relation=ref["relation"] if ref and f.partition(".")[0] == query.view else None,
            )
            for f in query.fields or []
        ]
        return fields, [ref] if ref else [], list(query.pivots or [])

    def close(self) -> None:
        with contextlib.suppress(Exception):  # a failed logout only leaves a token to expire
            self._sdk.auth.logout()
