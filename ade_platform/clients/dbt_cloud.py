"""dbt Cloud Administrative API v2 client (httpx): jobs, runs, run steps and run artifacts of one account.

The API wraps every answer in an envelope, `{"status": {"code", "is_success", "user_message",
"developer_message"}, "data": ..., "extra": {"pagination": {"count", "total_count"}}}`; lists page with
`offset`/`limit` (at most 100 per page). Runs carry a numeric status (1 queued, 2 starting, 3 running, 10 success,
20 error, 30 cancelled) which this client names. Failures become `DbtCloudError(code, detail)` with stable codes
(`auth_failed`, `job_not_found`, `run_not_found`, `artifact_not_found`, `rate_limited`, `connection_failed`,
`upstream_error`); the token never appears in one. Requests go through the shared HTTP helper (clients/http.py):
retries on 429 and on 5xx and connection failures of reads (never a trigger's), redirects refused.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import httpx

from ade_platform.clients.http import HttpClient, redirect_refused, segment
from ade_platform.lib.dbt_cloud import STATUS_NAMES, TERMINAL, canonical_run, status_name
from ade_platform.lib.errors import CodedError

__all__ = [
    "STATUS_NAMES",
    "TERMINAL",
    "Artifact",
    "DbtCloudClient",
    "DbtCloudError",
    "open_client",
    "status_name",
]
PAGE_LIMIT = 100


class DbtCloudError(CodedError):
    """`status` is the HTTP status of the answer that failed, when there was one (not shown to an agent)."""

    def __init__(self, code: str, detail: str, status: int | None = None, hint: str | None = None):
        super().__init__(code, detail, hint)
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
        transport: httpx.BaseTransport | None = None,
    ):
        self.base_url = base_url.rstrip("/")
        self.account_id = account_id
        self._token = token
        # Redirects are not followed, so the token never goes elsewhere.
        self._http = HttpClient(
            f"{self.base_url}/accounts/{account_id}",
            name="dbt Cloud",
            error=DbtCloudError,
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
        response = self._http.request(
            "GET",
            f"/runs/{int(run_id)}/artifacts/{'/'.join(segment(part) for part in name.split('/'))}",
            params=params,
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
        response = self._http.request(method, path, params=params, json=json)
        self._raise_for_status(response, not_found=not_found, what=what)
        try:
            payload = response.json()
        except ValueError:
            raise DbtCloudError("upstream_error", "dbt Cloud answered with a body that is not JSON") from None
        if not isinstance(payload, dict) or "data" not in payload:
            raise DbtCloudError("upstream_error", "dbt Cloud answered without the v2 response envelope")
        return payload

    def _raise_for_status(self, response: httpx.Response, *, not_found: str, what: str) -> None:
        code = response.status_code
        if 300 <= code < 400:  # not followed (the helper refuses a redirect): a 3xx of another kind
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


def open_client(settings: Any, name: str | None = None) -> DbtCloudClient:
    """The client of the configured dbt Cloud account (one per configuration: `name` is accepted for the shared
    factory signature and ignored); `dbt_cloud_not_configured` without a `dbt_cloud:` section, `auth_failed` when
    its token is empty."""
    section = settings.dbt_cloud
    if section is None:
        raise DbtCloudError("dbt_cloud_not_configured", "no dbt_cloud: section in the configuration")
    if not section.api_token.get_secret_value():
        raise DbtCloudError(
            "auth_failed",
            "dbt_cloud.api_token is empty",
            hint="Set the environment variable dbt_cloud.api_token references to a service token.",
        )
    return DbtCloudClient.from_settings(section)
