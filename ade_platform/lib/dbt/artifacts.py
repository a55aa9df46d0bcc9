"""Loading dbt artifacts of any supported dbt version, with the schema version checked first."""

from __future__ import annotations

import atexit
import gc
import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import orjson

from ade_platform.lib.errors import CodedError

# Artifact schema versions we read. manifest v4 is dbt 1.0; v12 is dbt 1.8 through 1.11.
SUPPORTED_VERSIONS: dict[str, range] = {
    "manifest": range(4, 13),
    "catalog": range(1, 2),
    "run-results": range(4, 7),
    "sources": range(1, 4),
}
ARTIFACT_FILES = {
    "manifest": "manifest.json",
    "catalog": "catalog.json",
    "run-results": "run_results.json",
    "sources": "sources.json",
}
_unfreeze_registered = False
_SCHEMA_URL = re.compile(r"/dbt/(?P<kind>[a-z\-]+)/v(?P<version>\d+)\.json$")


class ArtifactError(CodedError):
    """A dbt artifact is missing, unreadable or of a version we do not support."""


def schema_version(artifact: dict[str, Any], expected_kind: str) -> int:
    """Return the artifact's schema version; raise ArtifactError when it is not one we support."""
    url = (artifact.get("metadata") or {}).get("dbt_schema_version")
    if not isinstance(url, str):
        raise ArtifactError(
            "unsupported_artifact_version",
            f"{ARTIFACT_FILES[expected_kind]} has no metadata.dbt_schema_version",
            "Is this file really a dbt artifact? Regenerate it with dbt >= 1.0.",
        )
    match = _SCHEMA_URL.search(url)
    if not match or match["kind"] != expected_kind:
        raise ArtifactError(
            "unsupported_artifact_version",
            f"{ARTIFACT_FILES[expected_kind]} declares schema {url!r}, expected a {expected_kind} schema",
        )
    version = int(match["version"])
    supported = SUPPORTED_VERSIONS[expected_kind]
    if version not in supported:
        raise ArtifactError(
            "unsupported_artifact_version",
            f"{ARTIFACT_FILES[expected_kind]} schema v{version} is not supported "
            f"(supported: v{supported.start}-v{supported.stop - 1})",
            "Regenerate the artifacts with a dbt version between 1.0 and 1.11.",
        )
    return version


@contextmanager
def gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector while building large acyclic structures (parsed JSON, indexes).

    Parsing a 100 MB manifest allocates millions of objects; on Python 3.11 each full collection then walks
    the whole heap, which makes a 1 s parse take 4-5 s. JSON trees have no cycles, so nothing is lost.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def freeze_heap() -> None:
    """Move everything alive now out of the garbage collector's reach (gc.freeze).

    Called after a large, long-lived structure (a parsed index) is built in a server process: later
    collections then skip its millions of objects, so request latency does not grow with the index size.
    Reference counting still frees the structure when its snapshot is dropped. At exit everything is
    unfrozen again, so the interpreter's final collection sees it (extensions that check for leaks at exit,
    e.g. nanobind's, would otherwise report frozen objects as leaked).
    """
    global _unfreeze_registered
    if not _unfreeze_registered:
        atexit.register(gc.unfreeze)
        _unfreeze_registered = True
    gc.freeze()


def parse_artifact(raw: bytes, kind: str) -> dict[str, Any]:
    try:
        with gc_paused():
            data = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise ArtifactError(
            "artifact_unreadable", f"{ARTIFACT_FILES[kind]} is not valid JSON: {exc.msg}"
        ) from None
    if not isinstance(data, dict):
        raise ArtifactError("artifact_unreadable", f"{ARTIFACT_FILES[kind]} is not a JSON object")
    schema_version(data, kind)
    return data


def read_artifact(target_dir: Path, kind: str) -> dict[str, Any] | None:
    """Read one artifact from a dbt target directory; None when the file does not exist."""
    path = target_dir / ARTIFACT_FILES[kind]
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return None
    return parse_artifact(raw, kind)
