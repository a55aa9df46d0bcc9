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
from ade_platform.ops import materialize, prepare_dagster_home


def _bin(name: str) -> str:
    candidate = Path(sys.executable).parent / name
    return str(candidate) if candidate.exists() else (shutil.which(name) or name)


def client_config(settings: Settings) -> dict:
    """Ready-to-paste MCP client configuration (stdio) for Claude Desktop / Claude Code."""
    env = {"ADE_HOME": str(settings.home)}
    if settings.config_path:
        env["ADE_CONFIG"] = str(settings.config_path)
    return {"mcpServers": {"ade-platform": {"command": _bin("ade"), "args": ["mcp"], "env": env}}}


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


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
    return "the code location did not load in time" if proc.poll() is None else "dagster dev exited"


def run_dev(
    settings: Settings, ui_port: int = 3000, mcp_port: int | None = None, materialize_first: bool = False
) -> int:
    prepare_dagster_home(settings)
    # Stop cleanly on Ctrl-C and on SIGTERM (service managers, `kill`), even when started from a shell that
    # launched us with SIGINT ignored (background jobs of non-interactive shells are).
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, _interrupt)
    if materialize_first:
        code = materialize(settings, "*", out=sys.stdout)
        if code != 0:
            print("ade dev: materialization failed; serving anyway so you can inspect it in the UI")
    host = "127.0.0.1"
    mcp_port = mcp_port or settings.mcp.http.port
    env = {**os.environ, "ADE_HOME": str(settings.home), "DAGSTER_HOME": str(settings.dagster_home)}
    # The children find this environment's tools (dbt, snow) even when `ade` was started by its full path.
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    if settings.config_path:
        env["ADE_CONFIG"] = str(settings.config_path)
    log_dir = settings.home / "logs"
    log_dir.mkdir(parents=True, exist_ok=True)
    # The children write their logs for as long as they live; the handles are closed on the way out.
    logs = {name: open(log_dir / f"{name}.log", "ab") for name in ("dagster", "mcp")}  # noqa: SIM115
    procs = {
        "dagster": subprocess.Popen(
            [_bin("dagster"), "dev", "-w", str(REPO_ROOT / "workspace.yaml"), "-h", host, "-p", str(ui_port)],
            cwd=REPO_ROOT,
            env=env,
            stdout=logs["dagster"],
            stderr=subprocess.STDOUT,
        ),
        "mcp": subprocess.Popen(
            [_bin("ade"), "mcp", "--transport", "http", "--host", host, "--port", str(mcp_port)],
            cwd=REPO_ROOT,
            env=env,
            stdout=logs["mcp"],
            stderr=subprocess.STDOUT,
        ),
    }
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
    try:
        while all(p.poll() is None for p in procs.values()):
            time.sleep(1)
        for name, proc in procs.items():
            if proc.poll() is not None:
                print(f"ade dev: {name} exited with code {proc.returncode}; see {log_dir}")
        return 1
    except KeyboardInterrupt:
        return 0
    finally:
        for proc in procs.values():
            if proc.poll() is None:
                proc.send_signal(signal.SIGINT)
        for proc in procs.values():
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
        for handle in logs.values():
            handle.close()
