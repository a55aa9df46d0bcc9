"""dbt Cloud Administrative API v2 client (httpx): jobs, runs, run steps and run artifacts of one account.

The API wraps every answer in an envelope, `{"status": {"code", "is_success", "user_message",
"developer_message"}, "data": ..., "extra": {"pagination": {"count", "total_count"}}}`; lists page with
`offset`/`limit` (at most 100 per page). Runs carry a numeric status (1 queued, 2 starting, 3 running, 10 success,
20 error, 30 cancelled) which this client names. Failures become `DbtCloudError(code, detail)` with stable codes
(`auth_failed`, `job_not_found`, `run_not_found`, `artifact_not_found`, `rate_limited`, `connection_failed`,
`upstream_error`); the token never appears in one.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import httpx

from ade_platform.clients.urls import redirect_refused, segment
from ade_platform.lib.dbt_cloud import STATUS_NAMES, TERMINAL, canonical_run, status_name

__all__ = ["STATUS_NAMES", "TERMINAL", "Artifact", "DbtCloudClient", "DbtCloudError", "status_name"]
PAGE_LIMIT = 100
_MAX_RETRIES = 4
_MAX_BACKOFF = 8.0


class DbtCloudError(Exception):
    def __init__(self, code: str, detail: str, status: int | None = None):
        super().__init__(f"{code}: {detail}")
        self.code = code
        self.detail = detail
        self.status = status


@dataclass(frozen=True)
class Artifact:
    name: str
    content: bytes


class DbtCloudClient:
    """One account of the v2 API. Thread-safe (one httpx.Client); use as a context manager or call close()."""

    def __init__(
        self,
        base_url: str,
        account_id: int,
        token: str,
        *,
        timeout: float = 30,
        connect_timeout: float = 5,
        max_retries: int = _MAX_RETRIES,
        transport: httpx.BaseTransport | None = None,
    ):
        self.base_url = base_url.rstrip("/")
        self.account_id = account_id
        self.max_retries = max_retries
        self._token = token
        self._http = httpx.Client(
            base_url=f"{self.base_url}/accounts/{account_id}",
            headers={"Authorization": f"Token {token}", "Accept": "application/json"},
            timeout=httpx.Timeout(timeout, connect=connect_timeout),
            transport=transport,
        )

    @classmethod
    def from_settings(cls, section: Any) -> DbtCloudClient:
        return cls(
            section.base_url,
            section.account_id,
            section.api_token.get_secret_value(),
            timeout=section.timeout_seconds,
        )

    def __enter__(self) -> DbtCloudClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._http.close()

    # -- the endpoints -------------------------------------------------------------------------------------------

    def list_jobs(
        self, project_id: int | None = None, environment_id: int | None = None
    ) -> list[dict[str, Any]]:
        params = {
            "project_id": project_id,
            "environment_id": environment_id,
            "order_by": "id",
            "include_related": '["environment"]',
        }
        return list(self._pages("/jobs/", params))

    def get_job(self, job_id: int) -> dict[str, Any]:
        return self._get(f"/jobs/{int(job_id)}/", not_found="job_not_found", what=f"job {job_id}")

    def trigger_job(self, job_id: int, cause: str, steps_override: list[str] | None = None) -> dict[str, Any]:
        """Start a run. The caller has checked `steps_override` (ade_platform/lib/dbt/command_policy.py)."""
        body: dict[str, Any] = {"cause": cause}
        if steps_override:
            body["steps_override"] = list(steps_override)
        return self._request(
            "POST", f"/jobs/{int(job_id)}/run/", json=body, not_found="job_not_found", what=f"job {job_id}"
        )["data"]

    def get_run(self, run_id: int, *, steps: bool = True) -> dict[str, Any]:
        related = '["trigger","run_steps","job"]' if steps else '["trigger"]'
        params = {"include_related": related}
        return self._get(
            f"/runs/{int(run_id)}/", params=params, not_found="run_not_found", what=f"run {run_id}"
        )

    def list_runs(
        self,
        job_id: int | None = None,
        status: int | None = None,
        *,
        limit: int | None = None,
        order_by: str = "-id",
    ) -> list[dict[str, Any]]:
        """Runs newest first (by default), each with its `trigger` (cause, steps_override); `limit` stops after that
        many."""
        params = {
            "job_definition_id": job_id,
            "status": status,
            "order_by": order_by,
            "include_related": '["trigger"]',
        }
        runs: list[dict[str, Any]] = []
        for run in self._pages("/runs/", params, page_size=min(PAGE_LIMIT, limit or PAGE_LIMIT)):
            runs.append(run)
            if limit is not None and len(runs) >= limit:
                break
        return runs

    def last_run(self, job_id: int, status: int | None = None) -> dict[str, Any] | None:
        runs = self.list_runs(job_id, status, limit=1)
        return runs[0] if runs else None

    def list_artifacts(self, run_id: int) -> list[str]:
        return list(
            self._get(f"/runs/{int(run_id)}/artifacts/", not_found="run_not_found", what=f"run {run_id}")
            or []
        )

    def get_artifact(self, run_id: int, name: str, step: int | None = None) -> Artifact:
        params = {"step": step} if step is not None else None
        response = self._send(
            "GET",
            f"/runs/{int(run_id)}/artifacts/{'/'.join(segment(part) for part in name.split('/'))}",
            params=params,
            what=f"artifact {name} of run {run_id}",
        )
        if response.status_code == 404:
            # The same 404 says "no such run" or "the run wrote no such file": tell them apart.
            self.get_run(run_id, steps=False)
            raise DbtCloudError("artifact_not_found", f"run {run_id} has no artifact {name}", 404)
        self._raise_for_status(response, not_found="artifact_not_found", what=f"artifact {name}")
        return Artifact(name, response.content)

    def latest_artifact(
        self, job_id: int, name: str, *, limit: int = 20, status: int | None = None, canonical: bool = True
    ) -> tuple[dict[str, Any], Artifact] | None:
        """The newest completed run of a job (with that status, if given) that wrote `name`, and the file. With
        `canonical` (the default), only runs that may stand for the job: never an agent's steps-override run."""
        for run in self.list_runs(job_id, status, limit=limit):
            if run.get("status") not in TERMINAL or (canonical and not canonical_run(run)):
                continue
            try:
                return run, self.get_artifact(run["id"], name)
            except DbtCloudError as exc:
                if exc.code != "artifact_not_found":
                    raise
        return None

    # -- transport -----------------------------------------------------------------------------------------------

    def _pages(
        self, path: str, params: dict[str, Any], page_size: int = PAGE_LIMIT
    ) -> Iterator[dict[str, Any]]:
        offset = 0
        query = {k: v for k, v in params.items() if v is not None}
        while True:
            payload = self._request("GET", path, params={**query, "offset": offset, "limit": page_size})
            page = payload.get("data") or []
            yield from page
            total = ((payload.get("extra") or {}).get("pagination") or {}).get("total_count")
            offset += len(page)
            if not page or len(page) < page_size or (total is not None and offset >= total):
                return

    def _get(
        self,
        path: str,
        params: dict[str, Any] | None = None,
        *,
        not_found: str = "upstream_error",
        what: str = "",
    ) -> Any:
        return self._request("GET", path, params=params, not_found=not_found, what=what)["data"]

    def _request(
        self,
        method: str,
        path: str,
        *,
        params: dict[str, Any] | None = None,
        json: Any = None,
        not_found: str = "upstream_error",
        what: str = "",
    ) -> dict[str, Any]:
        response = self._send(method, path, params=params, json=json, what=what)
        self._raise_for_status(response, not_found=not_found, what=what)
        try:
            payload = response.json()
        except ValueError:
            raise DbtCloudError("upstream_error", "dbt Cloud answered with a body that is not JSON") from None
        if not isinstance(payload, dict) or "data" not in payload:
            raise DbtCloudError("upstream_error", "dbt Cloud answered without the v2 response envelope")
        return payload

    def _send(
        self,
        method: str,
        path: str,
        *,
        params: dict[str, Any] | None = None,
        json: Any = None,
        what: str = "",
    ) -> httpx.Response:
        """One request with retries: 429 honours Retry-After, 5xx and connection errors back off (capped)."""
        attempt = 0
        while True:
            try:
                response = self._http.request(method, path, params=params, json=json)
            except httpx.TimeoutException:
                if attempt >= self.max_retries:
                    raise DbtCloudError("connection_failed", "dbt Cloud did not answer in time") from None
            except httpx.TransportError:
                if attempt >= self.max_retries:
                    raise DbtCloudError(
                        "connection_failed", f"cannot reach dbt Cloud at {self.base_url}"
                    ) from None
            else:
                if response.status_code == 429 and attempt < self.max_retries:
                    time.sleep(_retry_after(response, attempt))
                    attempt += 1
                    continue
                # A trigger is not idempotent: a 5xx after a POST may have created the run, so never repeat it.
                if response.status_code >= 500 and method == "GET" and attempt < self.max_retries:
                    time.sleep(_backoff(attempt))
                    attempt += 1
                    continue
                return response
            if method != "GET":
                raise DbtCloudError("connection_failed", f"cannot reach dbt Cloud at {self.base_url}")
            time.sleep(_backoff(attempt))
            attempt += 1

    def _raise_for_status(self, response: httpx.Response, *, not_found: str, what: str) -> None:
        code = response.status_code
        if 300 <= code < 400:  # not followed: httpx's default here, so the token never goes elsewhere
            raise DbtCloudError("upstream_error", redirect_refused("dbt Cloud", response), code)
        if code < 400:
            return
        message = _user_message(response)
        if code in (401, 403):
            raise DbtCloudError("auth_failed", f"dbt Cloud refused the token ({code}: {message})", code)
        if code == 404:
            raise DbtCloudError(
                not_found, f"{what or 'resource'} not found in account {self.account_id}", code
            )
        if code == 429:
            raise DbtCloudError("rate_limited", "dbt Cloud kept answering 429 Too Many Requests", code)
        raise DbtCloudError("upstream_error", f"dbt Cloud answered {code}: {message}", code)


def _user_message(response: httpx.Response) -> str:
    try:
        status = response.json().get("status") or {}
        message = str(status.get("user_message") or "")
    except (ValueError, AttributeError):
        message = ""
    return message[:300] or response.reason_phrase


def _retry_after(response: httpx.Response, attempt: int) -> float:
    try:
        return min(max(float(response.headers.get("Retry-After", "")), 0.0), _MAX_BACKOFF * 4)
    except ValueError:
        return _backoff(attempt)


def _backoff(attempt: int) -> float:
    return min(0.25 * 2**attempt, _MAX_BACKOFF)
