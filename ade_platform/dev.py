"""`ade dev`: the Dagster UI and the MCP gateway (HTTP on loopback) side by side, for one machine."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx

from ade_platform.config import REPO_ROOT, Settings
from ade_platform.instance import create_instance, ensure_dagster_home
from ade_platform.ops import materialize
from ade_platform.supervise import start_group, stop_groups, stop_on_signals, taken_ports


def _bin(name: str) -> str:
    candidate = Path(sys.executable).parent / name
    return str(candidate) if candidate.exists() else (shutil.which(name) or name)


def client_config(settings: Settings) -> dict:
    """Ready-to-paste MCP client configuration (stdio) for Claude Desktop / Claude Code."""
    env = {"ADE_HOME": str(settings.home)}
    if settings.config_path:
        env["ADE_CONFIG"] = str(settings.config_path)
    return {"mcpServers": {"ade-platform": {"command": _bin("ade"), "args": ["mcp"], "env": env}}}


def _wait_http(url: str, timeout: float, proc: subprocess.Popen) -> bool:
    deadline = time.time() + timeout
    while time.time() < deadline:
        if proc.poll() is not None:
            return False
        try:
            if httpx.get(url, timeout=2).status_code < 500:
                return True
        except httpx.HTTPError:
            pass
        time.sleep(0.5)
    return False


_LOCATIONS_QUERY = (
    "{ workspaceOrError { ... on Workspace { locationEntries { name loadStatus"
    " locationOrLoadError { __typename ... on PythonError { message } } } } } }"
)


def _wait_code_location(ui_url: str, timeout: float, proc: subprocess.Popen) -> str | None:
    """The UI answers before the code location has loaded: wait until every location is LOADED.

    Returns None when all loaded cleanly, else the reason (a location's load error or the timeout): a location can
    reach LOADED with a Python error instead of definitions, and then the UI shows no assets.
    """
    deadline = time.time() + timeout
    while time.time() < deadline and proc.poll() is None:
        try:
            reply = httpx.post(f"{ui_url}/graphql", json={"query": _LOCATIONS_QUERY}, timeout=10).json()
            entries = reply["data"]["workspaceOrError"]["locationEntries"]
            if entries and all(e["loadStatus"] == "LOADED" for e in entries):
                errors = [
                    f"{e['name']}: {(e.get('locationOrLoadError') or {}).get('message', '').strip()}"
                    for e in entries
                    if (e.get("locationOrLoadError") or {}).get("__typename") == "PythonError"
                ]
                return "; ".join(errors) or None
        except (httpx.HTTPError, KeyError, TypeError, ValueError):
            pass
        time.sleep(1)
    return "the code location did not load in time" if proc.poll() is None else "the Dagster UI exited"


def run_dev(
    settings: Settings, ui_port: int = 3000, mcp_port: int | None = None, materialize_first: bool = False
) -> int:
    host = "127.0.0.1"
    mcp_port = mcp_port or settings.mcp.http.port
    # Before anything starts: a port held by a previous `ade dev` (or anything else) is named, with what to do.
    if taken := taken_ports({"the Dagster UI": ui_port, "the MCP gateway": mcp_port}, host):
        print(
            f"ade dev: {', '.join(taken)} already in use; nothing was started. Stop what holds it (a previous "
            "`ade dev` or `make demo`?  `lsof -i :PORT` names it) or pass --ui-port / --mcp-port.",
            file=sys.stderr,
        )
        return 2
    # The daemon, the UI and the gateway open the instance at once: its storage is created first, by one process.
    create_instance(ensure_dagster_home(settings))
    # Ctrl-C, SIGTERM (service managers, `kill`, the demo launcher) and SIGHUP (a closed terminal) all stop the
    # UI, the daemon and the gateway: each runs in a process group of its own, stopped as a group (the code
    # servers they start included).
    with stop_on_signals():
        return _serve(settings, host, ui_port, mcp_port, materialize_first)


def _serve(settings: Settings, host: str, ui_port: int, mcp_port: int, materialize_first: bool) -> int:
    if materialize_first:
        try:
            code = materialize(settings, "*", out=sys.stdout)
        except KeyboardInterrupt:
            return 130
        if code != 0:
            print("ade dev: materialization failed; serving anyway so you can inspect it in the UI")
    env = {**os.environ, "ADE_HOME": str(settings.home), "DAGSTER_HOME": str(settings.dagster_home)}
    # The children find this environment's tools (dbt, snow) even when `ade` was started by its full path.
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    if settings.config_path:
        env["ADE_CONFIG"] = str(settings.config_path)
    log_dir = settings.home / "logs"
    log_dir.mkdir(parents=True, exist_ok=True)
    # The children write their logs for as long as they live; the handles are closed on the way out.
    logs = {name: open(log_dir / f"{name}.log", "ab") for name in ("dagster", "mcp")}  # noqa: SIM115
    procs: dict[str, subprocess.Popen] = {}
    workspace = str(REPO_ROOT / "workspace.yaml")
    try:
        # What `dagster dev` runs, but the UI behind the gateway's Host/Origin guard (ade_platform/webui.py):
        # Dagster's own webserver checks neither, so any web page could reach its GraphQL API on loopback.
        procs["daemon"] = start_group(
            [_bin("dagster-daemon"), "run", "-w", workspace],
            cwd=REPO_ROOT,
            env=env,
            stdout=logs["dagster"],
            stderr=subprocess.STDOUT,
        )
        procs["dagster"] = start_group(
            [
                sys.executable,
                "-m",
                "ade_platform.webui",
                "-w",
                workspace,
                "--host",
                host,
                "--port",
                str(ui_port),
            ],
            cwd=REPO_ROOT,
            env=env,
            stdout=logs["dagster"],
            stderr=subprocess.STDOUT,
        )
        procs["mcp"] = start_group(
            [_bin("ade"), "mcp", "--transport", "http", "--host", host, "--port", str(mcp_port)],
            cwd=REPO_ROOT,
            env=env,
            stdout=logs["mcp"],
            stderr=subprocess.STDOUT,
        )
        _report_ready(settings, host, ui_port, mcp_port, procs, log_dir)
        while all(p.poll() is None for p in procs.values()):
            time.sleep(1)
        for name, proc in procs.items():
            if proc.poll() is not None:
                print(f"ade dev: {name} exited with code {proc.returncode}; see {log_dir}")
        return 1
    except KeyboardInterrupt:
        return 0
    finally:
        # SIGINT is what Dagster's processes treat as Ctrl-C (each stops the code server it started).
        stop_groups(procs.values(), signal.SIGINT)
        for handle in logs.values():
            handle.close()


def _report_ready(
    settings: Settings,
    host: str,
    ui_port: int,
    mcp_port: int,
    procs: dict[str, subprocess.Popen],
    log_dir: Path,
) -> None:
    ui_url = f"http://{host}:{ui_port}"
    mcp_url = f"http://{host}:{mcp_port}/mcp"
    print("Starting the Dagster UI and the MCP gateway (logs in", log_dir, ") ...")
    ui_problem = (
        _wait_code_location(ui_url, 300, procs["dagster"])
        if _wait_http(f"{ui_url}/server_info", 180, procs["dagster"])
        else "the web server did not answer"
    )
    ui_ok = ui_problem is None
    mcp_ok = _wait_http(mcp_url, 60, procs["mcp"])
    print()
    print(f"  Dagster UI   {ui_url}   {'up' if ui_ok else 'NOT UP: see ' + str(log_dir / 'dagster.log')}")
    if not ui_ok:
        print(f"               {ui_problem.splitlines()[0][:300]}")
    print(f"  MCP gateway  {mcp_url}   {'up' if mcp_ok else 'NOT UP: see ' + str(log_dir / 'mcp.log')}")
    print()
    print("MCP client configuration (stdio) for Claude Desktop (claude_desktop_config.json) or Claude Code")
    print("(`claude mcp add-json ade-platform '<the inner object>'`):")
    print(json.dumps(client_config(settings), indent=2))
    print("\nPress Ctrl-C to stop.")
    sys.stdout.flush()
