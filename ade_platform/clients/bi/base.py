"""What every BI client offers (`BiClient`), its structured errors, and how a tile's error is shown."""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from typing import Any, ClassVar

from typing_extensions import TypedDict

from ade_platform.lib.bi.look_rows import LookField
from ade_platform.lib.bi.shapes import DashboardInfo, DashboardSummary, ElementInfo, TableRef
from ade_platform.lib.bi.tables import Naming
from ade_platform.lib.errors import CodedError


class BiError(CodedError):
    """An expected BI failure; `code` is a bi-api error code and `detail` is safe to show an agent."""

    # The shared hint of backend_not_configured speaks of orchestrators.
    hints: ClassVar[dict[str, str]] = {
        "backend_not_configured": "Add bi.looker / bi.metabase (base_url, ${ENV} credentials)."
    }


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
    # The SQL the BI tool ran for the rows (Looker: the query's generated SQL, `result_format=sql`); None when
    # the tool would not give it. Masking decides on its parse (ade_platform/lib/sql_protect.py).
    sql: str | None


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
