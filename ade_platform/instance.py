"""The Dagster instance configuration (dagster.yaml) written from the settings, without importing Dagster.

Every process that records runs — `ade materialize`, `ade dev`, the gateway's live tools on any replica — writes
the same file from the same ade.yaml, so on the Postgres profile they all record into the one instance.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from ade_platform.config import ConfigError, Settings

_MARKER = "# written by ade from ade.yaml (dagster:); edit ade.yaml, not this file\n"
# What earlier versions wrote, without the marker: still ours to replace.
_LEGACY = "telemetry:\n  enabled: false\nconcurrency:\n  runs:\n    max_concurrent_runs: 1\n"


def dagster_yaml(settings: Settings) -> str:
    d = settings.dagster
    text = _MARKER + "telemetry:\n  enabled: false\n"
    text += f"concurrency:\n  runs:\n    max_concurrent_runs: {d.max_concurrent_runs}\n"
    if d.storage == "postgres":
        # The URL comes from the environment at load time: no password in DAGSTER_HOME.
        text += f"storage:\n  postgres:\n    postgres_url:\n      env: {d.postgres_url_env}\n"
    return text


def instance_environment(settings: Settings, environ: Mapping[str, str]) -> dict[str, str]:
    """The variables a process opening the instance needs changed in `environ` (empty when none): on Postgres,
    the URL with its driver named. dagster-postgres speaks psycopg2; SQLAlchemy's default driver for a bare
    postgresql:// URL is psycopg 3, whose server-side parameters break Dagster's NOTIFY.

    The `ade` commands apply it to their own environment at start-up, so this process and its children agree."""
    d = settings.dagster
    url = environ.get(d.postgres_url_env) if d.storage == "postgres" else None
    for bare in ("postgresql://", "postgres://"):
        if url and url.startswith(bare):
            return {d.postgres_url_env: "postgresql+psycopg2://" + url[len(bare) :]}
    return {}


def ensure_dagster_home(settings: Settings) -> Path:
    """Write DAGSTER_HOME/dagster.yaml when it is missing or one we wrote; a hand-written file is left alone."""
    d = settings.dagster
    if d.storage == "postgres" and not os.environ.get(d.postgres_url_env):
        raise ConfigError(
            f"dagster.storage: postgres needs the environment variable {d.postgres_url_env} "
            "(postgresql://user:password@host:port/db)"
        )
    home = settings.dagster_home
    home.mkdir(parents=True, exist_ok=True)
    config = home / "dagster.yaml"
    wanted = dagster_yaml(settings)
    try:
        current = config.read_text()
    except FileNotFoundError:
        current = None
    if current is None or (current != wanted and (current.startswith(_MARKER) or current == _LEGACY)):
        tmp = config.with_suffix(".yaml.tmp")
        tmp.write_text(wanted)
        os.replace(tmp, config)
    return home


@contextlib.contextmanager
def _opening(dagster_home: Path) -> Iterator[None]:
    """Hold the home's lock file while an instance is opened. Dagster's SQLite storages create their tables and
    stamp their migration revision on first open, unguarded: two processes opening a fresh home at once (a
    gateway and its audit worker, `ade dev`'s daemon and UI) both stamp, and every later open fails with "more
    than one head present". A lock file in the home serializes them; an instance already created opens in a few
    milliseconds, so the wait is short."""
    try:
        import fcntl
    except ImportError:  # Windows: no advisory locks here; opening stays as Dagster does it
        yield
        return
    with open(dagster_home / ".ade-instance.lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def open_instance(dagster_home: Path, *, compute_logs: bool = True) -> Any:
    """The Dagster instance of a DAGSTER_HOME folder (created if missing); Dagster is imported here, lazily,
    so the cached path that imports this module stays Dagster-free. Every process of ours opens it here (see
    `_opening` for why).

    compute_logs=False: the same storage, without capturing the runs' stdout and stderr. For live-tool runs,
    whose ops print nothing (what they did is in their events): capturing spawns `tail` processes per step
    (a fifth of an audit run's time) and redirects the process's own output streams, which in a stdio
    gateway carry the MCP protocol."""
    from dagster import DagsterInstance

    dagster_home.mkdir(parents=True, exist_ok=True)
    with _opening(dagster_home):
        if compute_logs:
            return DagsterInstance.from_config(str(dagster_home))
        from dagster._core.instance.ref import InstanceRef  # the dagster.yaml loader that takes overrides

        no_capture = {
            "module": "dagster._core.storage.noop_compute_log_manager",
            "class": "NoOpComputeLogManager",
        }
        return DagsterInstance.from_ref(
            InstanceRef.from_dir(str(dagster_home), overrides={"compute_logs": no_capture})
        )


def create_instance(dagster_home: Path) -> None:
    """Create the instance's storage now, before processes that open it without `open_instance` (Dagster's
    daemon and UI) start together."""
    open_instance(dagster_home, compute_logs=False).dispose()
