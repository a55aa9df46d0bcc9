"""dbt's own errors in the log of a job that ran it (an Airflow task, a Prefect flow, a Dagster step, a dbt Cloud
run step): which node failed, and the database's message, so the explain continues from that node as from a model
that failed in the run results.

dbt ends a failed command with a summary, each failure as a header naming the node and its file, then the
message on the lines below (indented, each with dbt's time prefix):

    14:02:11    Runtime Error in model orders (models/orders.sql)
    14:02:11    Binder Error: Referenced column "status" not found in FROM clause!

The headers are dbt's wording across 1.x ("Database Error in model", "Compilation Error in model", "Failure in
test"); the message keeps its first line that says what went wrong (error_shapes.parse_error reads it).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ade_platform.lib.lineage.error_shapes import ErrorShape, parse_error

_PREFIX = re.compile(r"^\s*(?:\x1b\[[0-9;]*m)*(?:\[?\d{2}:\d{2}:\d{2}(?:\.\d+)?\]?\s+)?(?:\[\w+\]\s*)?")
# what the orchestrator puts before each line of the task's output: Airflow 3's rendered structured lines
# ("[2026-11-28T23:20:29.160Z INFO] {task} ..."), Airflow 2's ("[2026-11-28T23:20:29Z] {subprocess.py:106} INFO - ...")
_HOST_PREFIX = re.compile(r"^\s*\[\d{4}-\d{2}-\d{2}[^\]]*\]\s*(?:\{[^}]*\}\s*)?(?:[A-Z]+\s+-\s?)?")
_HEADER = re.compile(
    r"(?:(?P<what>Runtime|Database|Compilation|Parsing|Dependency)\s+Error|Failure)\s+in\s+"
    # a `dbt show --inline` / `dbt compile --inline` query fails as a "sql_operation", a run-operation as a
    # "macro" or "operation": they are on no graph, but their message still names what went wrong
    r"(?P<type>model|seed|snapshot|test|source|unit_test|analysis|sql_operation|operation|macro)\s+"
    r"(?P<name>[\w.$-]+)"
    r"(?:\s+\((?:from\s+)?(?P<path>[^)]+)\))?",
    re.I,
)
MAX_LOG_CHARS = 400_000  # the tail of a log read for dbt's summary (it is at the end)
_MESSAGE_LINES = 6


@dataclass(frozen=True)
class DbtLogError:
    resource_type: str
    name: str
    path: str | None
    message: str  # the first line that says what went wrong
    shape: ErrorShape | None

    def as_dict(self) -> dict[str, object]:
        out: dict[str, object] = {
            "resource_type": self.resource_type,
            "node": self.name,
            "path": self.path,
            "message": self.message,
        }
        if self.shape is not None:
            out.update(self.shape.as_dict())
        return out


def dbt_errors(log: str | None, limit: int = 20) -> list[DbtLogError]:
    """The failed nodes dbt names in a log (its summary; each node once), in the order dbt lists them."""
    if not log:
        return []
    lines = [
        _PREFIX.sub("", _HOST_PREFIX.sub("", line)).rstrip() for line in log[-MAX_LOG_CHARS:].splitlines()
    ]
    found: dict[tuple[str, str], DbtLogError] = {}
    for i, line in enumerate(lines):
        match = _HEADER.search(line)
        if match is None:
            continue
        key = (match["type"].lower(), match["name"])
        following = [t.strip() for t in lines[i + 1 : i + 1 + _MESSAGE_LINES] if t.strip()]
        following = [t for t in following if _HEADER.search(t) is None][:_MESSAGE_LINES]
        message, shape = _message(following)
        if key in found and not message:
            continue  # the per-node line seen before the summary: keep the one with its message
        found[key] = DbtLogError(key[0], key[1], match["path"], message, shape)
        if len(found) >= limit:
            break
    return list(found.values())


def _message(lines: list[str]) -> tuple[str, ErrorShape | None]:
    """The most telling of the lines under a header: the first whose error kind is known, else the first."""
    best: tuple[str, ErrorShape | None] = ("", None)
    for text in lines:
        if text.lower().startswith(("done.", "finished running", "completed with")):
            break
        shape = parse_error(text)
        if shape is not None and shape.kind != "other":
            return text[:500], shape
        if not best[0]:
            best = (text[:500], shape)
    return best
