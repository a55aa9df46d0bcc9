"""The two modules issue 24's other half provides (docs: ISSUE24 contract): the newest dbt invocation from dbt's
own log (`lib/dbt/invocations.py`) and what live tools observed (`store/observations.py`).

Read through here, so the lineage join works the same before and after they exist: without them there is simply
no invocation and no observation to read.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from ade_platform.lib.lineage.conditions import epoch_of


def newest_invocation(
    project_dir: Path, log_path: Path | None = None, target_path: Path | None = None
) -> dict[str, Any] | None:
    """The newest dbt invocation as a dict with epoch times, or None (none logged, or no reader available)."""
    try:
        from ade_platform.lib.dbt import invocations  # type: ignore[attr-defined]
    except ImportError:
        return None
    found = invocations.newest_invocation(project_dir, log_path=log_path, target_path=target_path)
    if found is None:
        return None
    record = dataclasses.asdict(found) if dataclasses.is_dataclass(found) else dict(found)
    record["started_at"] = epoch_of(record.get("started_at"))
    record["finished_at"] = epoch_of(record.get("finished_at"))
    record["failed_nodes"] = list(record.get("failed_nodes") or ())
    return record


def observations_module() -> Any:
    """`ade_platform.store.observations`, or None where it does not exist yet."""
    try:
        from ade_platform.store import observations  # type: ignore[attr-defined]
    except ImportError:
        return None
    return observations
