"""Shared fixtures. Expensive ones (the materialized demo) are session-scoped and built once."""

from __future__ import annotations

import io
import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from ade_platform.config import Settings, load_settings
from tests.helpers import environment

REPO_ROOT = Path(__file__).resolve().parents[1]
# The team's shared folder beside the checkout (as on CI); ADE_SHARED_DIR points a worktree elsewhere at it.
SHARED = Path(os.environ.get("ADE_SHARED_DIR") or REPO_ROOT.parent / "shared")
CORPUS = SHARED / "corpus"


def settings_for(home: Path, **env: str) -> Settings:
    """The demo configuration with ADE_HOME (and DAGSTER_HOME) under a temporary folder."""
    return load_settings(REPO_ROOT / "ade.yaml", env={**os.environ, "ADE_HOME": str(home), **env})


@pytest.fixture(autouse=True)
def _no_background_dagster_between_tests() -> Iterator[None]:
    """A test's read-only live calls write their audit runs in the background: let them land before the next
    test starts, so no Dagster run of one test overlaps another's (or its deleted temporary folder)."""
    yield
    import sys

    if "ade_platform.live" in sys.modules:
        sys.modules["ade_platform.live"].flush_all(60)


@pytest.fixture
def tmp_settings(tmp_path: Path) -> Settings:
    return settings_for(tmp_path / "ade")


@pytest.fixture(scope="session")
def demo_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("demo") / "ade"


@pytest.fixture(scope="session")
def demo_emulators(demo_home: Path) -> Iterator[dict[str, str]]:
    """Every registered SaaS emulator (ade_platform.emulators.demo) on free loopback ports, for the session.

    The environment that points the demo's ade.yaml at them is set for the whole session and yielded."""
    from ade_platform.emulators.demo import EMULATORS, free_port, start_all

    running, env = start_all(demo_home, ports={e.name: free_port() for e in EMULATORS})
    with environment(env):
        yield env
        for r in running:
            r.stop()


@pytest.fixture(scope="session")
def demo_settings(demo_home: Path, demo_emulators: dict[str, str]) -> Iterator[Settings]:
    """The whole demo (datasets, dbt build, artifacts, lineage index, schema) materialized once, with the SaaS
    emulators it is configured against running."""
    from ade_platform.ops import materialize

    with environment({}, unset=["DAGSTER_HOME"]):
        settings = settings_for(demo_home)
        log = io.StringIO()
        code = materialize(settings, "*", out=log)
        if code != 0:
            pytest.fail(f"demo materialization failed:\n{log.getvalue()[-4000:]}")
        yield settings


@pytest.fixture(scope="session")
def fakesnow_server() -> Iterator[dict[str, object]]:
    """A fakesnow server (Snowflake's HTTP protocol) on loopback in its own process: connect with
    host/port below, protocol="http", any account/user/password. Its databases are shared in memory,
    so each test uses database names of its own."""
    from tests.processes import fakesnow_process

    with fakesnow_process() as server:
        yield server


@pytest.fixture(scope="session")
def snowflake_stack(tmp_path_factory: pytest.TempPathFactory):
    """fakesnow on loopback seeded with canaries + a snow CLI config (tests/fakes/snowflake_stack.py).

    `stack.cli` is None when the snow CLI is not installed; tests that run it call `stack.require_cli()`.
    """
    from tests.fakes.snowflake_stack import start_stack

    with start_stack(tmp_path_factory.mktemp("snowflake")) as stack:
        yield stack


def corpus_set_dirs() -> list[Path]:
    root = CORPUS / "dbt-artifacts"
    if not root.is_dir():
        return []
    return sorted(p for p in root.iterdir() if (p / "facts.json").exists())


@pytest.fixture(params=corpus_set_dirs() or [None], ids=lambda p: p.name if p else "no-corpus")
def corpus_set(request: pytest.FixtureRequest) -> tuple[Path, dict]:
    """Each dbt artifact set of the shared corpus with its facts.json (skips when the corpus is absent)."""
    if request.param is None:
        pytest.skip("../shared/corpus/dbt-artifacts is not present (CI has it)")
    return request.param, json.loads((request.param / "facts.json").read_text())


@pytest.fixture
def snowfakery_corpus() -> Path:
    path = CORPUS / "snowfakery"
    if not path.is_dir():
        pytest.skip("../shared/corpus/snowfakery is not present (CI has it)")
    return path
