"""A running platform to make incidents on: the demo, or a generated project, materialized once.

Both run as a user runs them: the SaaS emulators started (Looker, Metabase, dbt Cloud), `ade materialize`
in-process into a temporary ADE_HOME, the dbt project a git repository of its own (a copy, so incidents may
edit its models). Incidents are made afterwards, on the warehouse file, the project and the emulators.
"""

from __future__ import annotations

import io
import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ade_platform.config import Settings, load_settings
from tests.helpers import environment

REPO = Path(__file__).resolve().parents[2]
DBT = Path(sys.executable).parent / "dbt"


@dataclass
class Platform:
    name: str
    root: Path
    settings: Settings
    env: dict[str, str]  # what points the platform (and dbt) at the emulators and the warehouse
    running: list[Any] = field(default_factory=list)
    info: dict[str, Any] = field(default_factory=dict)  # what the generator knows (tiles, sources, jobs)

    @property
    def project(self) -> Path:
        return self.settings.dbt.project_dir  # type: ignore[union-attr]

    @property
    def warehouse(self) -> Path:
        wh = self.settings.warehouses[self.settings.dbt.warehouse]  # type: ignore[union-attr]
        return wh.path  # type: ignore[union-attr]

    def dbt(self, *args: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
        """dbt run from a terminal in the project (outside ADE), under the warehouse's write lock."""
        from ade_platform.lib.warehouse.file_lock import writing

        env = {**os.environ, **self.env, "ADE_DUCKDB_PATH": str(self.warehouse)}
        with writing(self.warehouse):
            return subprocess.run(
                [str(DBT if DBT.exists() else "dbt"), *args, "--profiles-dir", str(self.project)],
                cwd=self.project,
                env=env,
                capture_output=True,
                text=True,
                timeout=timeout,
            )

    def sql(self, *statements: str) -> list[Any]:
        """Statements on the warehouse, as a migration outside ADE runs them (under `ade write-lock`)."""
        import duckdb

        from ade_platform.lib.warehouse.file_lock import writing

        out = []
        with writing(self.warehouse), duckdb.connect(str(self.warehouse)) as con:
            for statement in statements:
                out.append(con.execute(statement).fetchall())
        return out

    def git(self, *args: str) -> str:
        """git in the project, as the team's analyst."""
        proc = subprocess.run(
            ["git", *args],
            cwd=self.project,
            env=_ANALYST,
            capture_output=True,
            text=True,
            check=True,
            timeout=60,
        )
        return proc.stdout

    def publish_outside_runs(self) -> None:
        """Publish what dbt wrote in the target folder, as the gateway or the sensor does when they next look."""
        from ade_platform.lib.dbt.refresh import BY_SENSOR, lock_path, publish_newer
        from ade_platform.store import StoreReader, StoreWriter

        settings = self.settings
        target = self.project / "target"
        writer = StoreWriter(settings.store_root, retention=settings.store.retention)
        lock = lock_path(settings.home, str(settings.store_root), target)
        publish_newer(writer, StoreReader(settings.store_root), target, published_by=BY_SENSOR, lock=lock)

    def clean_outside_runs(self) -> None:
        """Forget what dbt runs outside ADE left: the target folder and dbt's log."""
        for folder in ("target", "logs"):
            shutil.rmtree(self.project / folder, ignore_errors=True)


_ANALYST = {
    **os.environ,
    "GIT_AUTHOR_NAME": "analyst",
    "GIT_AUTHOR_EMAIL": "analyst@example.com",
    "GIT_COMMITTER_NAME": "analyst",
    "GIT_COMMITTER_EMAIL": "analyst@example.com",
}


def _git_init(project: Path) -> None:
    (project / ".gitignore").write_text("target/\nlogs/\n*.duckdb\n")
    for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-qm", "Initial project"]):
        subprocess.run(["git", *args], cwd=project, env=_ANALYST, check=True, capture_output=True, timeout=60)


@contextmanager
def _running(
    root: Path,
    config_text: str,
    name: str,
    info: dict[str, Any],
    reuse: bool = False,
    before: Callable[[Platform], None] | None = None,
) -> Iterator[Platform]:
    """Emulators up, the platform materialized (`before` runs first, on a fresh root), torn down after."""
    from ade_platform.emulators.demo import EMULATORS, free_port, start_all
    from ade_platform.ops import materialize

    home = root / "ade"
    config = root / "ade.yaml"
    config.write_text(config_text)
    # a loaded machine (the benchmark shares it) may take minutes to start an emulator
    running, env = start_all(home, ports={e.name: free_port() for e in EMULATORS}, timeout=300)
    try:
        with environment(env, unset=("DAGSTER_HOME", "ADE_HOME", "ADE_CONFIG")):
            settings = load_settings(config, env={**os.environ, "ADE_HOME": str(home)})
            platform = Platform(name, root, settings, env, running, info)
            marker = home / "materialized"
            if not (reuse and marker.exists()):
                from ade_platform.instance import ensure_dagster_home

                ensure_dagster_home(settings)
                if before is not None:
                    before(platform)
                log = io.StringIO()
                if materialize(settings, "*", out=log) != 0:
                    raise RuntimeError(f"{name}: materialization failed:\n{log.getvalue()[-3000:]}")
                _profile(platform)
                marker.touch()
            yield platform
    finally:
        for r in running:
            r.stop()


def _profile(platform: Platform) -> None:
    """Every relation profiled once after the build (the baselines silent incidents are compared with)."""
    from benchmarks.lineage.silent_scenarios import record_baselines

    record_baselines(platform)


@contextmanager
def demo_platform(root: Path, reuse: bool = False) -> Iterator[Platform]:
    """The demo (ade.yaml and dbt_demo), copied under root and materialized with its emulators; `reuse`: a root
    materialized before is used as it is (for development)."""
    if not (reuse and (root / "dbt_demo").exists()):
        shutil.copytree(
            REPO / "dbt_demo", root / "dbt_demo", ignore=shutil.ignore_patterns("target", "logs", "*.duckdb")
        )
        _git_init(root / "dbt_demo")
    text = (REPO / "ade.yaml").read_text()
    with _running(root, text, "demo", {}, reuse) as platform:
        yield platform
