"""The provenance block on every answer of the toolsets that read a store snapshot, a file or a live system.

One shape for the four origins, so an agent reads `source` first and then the fields that origin carries:
cache (a store snapshot: asset, version, age, staleness), file (an artifact path the caller gave), files (the
dbt project's files read now) and live (an audited Dagster run).
"""

from __future__ import annotations

from typing import Annotated, Any, NotRequired

from pydantic import Field

from ade_platform.lib.shapes import OpenShape


class SnapshotRef(OpenShape):
    """Another store snapshot the answer was computed from."""

    asset: str
    version: str
    materialized_at: str


class ObservationRef(OpenShape):
    """A live observation (any agent's live read) the answer used in place of an older snapshot."""

    key: str
    source: Annotated[str, Field(description="The live tool that observed it.")]
    observed_at: str


class Provenance(OpenShape):
    """Where the answer came from and how old it is."""

    source: Annotated[
        str,
        Field(
            description="cache: a store snapshot; file: the artifact path given; files: the project's files, "
            "read now; live: an audited Dagster run against the system"
        ),
    ]
    asset: NotRequired[str]
    version: NotRequired[str]
    materialized_at: NotRequired[str]
    age_seconds: NotRequired[float]
    run_id: NotRequired[str | None]
    stale: NotRequired[bool]
    stale_reason: NotRequired[str | None]
    path: NotRequired[str | None]
    read_at: NotRequired[str]
    last_modified: NotRequired[str]
    elapsed_ms: NotRequired[float]
    inputs: NotRequired[
        Annotated[list[SnapshotRef], Field(description="Other snapshots joined into the answer.")]
    ]
    history: NotRequired[
        Annotated[SnapshotRef, Field(description="The schema snapshot a live answer's history came from.")]
    ]
    live_error: NotRequired[
        Annotated[str, Field(description="Why the live read failed, when the answer fell back to the store.")]
    ]
    observations_not_kept: NotRequired[
        Annotated[
            str,
            Field(
                description="A live answer whose observations could not be written to the store (other agents "
                "and the cached tools will not see them): store_read_only, store_full or store_write_failed."
            ),
        ]
    ]
    dbt_cloud: NotRequired[dict[str, Any]]
    published_by: NotRequired[
        Annotated[
            str, Field(description="Who published the snapshot when not its own asset (a gateway, a sensor).")
        ]
    ]
    observations: NotRequired[
        Annotated[
            list[ObservationRef],
            Field(
                description="Live observations newer than the snapshot used in its place: key, source, observed_at."
            ),
        ]
    ]
    # snowflake: where a call ran
    connection: NotRequired[
        Annotated[str | None, Field(description="snowflake: the snow connection the call ran on.")]
    ]
    environment: NotRequired[
        Annotated[
            str | None, Field(description="snowflake: the configured environment (snowflake.environment).")
        ]
    ]
