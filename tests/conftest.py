"""Shared fixtures. Expensive ones (the materialized demo) are session-scoped and built once."""

from __future__ import annotations

import io
import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from ade_platform.config import Settings, load_settings

REPO_ROOT = Path(__file__).resolve().parents[1]
SHARED = REPO_ROOT.parent / "shared"
CORPUS = SHARED / "corpus"


def settings_for(home: Path, **env: str) -> Settings:
    """The demo configuration with ADE_HOME (and DAGSTER_HOME) under a temporary folder."""
    return load_settings(REPO_ROOT / "ade.yaml", env={**os.environ, "ADE_HOME": str(home), **env})


@pytest.fixture
def tmp_settings(tmp_path: Path) -> Settings:
    return settings_for(tmp_path / "ade")


@pytest.fixture(scope="session")
def demo_settings(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Settings]:
    """The whole demo (datasets, dbt build, artifacts, lineage index, schema) materialized once."""
    from ade_platform.ops import materialize

    home = tmp_path_factory.mktemp("demo") / "ade"
    previous = os.environ.get("DAGSTER_HOME")
    os.environ.pop("DAGSTER_HOME", None)
    settings = settings_for(home)
    log = io.StringIO()
    code = materialize(settings, "*", out=log)
    if code != 0:
        pytest.fail(f"demo materialization failed:\n{log.getvalue()[-4000:]}")
    yield settings
    if previous is None:
        os.environ.pop("DAGSTER_HOME", None)
    else:
        os.environ["DAGSTER_HOME"] = previous


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
