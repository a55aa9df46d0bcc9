"""What every BI client offers (`BiClient`), its structured errors, and the retry rule they share."""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from typing import Any

from typing_extensions import TypedDict

from ade_platform.lib.bi.look_rows import LookField
from ade_platform.lib.bi.shapes import DashboardInfo, DashboardSummary, ElementInfo, TableRef
from ade_platform.lib.bi.tables import Naming

RETRIES = 3
MAX_BACKOFF_SECONDS = 8.0
RETRY_STATUSES = frozenset({429, 500, 502, 503, 504})


class BiError(Exception):
    """An expected BI failure; `code` is a bi-api error code and `detail` is safe to show an agent."""

    def __init__(self, code: str, detail: str):
        self.code = code
        self.detail = detail
        super().__init__(f"{code}: {detail}")


class LookRun(TypedDict):
    look_id: int
    title: str | None
    row_count: int
    rows: list[dict[str, Any]]
    elapsed_ms: float
    # What the rows are, for masking them (lib/bi/look_rows.py): the query's fields, the tables it reads, and
    # the fields it pivots on.
    fields: list[LookField]
    tables: list[TableRef]
    pivots: list[str]


def backoff_seconds(attempt: int, retry_after: str | None) -> float:
    """Retry-After when the server gives one (seconds), else capped exponential backoff."""
    if retry_after:
        try:
            return min(max(float(retry_after), 0.0), MAX_BACKOFF_SECONDS)
        except ValueError:
            pass
    return min(0.25 * 2**attempt, MAX_BACKOFF_SECONDS)


_QUOTED_VALUE = re.compile(r"'[^']*'")
_PATH = re.compile(r"(?<![\w.])(?:[A-Za-z]:)?/(?:[\w.\-]+/)+[\w.\-]*")


def safe_error(text: str, limit: int = 400) -> str:
    """A tile's database error fit for an agent: the first line, no single-quoted literal (it may be a value
    from a row), no file path. Double-quoted identifiers (column and table names) stay: they are the point."""
    line = (text or "").strip().splitlines()[0] if (text or "").strip() else "the query failed"
    line = _PATH.sub("<path>", _QUOTED_VALUE.sub("'…'", line))
    return line if len(line) <= limit else line[: limit - 1] + "…"


class BiClient(ABC):
    """One BI tool's read-only API, mapped onto the shared shapes (lib/bi/shapes.py)."""

    tool: str

    def __init__(self, naming: Naming, timeout: float):
        self.naming = naming
        self.timeout = timeout

    @abstractmethod
    def list_dashboards(self) -> list[DashboardSummary]: ...

    @abstractmethod
    def dashboard(self, dashboard_id: str) -> DashboardInfo:
        """The dashboard and its elements; BiError dashboard_not_found when there is none."""

    @abstractmethod
    def run_element(self, element: ElementInfo, timeout: float) -> int:
        """Run one tile as the dashboard would; its row count. Raises TileError when its query fails."""

    def run_look(self, look_id: int, limit: int) -> LookRun:
        raise BiError("not_implemented", f"{self.tool} has no Looks; bi_run_look is Looker-only")

    def close(self) -> None:  # noqa: B027 - optional hook
        pass
