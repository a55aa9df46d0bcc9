"""The HTTP face of the emulated dbt Cloud account: /api/v2/accounts/<id>/... as the Administrative API v2 answers.

Faults for tests: `POST /_emulator/rate-limit {"count": n, "retry_after": s}` makes the next n API requests answer
429 with that Retry-After; `GET /_emulator/requests` counts the API requests served (and 429s sent);
`POST /_emulator/hold {"held": true}` keeps queued runs from starting (every run slot busy) until `{"held": false}`.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, unquote, urlparse

from ade_platform.emulators.dbt_cloud import ACCOUNT_ID, DEMO_TOKEN
from ade_platform.emulators.dbt_cloud.account import (
    ARTIFACTS,
    ENVIRONMENTS,
    REPO_ROOT,
    Account,
    command_error,
)
from ade_platform.lib.http_guard import HostPolicy, local_policy, refusal_body

MAX_LIMIT = 100
_ROUTE = re.compile(r"^/api/v2/accounts/(?P<account>\d+)(?P<rest>/.*)$")


class Faults:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.rate_limited = 0
        self.retry_after = 1
        self.requests = 0
        self.throttled = 0
        self.changes = 0  # API requests other than GET (a trigger, a cancel): what a read must never send


class ApiError(Exception):
    def __init__(self, code: int, message: str, developer_message: str = ""):
        self.code, self.message, self.developer_message = code, message, developer_message


def envelope(
    data: Any, code: int = 200, extra: dict[str, Any] | None = None, message: str = "Success!"
) -> dict:
    body: dict[str, Any] = {
        "status": {"code": code, "is_success": code < 400, "user_message": message, "developer_message": ""},
        "data": data,
    }
    if extra is not None:
        body["extra"] = extra
    return body


def _int(query: dict[str, list[str]], name: str, default: int | None = None) -> int | None:
    values = query.get(name)
    if not values or values[0] == "":
        return default
    try:
        return int(values[0])
    except ValueError:
        raise ApiError(400, f"Invalid value for {name}.") from None


def _related(query: dict[str, list[str]]) -> set[str]:
    raw = (query.get("include_related") or [""])[0]
    try:
        value = json.loads(raw) if raw.startswith("[") else [v for v in raw.split(",") if v]
    except ValueError:
        raise ApiError(400, "include_related must be a JSON list.") from None
    return {str(v) for v in value}


def paginate(items: list[dict[str, Any]], query: dict[str, list[str]], filters: dict[str, Any]) -> dict:
    offset = _int(query, "offset", 0) or 0
    limit = _int(query, "limit", MAX_LIMIT) or MAX_LIMIT
    if limit > MAX_LIMIT or limit < 1 or offset < 0:
        raise ApiError(400, f"limit must be between 1 and {MAX_LIMIT}, offset at least 0.")
    page = items[offset : offset + limit]
    extra = {
        "filters": {k: v for k, v in filters.items() if v is not None},
        "order_by": (query.get("order_by") or [None])[0],
        "pagination": {"count": len(page), "total_count": len(items)},
    }
    return envelope(page, extra=extra)


class Api:
    def __init__(self, account: Account, base_url: str, token: str, faults: Faults):
        self.account, self.base_url, self.token, self.faults = account, base_url, token, faults

    def handle(self, method: str, path: str, query: dict[str, list[str]], body: Any) -> tuple[int, Any, str]:
        """(status code, body, content type) for one API request (authentication already checked)."""
        match = _ROUTE.match(path)
        if not match:
            raise ApiError(404, "The requested resource was not found.")
        if int(match["account"]) != ACCOUNT_ID:
            raise ApiError(403, "You do not have permission to access this account.")
        rest = match["rest"]
        acct = self.account
        if method == "GET" and rest == "/jobs/":
            project, env = _int(query, "project_id"), _int(query, "environment_id")
            jobs = [
                j.as_api(ENVIRONMENTS, _related(query))
                for j in acct.jobs.values()
                if (project is None or project == j.as_api(ENVIRONMENTS, set())["project_id"])
                and (env is None or env == j.environment_id)
            ]
            jobs.sort(key=lambda j: j["id"], reverse=(query.get("order_by") or [""])[0] == "-id")
            return 200, paginate(jobs, query, {"project_id": project, "environment_id": env}), "json"
        if m := re.fullmatch(r"/jobs/(\d+)/", rest):
            if method != "GET":
                raise ApiError(405, "Method not allowed.")
            return 200, envelope(self._job(int(m[1])).as_api(ENVIRONMENTS, _related(query))), "json"
        if m := re.fullmatch(r"/jobs/(\d+)/run/", rest):
            if method != "POST":
                raise ApiError(405, "Method not allowed.")
            job = self._job(int(m[1]))
            if (
                not isinstance(body, dict)
                or not isinstance(body.get("cause"), str)
                or not body["cause"].strip()
            ):
                raise ApiError(400, "The request was invalid. Please double check the provided data and try again.",
                               "cause: This field is required.")  # fmt: skip
            if len(body["cause"]) > 255:
                raise ApiError(400, "The request was invalid.", "cause: at most 255 characters.")
            steps = body.get("steps_override")
            if steps is not None:
                if not isinstance(steps, list) or not steps or not all(isinstance(s, str) for s in steps):
                    raise ApiError(400, "The request was invalid.", "steps_override: a list of dbt commands.")
                for step in steps:
                    if problem := command_error(step):
                        raise ApiError(400, "The request was invalid.", f"steps_override: {problem}")
            run = acct.trigger(job, body["cause"], steps)
            return 200, envelope(run.as_api(self.base_url, ENVIRONMENTS, _related(query))), "json"
        if method == "GET" and rest == "/runs/":
            job_id, status = _int(query, "job_definition_id"), _int(query, "status")
            order = (query.get("order_by") or ["id"])[0]
            runs = [
                r
                for r in list(acct.runs.values())
                if (job_id is None or r.job.id == job_id) and (status is None or r.status == status)
            ]
            key = order.lstrip("-")
            runs.sort(
                key=lambda r: r.created_at if key == "created_at" else r.id, reverse=order.startswith("-")
            )
            related = _related(query)
            data = [r.as_api(self.base_url, ENVIRONMENTS, related) for r in runs]
            return 200, paginate(data, query, {"job_definition_id": job_id, "status": status}), "json"
        if m := re.fullmatch(r"/runs/(\d+)/", rest):
            run = self._run(int(m[1]))
            return 200, envelope(run.as_api(self.base_url, ENVIRONMENTS, _related(query))), "json"
        if m := re.fullmatch(r"/runs/(\d+)/cancel/", rest):
            run = self._run(int(m[1]))
            acct.cancel(run)
            return 200, envelope(run.as_api(self.base_url, ENVIRONMENTS, set())), "json"
        if m := re.fullmatch(r"/runs/(\d+)/artifacts/", rest):
            run = self._run(int(m[1]))
            return 200, envelope(sorted(run.artifacts)), "json"
        if m := re.fullmatch(r"/runs/(\d+)/artifacts/(.+)", rest):
            run = self._run(int(m[1]))
            name, step = unquote(m[2]), _int(query, "step")
            path = acct.step_artifact(run, step, name) if step is not None else run.artifacts.get(name)
            if path is None or name not in ARTIFACTS:
                raise ApiError(404, "The requested resource was not found.")
            return 200, path.read_bytes(), "raw"
        raise ApiError(404, "The requested resource was not found.")

    def _job(self, job_id: int):
        job = self.account.jobs.get(job_id)
        if job is None:
            raise ApiError(404, "The requested resource was not found.")
        return job

    def _run(self, run_id: int):
        run = self.account.runs.get(run_id)
        if run is None:
            raise ApiError(404, "The requested resource was not found.")
        return run


def make_handler(api: Api, hosts: HostPolicy) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            pass  # one line per request would drown the demo log

        def _send(
            self, code: int, payload: Any, kind: str = "json", headers: dict[str, str] | None = None
        ) -> None:
            data = payload if kind == "raw" else json.dumps(payload).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for k, v in (headers or {}).items():
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(data)

        def _body(self) -> Any:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            if not raw:
                return None
            try:
                return json.loads(raw)
            except ValueError:
                raise ApiError(400, "The request body is not valid JSON.") from None

        def _dispatch(self, method: str) -> None:
            # DNS rebinding / cross-site requests from a browser: refused before anything else.
            refused = hosts.refusal(self.headers.get_all("Host") or [], self.headers.get_all("Origin") or [])
            if refused:
                self.close_connection = True  # its body (if any) is left unread
                return self._send(403, refusal_body(refused), kind="raw")
            url = urlparse(self.path)
            query = parse_qs(url.query, keep_blank_values=True)
            faults = api.faults
            try:
                if url.path == "/health":
                    return self._send(200, {"status": "ok"})
                if url.path == "/_emulator/rate-limit" and method == "POST":
                    body = self._body() or {}
                    with faults.lock:
                        faults.rate_limited = int(body.get("count", 1))
                        faults.retry_after = int(body.get("retry_after", 1))
                    return self._send(200, {"rate_limited": faults.rate_limited})
                if url.path == "/_emulator/hold" and method == "POST":
                    held = bool((self._body() or {}).get("held", True))
                    api.account.hold(held)
                    return self._send(200, {"held": held})
                if url.path == "/_emulator/requests":
                    counts = {"requests": faults.requests, "throttled": faults.throttled}
                    return self._send(200, {**counts, "changes": faults.changes})
                with faults.lock:
                    faults.requests += 1
                    faults.changes += method != "GET"
                    throttle = faults.rate_limited > 0
                    if throttle:
                        faults.rate_limited -= 1
                        faults.throttled += 1
                if throttle:
                    body = envelope(None, 429, message="Too many requests. Please retry later.")
                    return self._send(429, body, headers={"Retry-After": str(faults.retry_after)})
                auth = self.headers.get("Authorization") or ""
                scheme, _, token = auth.partition(" ")
                if scheme.lower() not in ("token", "bearer") or token.strip() != api.token:
                    return self._send(401, envelope(None, 401, message="Invalid token."))
                body = self._body() if method == "POST" else None
                code, payload, kind = api.handle(method, url.path, query, body)
                self._send(code, payload, kind)
            except ApiError as exc:
                payload = envelope(None, exc.code, message=exc.message)
                payload["status"]["developer_message"] = exc.developer_message
                self._send(exc.code, payload)

        def do_GET(self) -> None:
            self._dispatch("GET")

        def do_POST(self) -> None:
            self._dispatch("POST")

    return Handler


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Local dbt Cloud Administrative API v2 emulator.")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8791)
    parser.add_argument("--project-dir", type=Path, default=Path(os.environ.get(
        "ADE_DBT_CLOUD_EMULATOR_PROJECT", REPO_ROOT / "dbt_demo")))  # fmt: skip
    parser.add_argument("--no-history", action="store_true", help="Start with no scheduled runs queued.")
    args = parser.parse_args(argv)
    home = Path(os.environ.get("ADE_HOME") or Path.cwd() / ".ade")
    state = home / "emulators" / "dbt_cloud"
    state.mkdir(parents=True, exist_ok=True)
    project = args.project_dir.resolve()
    recipe = project / "recipes" / "jaffle_shop.recipe.yml"
    account = Account(state, project, recipe if recipe.is_file() else None)
    token = os.environ.get("DBT_CLOUD_EMULATOR_TOKEN") or DEMO_TOKEN
    base = f"http://{args.host}:{args.port}"
    server = ThreadingHTTPServer(
        (args.host, args.port),
        make_handler(Api(account, base, token, Faults()), local_policy(args.port, args.host)),
    )
    server.daemon_threads = True
    if not args.no_history and os.environ.get("ADE_DBT_CLOUD_EMULATOR_HISTORY", "1") != "0":
        # The account's history: last night's scheduled runs of the scheduled jobs (one succeeds, one fails).
        for job in account.jobs.values():
            if job.cron:
                account.trigger(job, "Scheduled run", None, triggered_by="scheduler")

    def stop(*_: Any) -> None:
        account.stop()
        threading.Thread(target=server.shutdown, daemon=True).start()

    signal.signal(signal.SIGTERM, stop)
    print(f"dbt Cloud emulator: account {ACCOUNT_ID} at {base}/api/v2", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        account.stop()
        server.server_close()
    return 0
