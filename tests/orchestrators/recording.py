"""Small real HTTP servers on loopback that record every request as it arrived on the wire (raw path, headers,
body): an Airflow 3 REST stub answering the few calls the hostile-input tests make, a server that redirects
every request elsewhere, and the "elsewhere" that must never see a request carrying a credential."""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Seen:
    method: str
    path: str
    headers: dict[str, str]
    body: str


@dataclass
class Recorder:
    """One server: `mode` is "airflow" (the stub API) or "redirect" (307 to `redirect_to`) or "sink"."""

    mode: str
    redirect_to: str = ""
    seen: list[Seen] = field(default_factory=list)
    server: Any = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def __enter__(self) -> Recorder:
        recorder = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def _handle(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                body = self.rfile.read(length).decode("utf-8", "replace") if length else ""
                recorder.seen.append(Seen(self.command, self.path, dict(self.headers), body))
                status, payload, extra = recorder.answer(self.command, self.path)
                data = json.dumps(payload).encode()
                self.send_response(status)
                for key, value in extra.items():
                    self.send_header(key, value)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = do_PATCH = do_DELETE = _handle

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()

    def answer(self, method: str, path: str) -> tuple[int, Any, dict[str, str]]:
        if self.mode == "redirect":
            return 307, {}, {"location": f"{self.redirect_to}/capture{path}"}
        if self.mode == "sink":
            return 200, {"access_token": "sink"}, {}
        bare = path.split("?", 1)[0]
        if bare == "/api/v2/version":
            return 200, {"version": "3.0.2"}, {}
        if bare == "/auth/token":
            return 201, {"access_token": "stub-jwt"}, {}
        parts = bare.split("/")  # "", api, v2, dags, <dag>, dagRuns[, <run>, taskInstances, <task>]
        if parts[:4] == ["", "api", "v2", "dags"] and len(parts) == 6 and parts[5] == "dagRuns":
            if method == "POST":
                return 200, {"dag_run_id": "manual__1", "state": "queued", "run_type": "manual"}, {}
            return 200, {"dag_runs": [], "total_entries": 0}, {}
        if parts[:4] == ["", "api", "v2", "dags"] and len(parts) == 9 and parts[7] == "taskInstances":
            return 200, {"task_id": parts[8], "state": "success", "try_number": 1, "max_tries": 1}, {}
        return 404, {"detail": "Not Found"}, {}
