"""The OpenLineage endpoint on the gateway's HTTP server: `POST /api/v1/lineage` (Marquez's path and body, so a
producer needs only the gateway's URL), one event per request, answered 201 like Marquez.

Every request has passed the Host/Origin guard (app-wide middleware, before any route). Then the caller must show
`openlineage.receive.token`, or be signed in as for /mcp (the gateway's shared token, or an OIDC access token the
auth middleware verified); with neither configured, only what the loopback /mcp serves is served (a loopback
gateway without a token). The body is read up to `max_event_bytes` and no further; an event that is not valid
OpenLineage is refused with a 4xx and a stable body {"error", "detail", "hint"} naming the field, never its value.
The log line of a refusal holds the code and the size, nothing the producer sent.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from ade_platform.config import Settings
from ade_platform.lib.errors import CodedError
from mcp_bridge.errors import ERROR_CODES

log = logging.getLogger("ade.mcp.openlineage")
_STATUS = {"openlineage_invalid_event": 400, "openlineage_unauthorized": 401, "openlineage_too_large": 413}


def _refuse(code: str, detail: str, size: int | None = None) -> JSONResponse:
    log.warning("openlineage event refused: %s (%s bytes)", code, size if size is not None else "?")
    headers = (
        {"www-authenticate": 'Bearer realm="openlineage"'} if code == "openlineage_unauthorized" else None
    )
    return JSONResponse(
        {"error": code, "detail": detail, "hint": ERROR_CODES[code]},
        status_code=_STATUS[code],
        headers=headers,
    )


class OpenLineageReceiver:
    def __init__(self, settings: Settings, gateway_auth: bool):
        receive = settings.openlineage.receive
        self.settings = settings
        self.max_bytes = receive.max_event_bytes
        self.max_events = receive.max_journal_events
        self.gateway_auth = gateway_auth
        self._token = (
            hashlib.sha256(receive.token.get_secret_value().encode()).digest()
            if receive.token is not None
            else None
        )
        self._writer: Any = None

    def _allowed(self, request: Request) -> bool:
        header = request.headers.get("authorization") or ""
        if self._token is not None and header[:7].lower() == "bearer ":
            digest = hashlib.sha256(header[7:].encode("utf-8", "surrogateescape")).digest()
            if hmac.compare_digest(digest, self._token):
                return True
        if self.gateway_auth:
            from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser

            return isinstance(request.scope.get("user"), AuthenticatedUser)
        return self._token is None

    async def _body(self, request: Request) -> bytes | None:
        """The body, or None past the bound (read no further than one chunk past it)."""
        declared = request.headers.get("content-length")
        if declared is not None and declared.isdigit() and int(declared) > self.max_bytes:
            return None
        chunks, size = [], 0
        async for chunk in request.stream():
            size += len(chunk)
            if size > self.max_bytes:
                return None
            chunks.append(chunk)
        return b"".join(chunks)

    def _journal(self, event: dict[str, Any]) -> None:
        from ade_platform.lib.openlineage import append_event
        from ade_platform.store import StoreWriter

        if self._writer is None:
            self._writer = StoreWriter(self.settings.store_root, retention=self.settings.store.retention)
        append_event(self._writer.root, event, self.max_events)

    async def __call__(self, request: Request) -> Response:
        import anyio

        from ade_platform.lib.openlineage import OpenLineageError, parse_event

        if not self._allowed(request):
            return _refuse("openlineage_unauthorized", "a bearer token the gateway accepts is required")
        body = await self._body(request)
        if body is None:
            return _refuse("openlineage_too_large", f"the event is over {self.max_bytes} bytes")
        try:
            event = parse_event(body, self.max_bytes)
        except OpenLineageError as exc:
            return _refuse(exc.code, exc.detail, len(body))
        try:
            await anyio.to_thread.run_sync(self._journal, event)
        except (
            OSError,
            CodedError,
        ) as exc:  # the store refused: the producer may retry; the type only is logged
            log.warning("openlineage event not journaled: %s", type(exc).__name__)
            return JSONResponse(
                {
                    "error": "store_write_failed",
                    "detail": "the event could not be kept",
                    "hint": ERROR_CODES["store_write_failed"],
                },
                status_code=503,
            )
        return Response(status_code=201)


def add_openlineage_route(server: Any, settings: Settings) -> None:
    """Serve the endpoint on the gateway's HTTP app when `openlineage.receive.enabled`."""
    receive = settings.openlineage.receive
    if not receive.enabled:
        return
    receiver = OpenLineageReceiver(settings, gateway_auth=server.auth is not None)
    # a function, not the instance: Starlette serves a callable object as a raw ASGI app

    async def openlineage_endpoint(request: Request) -> Response:
        return await receiver(request)

    server.custom_route(receive.path, methods=["POST"])(openlineage_endpoint)
