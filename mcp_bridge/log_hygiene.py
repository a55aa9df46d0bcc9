"""What the gateway's own logs may say about a failed call: the error code and a short reason, nothing more.

FastMCP logs every exception a tool raises with its traceback (`logger.error(..., exc_info=True)`), our error
middleware logs unexpected ones with `log.exception`, uvicorn logs a crashed request the same way: a stdio
gateway's stderr ends up in the MCP host's log pane, full of install paths, for errors that are ordinary answers
(a refused path, a missing table). So every log record that carries an exception is rewritten where records are
made (the record factory: whatever logger or handler writes it, FastMCP's Rich handler included):
- a structured error (`CodedError`, `ToolFailure`, a structured `ToolError`, an argument validation error) is one
  line: the record's own message, the code, the first line of the detail (at most 200 characters), scrubbed;
- anything else (`internal_error`) is one line at the record's level naming the exception type; its traceback
  goes out only as a separate DEBUG record, when DEBUG is on for that logger, with every path outside the
  workspace shortened to its module path (`fastmcp/server/server.py`) or its file name.
"""

from __future__ import annotations

import json
import logging
import os
import re
import sys
import traceback
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from ade_platform.lib.errors import CodedError

MAX_REASON = 200
_ABSOLUTE_PATH = re.compile(r"(?<![\w.:/])/(?:[^\s\"'`:,()\[\]<>]+/)*[^\s\"'`:,()\[\]<>]+")
_state: dict[str, Any] = {"scrub": None, "roots": ()}
_MARK = "_ade_log_hygiene"


def install(scrub: Callable[[str], str] | None = None, workspace: Iterable[Path | str] = ()) -> None:
    """Rewrite every exception-carrying log record of this process from now on (idempotent; the latest scrubber
    and workspace roots win)."""
    _state["scrub"] = scrub
    _state["roots"] = tuple(sorted({os.path.realpath(r) for r in workspace}, key=len, reverse=True))
    current = logging.getLogRecordFactory()
    if getattr(current, _MARK, False):
        return

    def factory(*args: Any, **kwargs: Any) -> logging.LogRecord:
        record = current(*args, **kwargs)
        try:
            _tidy(record)
        except Exception:  # a log call must never fail for hygiene's sake: keep the line, drop its traceback
            record.exc_info = record.exc_text = record.stack_info = None
        return record

    def _tidy(record: logging.LogRecord) -> None:
        # Records are made by every library in the process, some with odd fields (Dagster's may carry no
        # level number): only a plain error record of FastMCP's is looked at without exc_info.
        level = record.levelno if isinstance(record.levelno, int) else 0
        if record.exc_info and record.exc_info[1] is not None:
            _rewrite(record)
        elif level >= logging.ERROR and str(record.name).startswith("fastmcp"):
            # FastMCP logs a ToolError it passes on without exc_info ("Error calling tool 'x'"), from inside
            # the except block: the code comes from the exception being handled.
            handled = sys.exc_info()
            if handled[1] is not None:
                record.exc_info = handled
                _rewrite(record)

    setattr(factory, _MARK, True)
    logging.setLogRecordFactory(factory)


def describe(exc: BaseException) -> tuple[str, str, bool]:
    """(code, short reason, ordinary): what one log line may say about an exception."""
    from fastmcp.exceptions import NotFoundError, ToolError, ValidationError
    from pydantic import ValidationError as PydanticError

    if isinstance(exc, ToolError) and not isinstance(exc, CodedError):
        try:
            payload = json.loads(str(exc))
        except ValueError:
            payload = None
        if isinstance(payload, dict) and "error" in payload:
            return str(payload["error"]), str(payload.get("detail") or ""), True
        if exc.__cause__ is not None:  # FastMCP wraps what the tool raised
            return describe(exc.__cause__)
    if isinstance(exc, CodedError):
        return exc.code, exc.detail, True
    if isinstance(exc, ValidationError | PydanticError):
        return "invalid_argument", "the arguments do not match the tool's input schema", True
    if isinstance(exc, NotFoundError):
        return "not_found", "no such tool, resource or prompt", True
    return "internal_error", type(exc).__name__, False


def clean_text(text: str) -> str:
    """Secrets scrubbed, paths outside the workspace shortened."""
    scrub = _state["scrub"]
    if scrub is not None:
        text = scrub(text)
    return _ABSOLUTE_PATH.sub(lambda m: _short_path(m.group(0)), text)


def _short_path(path: str) -> str:
    real = os.path.normpath(path)
    for root in _state["roots"]:
        if real == root or real.startswith(root + os.sep):
            return path
    # the longest import root it sits under: `fastmcp/server/server.py`, `mcp_bridge/errors.py`
    roots = sorted((os.path.normpath(p) for p in sys.path if p and os.path.isabs(p)), key=len, reverse=True)
    for root in roots:
        if real.startswith(root + os.sep):
            return real[len(root) + 1 :]
    return os.path.basename(real) or "<path>"


def _rewrite(record: logging.LogRecord) -> None:
    exc_type, exc, tb = record.exc_info  # type: ignore[misc]
    assert exc is not None
    try:
        message = record.getMessage()
    except Exception:  # a broken format string must not lose the record
        message = str(record.msg)
    code, reason, ordinary = describe(exc)
    reason = clean_text(reason.strip().splitlines()[0] if reason.strip() else "")[:MAX_REASON]
    record.msg = f"{clean_text(message)}: {code}" + (f": {reason}" if reason else "")
    record.args = None
    record.exc_info = None
    record.exc_text = None
    record.stack_info = None
    if not ordinary:
        logger = logging.getLogger(record.name)
        if logger.isEnabledFor(logging.DEBUG):
            text = "".join(traceback.format_exception(exc_type, exc, tb))
            logger.debug("traceback of %s (%s):\n%s", code, type(exc).__name__, clean_text(text))
