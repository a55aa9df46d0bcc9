"""Live tools run as ad-hoc Dagster ops, so every call an agent makes is a run in Dagster's history.

Each call builds a one-op job named after the tool and executes it in the platform's Dagster instance
(DAGSTER_HOME) with tags that say which tool ran, with which arguments (secrets and SQL literals redacted)
and why (the agent-given cause). Operators find these runs in the Dagster UI under the `ade/tool` tag.

Dagster is imported lazily here: the MCP bridge imports this module only on its first live call.
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from ade_platform.lib.redact import redact_arguments

T = TypeVar("T")
TAG_TOOL = "ade/tool"
TAG_ARGUMENTS = "ade/arguments"
TAG_CAUSE = "ade/cause"
TAG_SOURCE = "ade/source"
_MAX_TAG_CHARS = 2000
_OP_NAME = re.compile(r"[^A-Za-z0-9_]")


@dataclass(frozen=True)
class LiveResult:
    run_id: str
    value: Any
    elapsed_ms: float

    def stamp(self) -> dict[str, Any]:
        """The provenance block of a live answer."""
        return {"source": "live", "run_id": self.run_id, "elapsed_ms": round(self.elapsed_ms, 1)}


class LiveRunner:
    """Runs callables as audited ad-hoc Dagster ops in one Dagster instance."""

    def __init__(self, dagster_home: Path):
        self.dagster_home = Path(dagster_home)
        self._instance: Any = None
        self._lock = threading.Lock()

    def instance(self) -> Any:
        with self._lock:
            if self._instance is None:
                from dagster import DagsterInstance

                self.dagster_home.mkdir(parents=True, exist_ok=True)
                self._instance = DagsterInstance.from_config(str(self.dagster_home))
            return self._instance

    def run(
        self,
        tool: str,
        fn: Callable[[], T],
        *,
        arguments: dict[str, Any] | None = None,
        cause: str | None = None,
    ) -> LiveResult:
        """Execute fn inside a Dagster op; re-raise its exception (the run is recorded as failed)."""
        from dagster import In, Nothing, Out, job, op  # noqa: F401  (lazy: keeps the cached path Dagster-free)

        op_name = _OP_NAME.sub("_", tool)
        captured: dict[str, Any] = {}

        @op(name=op_name, out=Out(dagster_type=Any, io_manager_key="io_manager"))  # type: ignore[arg-type]
        def live_op() -> Any:
            try:
                captured["value"] = fn()
            except Exception as exc:
                captured["error"] = exc
                raise
            return None  # the value stays in this process; nothing is pickled into storage

        @job(name=f"live__{op_name}", description=f"Live MCP tool {tool}, started by an agent.")
        def live_job() -> None:
            live_op()

        tags = {
            TAG_TOOL: tool,
            TAG_SOURCE: "mcp",
            TAG_ARGUMENTS: _truncate(json.dumps(redact_arguments(arguments or {}), default=str)),
        }
        if cause:
            tags[TAG_CAUSE] = _truncate(cause)
        started = time.perf_counter()
        result = live_job.execute_in_process(instance=self.instance(), tags=tags, raise_on_error=False)
        elapsed = (time.perf_counter() - started) * 1000
        if "error" in captured:
            raise captured["error"]
        if not result.success:
            raise RuntimeError(f"live run {result.run_id} of {tool} failed")
        return LiveResult(run_id=result.run_id, value=captured.get("value"), elapsed_ms=elapsed)


def _truncate(text: str) -> str:
    return text if len(text) <= _MAX_TAG_CHARS else text[: _MAX_TAG_CHARS - 1] + "…"
