"""What the lineage join reads of the dbt invocation log (lib/dbt/invocations.py) and of the observations live
tools record (store/observations.py), in the join's own terms: epoch times and plain dicts."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from ade_platform.lib.dbt import invocations
from ade_platform.lib.lineage.conditions import epoch_of


def newest_invocation(
    project_dir: Path, log_path: Path | None = None, target_path: Path | None = None
) -> dict[str, Any] | None:
    """The newest dbt invocation in the project's log, whatever its outcome, as a dict with epoch times."""
    found = invocations.newest_invocation(project_dir, log_path=log_path, target_path=target_path)
    if found is None:
        return None
    record = dataclasses.asdict(found)
    record["started_at"] = epoch_of(record.get("started_at"))
    record["finished_at"] = epoch_of(record.get("finished_at"))
    record["failed_nodes"] = list(record.get("failed_nodes") or ())
    return record
