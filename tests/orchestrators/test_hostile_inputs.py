"""Attacks through MCP on what the orchestrator and BI tools send, log and record (issue 23, sections 2 and 5):
path parameters that try to reach another endpoint, redirects that try to carry credentials to another host,
secrets in a task's log (Dagster backend) and in a call's arguments and cause (the audit run's tags), and
hostile regex patterns. Real servers throughout: recording HTTP servers on loopback (tests/orchestrators/
recording.py), a temporary Dagster instance, the gateway over fastmcp's in-memory client."""

from __future__ import annotations

import base64
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest

from ade_platform.config import AirflowSettings, BiSettings, LookerSettings, OrchestratorSettings, Settings
from ade_platform.live import flush_all
from mcp_bridge.context import BridgeContext
from mcp_bridge.server import build_server
from tests.conftest import settings_for
from tests.helpers import call_tool, call_tools
from tests.orchestrators.recording import Recorder
from tests.unit.bounded import run_bounded

pytestmark = pytest.mark.integration
AIRFLOW_PASSWORD = "af-pass-Kq7Wm2Zr9"
DBT_TOKEN = "cloud-tok-Hv4Np8Xc3Lm6Rt1"  # configured in another section than the orchestrators'
MCP_TOKEN = "mcp/tok+en with&odd=chars-0123456789abcdef"
LOOKER_SECRET = "looker-secret-Bz5Qy1Ws8"


@pytest.fixture
def home(tmp_path: Path) -> Iterator[Path]:
    saved = os.environ.pop("DAGSTER_HOME", None)
    yield tmp_path / "ade"
    if saved is not None:
        os.environ["DAGSTER_HOME"] = saved


def _settings(home: Path, **update: Any) -> Settings:
    base = settings_for(
        home,
        ADE_DBT_CLOUD_URL="http://127.0.0.1:9/api/v2",  # configured (the section is off without a URL), never called
        DBT_CLOUD_API_TOKEN=DBT_TOKEN,
        ADE_MCP_TOKEN=MCP_TOKEN,
    )
    return base.model_copy(update=update)


def _server(settings: Settings, only: str) -> Any:
    (settings.dagster_home).mkdir(parents=True, exist_ok=True)
    ctx = BridgeContext.from_settings(settings)
    return build_server(settings, only=only, ctx=ctx)


def _airflow(url: str) -> OrchestratorSettings:
    return OrchestratorSettings(
        airflow=AirflowSettings(
            base_url=url, username="admin", password=AIRFLOW_PASSWORD, api_version="v2", dags=["nightly"]
        )
    )


def test_path_parameters_stay_in_their_segment(home: Path) -> None:
    with Recorder("airflow") as airflow:
        server = _server(_settings(home, orchestrators=_airflow(airflow.url)), "orchestrator")
        ok, task = call_tool(
            server,
            "orchestrator_get_task_status",
            {"dag_id": "../../admin", "run_id": "a?x=1", "task_id": "t#f/../..", "backend": "airflow"},
        )
    paths = [seen.path for seen in airflow.seen if seen.path.startswith("/api/v2/dags")]
    # one request, every value inside its own segment; nothing reached /api/admin or carried a query string
    assert paths == ["/api/v2/dags/..%2F..%2Fadmin/dagRuns/a%3Fx%3D1/taskInstances/t%23f%2F..%2F.."], [
        s.path for s in airflow.seen
    ]
    assert ok and task["task_id"] == "t#f/../.."  # the answer echoes the request, whatever the backend said


def test_a_dot_segment_is_not_resolved(home: Path) -> None:
    with Recorder("airflow") as airflow:
        server = _server(_settings(home, orchestrators=_airflow(airflow.url)), "orchestrator")
        call_tool(server, "orchestrator_get_task_status", {"dag_id": "..", "run_id": ".", "task_id": "x", "backend": "airflow"})  # fmt: skip
    assert [s.path for s in airflow.seen if "dags" in s.path] == [
        "/api/v2/dags/%2E%2E/dagRuns/%2E/taskInstances/x"
    ]


def test_a_redirect_to_another_host_does_not_carry_the_credentials(home: Path) -> None:
    with Recorder("sink") as elsewhere, Recorder("redirect", redirect_to=elsewhere.url.replace("127.0.0.1", "localhost")) as redirector:  # fmt: skip
        settings = _settings(
            home,
            orchestrators=_airflow(redirector.url),
            bi=BiSettings(
                looker=LookerSettings(
                    base_url=redirector.url, client_id="looker-id", client_secret=LOOKER_SECRET
                )
            ),
        )
        (ok_a, airflow), (ok_s, status) = call_tools(
            _server(settings, "orchestrator"),
            [
                ("orchestrator_get_last_run", {"dag_id": "nightly", "status": "any", "backend": "airflow"}),
                ("orchestrator_get_task_status", {"dag_id": "d", "run_id": "r", "task_id": "t", "backend": "airflow"}),
            ],
        )  # fmt: skip
        ok_l, looker = call_tool(_server(settings, "bi-api"), "bi_list_dashboards", {"tool": "looker"})
    assert redirector.seen, "the clients never reached the redirecting server"
    assert elsewhere.seen == [], [(s.method, s.path, s.body) for s in elsewhere.seen]
    for ok, error in ((ok_a, airflow), (ok_s, status), (ok_l, looker)):
        assert not ok and error["error"] == "upstream_error" and "not followed" in error["detail"], error
        assert AIRFLOW_PASSWORD not in json.dumps(error) and LOOKER_SECRET not in json.dumps(error)


def test_secrets_in_a_task_log_do_not_reach_the_agent(home: Path) -> None:
    import dagster as dg

    leaks = {
        "raw": f"using token {DBT_TOKEN}",
        "url-encoded": f"GET /x?token_value={quote(MCP_TOKEN, safe='')}",
        "base64": "X-Upstream: " + base64.b64encode(f"svc:{DBT_TOKEN}".encode()).decode(),
        "split": f"wrapped {DBT_TOKEN[:9]}\n    {DBT_TOKEN[9:]} end",
        "repr": "conn {'user': 'etl', 'password': 'repr-pass-77'}",
        "flag": "exec snow sql --password cli-pass-88 -q x",
        "userinfo": "fetch https://bob:url-pass-99@files.internal/a",
        "shape": "header dbtc_AbCdEfGhIjKlMnOpQrStUv12",
    }
    fragments = [DBT_TOKEN, DBT_TOKEN[9:], MCP_TOKEN, quote(MCP_TOKEN, safe="")[:20], "repr-pass-77",
                 "cli-pass-88", "url-pass-99", "dbtc_AbCdEfGhIjKlMnOpQrStUv12",
                 base64.b64encode(f"svc:{DBT_TOKEN}".encode()).decode()[4:20]]  # fmt: skip

    @dg.op
    def leaky_step(context) -> None:  # unannotated: Dagster cannot resolve string annotations here
        for line in leaks.values():
            context.log.info(line)

    @dg.job
    def leaky() -> None:
        leaky_step()

    settings = _settings(home)
    settings.dagster_home.mkdir(parents=True)
    instance = dg.DagsterInstance.from_config(str(settings.dagster_home))
    run = leaky.execute_in_process(
        instance=instance, run_config={"loggers": {"console": {"config": {"log_level": "ERROR"}}}}
    )
    server = _server(settings, "orchestrator")
    ok, logs = call_tool(
        server,
        "orchestrator_fetch_logs",
        {"dag_id": "leaky", "run_id": run.run_id, "task_id": "leaky_step", "backend": "dagster"},
    )
    assert ok and "wrapped" in logs["log_text"] and "using token" in logs["log_text"]
    for fragment in fragments:
        assert fragment not in logs["log_text"], (fragment, logs["log_text"])


def test_audit_tags_hold_no_secret(home: Path) -> None:
    from dagster import DagsterInstance, RunsFilter

    settings = _settings(home)
    with Recorder("airflow") as airflow:
        settings = _settings(home, orchestrators=_airflow(airflow.url))
        server = _server(settings, "orchestrator")
        calls = call_tools(
            server,
            [
                (
                    "orchestrator_trigger_dag",
                    {
                        "dag_id": "nightly",
                        "backend": "airflow",
                        "conf": {
                            "reason": f"rerun; the token is {DBT_TOKEN}",
                            "note": "db password=conf-pass-11",
                            "source": "postgres://etl:conf-pass-22@db/x",
                            "header": "Authorization: Bearer conf-bearer-33",
                        },
                    },
                ),
                (  # a read-only call: its audit run is written in the background (the fast path)
                    "orchestrator_get_task_status",
                    {"dag_id": f"d-{AIRFLOW_PASSWORD}", "run_id": "r", "task_id": "t", "backend": "airflow"},
                ),
            ],
        )
    assert all(ok for ok, _ in calls), calls
    flush_all(120)
    instance = DagsterInstance.from_config(str(settings.dagster_home))
    runs = instance.get_runs(filters=RunsFilter(tags={"ade/source": "mcp"}))
    tools = {run.tags["ade/tool"]: run.tags for run in runs}
    assert set(tools) == {"orchestrator_trigger_dag", "orchestrator_get_task_status"}, tools
    recorded = json.dumps(tools)
    for secret in (DBT_TOKEN, AIRFLOW_PASSWORD, "conf-pass-11", "conf-pass-22", "conf-bearer-33"):
        assert secret not in recorded, (secret, recorded)
    assert "rerun; the token is ***" in tools["orchestrator_trigger_dag"]["ade/cause"]


def test_hostile_patterns_through_mcp_are_refused_within_a_memory_bound(tmp_path: Path) -> None:
    # In a child under 1 GiB of address space: the old engine grew this 31-character pattern to tens of GB.
    found = run_bounded(
        "import json, os\n"
        "from tests.conftest import settings_for\n"
        "from mcp_bridge.server import build_server\n"
        "from tests.helpers import call_tool\n"
        f"settings = settings_for(__import__('pathlib').Path({str(tmp_path / 'ade')!r}))\n"
        "server = build_server(settings, only='orchestrator')\n"
        "args = {'log_text': 'a' * 10_000, 'patterns': ['(?:(?:(?:a{1000}){1000}){1000})', '(a*)(a*)(a*)'] + ['(a)'] * 98}\n"
        "ok, found = call_tool(server, 'orchestrator_detect_patterns', args)\n"
        "print(json.dumps([ok, len(json.dumps(found)), found['results'][0], found['results'][1]['match_count']]))"
    )
    ok, size, bomb, matched = found
    assert ok and bomb["error"] == "pattern_too_complex" and matched >= 1
    assert size < 400_000, size  # a 10 KB log made answers of more than a megabyte
