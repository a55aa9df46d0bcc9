"""Start the registered emulators as child processes, for `make demo` and the test fixtures.

Each emulator is a module runnable as `python -m <module> --host H --port P` that serves until SIGTERM, keeps its
state under `ADE_HOME/emulators/<name>` and answers `GET <ready_path>` once it can take requests. The demo's
`ade.yaml` finds it through the environment variables set here (URL and demo credentials), so tests can start the
same emulators on free ports without touching the file.

    python -m ade_platform.emulators.demo -- ade dev --materialize   # emulators up, run the command, tear down
    python -m ade_platform.emulators.demo --full -- ade dev --materialize   # and Airflow 3 + Prefect 3 (demo-full)
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from ade_platform.lib.errors import CodedError
from ade_platform.supervise import free_port as free_port  # where the tests and fixtures take it from
from ade_platform.supervise import start_group, stop_groups, stop_on_signals, taken_ports


@dataclass(frozen=True)
class Emulator:
    name: str
    module: str
    default_port: int
    ready_path: str = "/"
    # The environment the platform reads to reach it: name -> value built from the base URL and the ADE home.
    env: Callable[[str, Path], dict[str, str]] = field(default=lambda url, home: {})


# Each emulator registers itself here (one entry per SaaS).
EMULATORS: list[Emulator] = []

# dbt Cloud (issue 11): the Administrative API v2 whose jobs run dbt_demo with dbt-core.
EMULATORS.append(
    Emulator(
        name="dbt_cloud",
        module="ade_platform.emulators.dbt_cloud",
        default_port=8791,
        ready_path="/health",
        env=lambda url, home: {
            "ADE_DBT_CLOUD_URL": f"{url}/api/v2",
            "DBT_CLOUD_API_TOKEN": "dbtc_ade_demo_emulator_token",  # the emulator's demo token
        },
    )
)


# --- BI (issue 13): Looker API 4.0 and Metabase REST, dashboards over the demo warehouse -----------------------
def _looker_env(url: str, home: Path) -> dict[str, str]:
    from ade_platform.emulators.looker import DEMO_CLIENT_ID, DEMO_CLIENT_SECRET

    return {
        "ADE_LOOKER_URL": url,
        "ADE_LOOKER_CLIENT_ID": DEMO_CLIENT_ID,
        "ADE_LOOKER_CLIENT_SECRET": DEMO_CLIENT_SECRET,
    }


def _metabase_env(url: str, home: Path) -> dict[str, str]:
    from ade_platform.emulators.metabase import DEMO_API_KEY

    return {"ADE_METABASE_URL": url, "ADE_METABASE_API_KEY": DEMO_API_KEY}


EMULATORS += [
    Emulator("looker", "ade_platform.emulators.looker", 19999, "/api/versions", _looker_env),
    Emulator("metabase", "ade_platform.emulators.metabase", 3300, "/api/health", _metabase_env),
]


# --- Snowflake (issue 26): fakesnow with the demo's jaffle-shop data; the snow connection it writes --------------
def _snowflake_env(url: str, home: Path) -> dict[str, str]:
    from ade_platform.emulators.snowflake import connection_file

    return {"ADE_SNOWFLAKE_CONFIG": str(connection_file(home))}


# Any answer of its HTTP server means it is up (it writes the connection file before it serves).
EMULATORS.append(Emulator("snowflake", "ade_platform.emulators.snowflake", 8792, "/", _snowflake_env))


@dataclass
class Running:
    emulator: Emulator
    url: str
    process: subprocess.Popen

    def stop(self) -> None:
        # the whole group: the dbt Cloud emulator's runs are dbt processes of its own
        stop_groups([self.process], grace_seconds=10)


def _wait_ready(url: str, proc: subprocess.Popen, timeout: float) -> None:
    deadline = time.time() + timeout
    while time.time() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"emulator at {url} exited with {proc.returncode}")
        try:
            httpx.get(url, timeout=2)
        except httpx.HTTPError:
            time.sleep(0.2)
            continue
        if proc.poll() is None:  # the answer came from our process, not one that held the port before it
            return
    raise RuntimeError(f"emulator at {url} did not answer within {timeout:.0f} s")


def start_all(
    home: Path, ports: Mapping[str, int] | None = None, timeout: float = 60, log_dir: Path | None = None
) -> tuple[list[Running], dict[str, str]]:
    """Start every registered emulator; returns the handles and the environment that points the platform at them."""
    running: list[Running] = []
    env_out: dict[str, str] = {}
    log_dir = log_dir or home / "logs"
    log_dir.mkdir(parents=True, exist_ok=True)
    try:
        for emu in EMULATORS:
            port = (ports or {}).get(emu.name) or emu.default_port
            url = f"http://127.0.0.1:{port}"
            log = (log_dir / f"emulator-{emu.name}.log").open("ab")
            proc = start_group(
                [sys.executable, "-m", emu.module, "--host", "127.0.0.1", "--port", str(port)],
                env={**os.environ, "ADE_HOME": str(home)},
                stdout=log,
                stderr=subprocess.STDOUT,
            )
            running.append(Running(emu, url, proc))
            _wait_ready(url + emu.ready_path, proc, timeout)
            env_out.update(emu.env(url, home))
    except BaseException:
        for r in running:
            r.stop()
        raise
    return running, env_out


def _parse_ports(text: str, names: list[str]) -> dict[str, int]:
    """`dbt_cloud=18791,looker=19998`: emulator ports other than the defaults (tests, a second demo)."""
    ports: dict[str, int] = {}
    for item in filter(None, (part.strip() for part in text.split(","))):
        name, _, port = item.partition("=")
        if name not in names or not port.isdigit():
            raise SystemExit(f"ade: --ports: expected NAME=PORT with NAME in {names}")
        ports[name] = int(port)
    return ports


def main(argv: list[str] | None = None) -> int:
    """Start the emulators, run the command after `--` with the environment that points at them, and stop
    everything (the command's whole process group, then the emulators) on its exit, Ctrl-C, SIGTERM or SIGHUP."""
    from ade_platform.emulators.orchestrators.demo import DEFAULT_PORTS, missing, start_orchestrators

    argv = list(sys.argv[1:] if argv is None else argv)
    full = argv[:1] == ["--full"]
    argv = argv[1:] if full else argv
    defaults = {e.name: e.default_port for e in EMULATORS} | (DEFAULT_PORTS if full else {})
    ports: dict[str, int] = {}
    if argv[:1] == ["--ports"] and len(argv) > 1:
        ports, argv = _parse_ports(argv[1], list(defaults)), argv[2:]
    if argv and argv[0] == "--":
        argv = argv[1:]
    if full and (absent := missing()):
        print(
            f"ade: {', '.join(absent)} not installed: run `make orchestrators` (or `make demo-full`)",
            file=sys.stderr,
        )
        return 2
    ports = {name: ports.get(name) or port for name, port in defaults.items()}
    # Never talk to an emulator this launcher did not start: one already answering on a port (a previous demo
    # that was not stopped, another program) would serve another home's state.
    if taken := taken_ports(
        {
            f"the {name} {'server' if name in DEFAULT_PORTS else 'emulator'}": port
            for name, port in ports.items()
        }
    ):
        print(
            f"ade: {', '.join(taken)} already in use; nothing was started. Stop what holds it (a previous "
            "`make demo` still running?  `lsof -i :PORT` names it), or choose other ports with "
            "`python -m ade_platform.emulators.demo --ports NAME=PORT,... -- COMMAND`.",
            file=sys.stderr,
        )
        return 2
    home = Path(os.environ.get("ADE_HOME") or Path.cwd() / ".ade").resolve()
    with stop_on_signals():
        running: list[Running] = []
        orchestrators: list[subprocess.Popen] = []
        child: subprocess.Popen | None = None
        try:
            running, env = start_all(home, ports)
            for r in running:
                print(f"ade: emulator {r.emulator.name} up at {r.url}", flush=True)
            if full:
                config = os.environ.get("ADE_CONFIG") or str(Path("ade.yaml").resolve())
                orchestrators, more = start_orchestrators(
                    home,
                    ports,
                    config,
                    {**os.environ, **env},
                    home / "logs",
                    say=lambda line: print(line, flush=True),
                )
                env.update(more)
            else:
                print(
                    "ade: Airflow 3 and Prefect 3 too, with DAGs and flows that build dbt_demo: make demo-full"
                )
            if not argv:
                signal.pause()
                return 0
            # Its own process group, so stopping it reaches every process it started.
            child = start_group(argv, env={**os.environ, **env})
            return child.wait()
        except KeyboardInterrupt:
            return 130
        except (RuntimeError, OSError, CodedError) as exc:  # an emulator or server that did not come up
            print(f"ade: {exc}; everything started was stopped (logs in {home / 'logs'})", file=sys.stderr)
            return 1
        finally:
            if child is not None:
                stop_groups([child])
            stop_groups(orchestrators)
            for r in running:
                r.stop()


if __name__ == "__main__":
    sys.exit(main())
