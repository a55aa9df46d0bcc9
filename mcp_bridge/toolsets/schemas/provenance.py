"""The provenance block on every answer that reads a store snapshot, a file or a live system: one root shape.

`Provenance` is the root of every provenance shape (the lineage, snowflake and snowfakery toolsets derive
theirs from it). It lists what an agent reads first (`source`, then the snapshot and its age or the audited
run) and stays open: the keys only some origins carry are named in its description, not typed one by one in
every tool's output schema (each tool publishes its schema in full, so a field typed here is paid 60 times
over in what every client downloads).
"""

from __future__ import annotations

from typing import Annotated, NotRequired

from pydantic import Field

from ade_platform.lib.shapes import OpenShape


class Provenance(OpenShape):
    """Where the answer came from and how old it is (keys other origins add: the server instructions)."""

    source: Annotated[
        str,
        Field(
            description="cache: a store snapshot; file: the artifact path given; files: the project's files; "
            "live: an audited Dagster run"
        ),
    ]
    asset: NotRequired[str]
    version: NotRequired[str]
    materialized_at: NotRequired[str]
    age_seconds: NotRequired[float]
    run_id: NotRequired[str | None]
    stale: NotRequired[bool]
    stale_reason: NotRequired[str | None]
    elapsed_ms: NotRequired[float]


# What the root does not type (PROVENANCE_KEYS, the published docstring points to it), said once in the gateway's
# instructions rather than in every tool's schema.
ORIGIN_KEYS = (
    "inputs",
    "observations",
    "observations_not_kept",
    "live_error",
    "history",
    "published_by",
    "dbt_cloud",
    "path",
    "read_at",
    "last_modified",
    "connection",
    "environment",
)
PROVENANCE_KEYS = (
    "provenance also carries, by origin: inputs (other snapshots joined: asset, version, materialized_at), "
    "observations (newer live reads used: key, source, observed_at), observations_not_kept, live_error (a live "
    "read that fell back to the store), history, published_by, dbt_cloud; path, read_at, last_modified (file, "
    "files); connection, environment (snowflake)."
)
