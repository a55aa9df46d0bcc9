"""What dbt last did, from its own log: the invocations in `<project>/logs/dbt.log`, whatever their outcome.

A dbt invocation that fails before running any node (a Jinja syntax error, a `ref` to a missing model, YAML that
no longer parses: exit code 2) writes no artifact at all; its log is the only trace. dbt 1.5+ writes that log as
text ("debug" lines, an invocation starting at a `==== <time> | <invocation_id> ====` separator) or as JSON lines
(`--log-format-file json`); one file may hold both. Only the end of the file is read (bounded), and a reader that
keeps an `InvocationLog` re-reads it only when the file changed (one `stat` otherwise). No Dagster import here.
"""

from __future__ import annotations

import os
import re
import threading
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Literal

import orjson

from ade_platform.lib.orchestrators.logs import scrub_secrets
from ade_platform.lib.timestamps import parse_timestamp

LOG_FILE = "dbt.log"
RUN_RESULTS = "run_results.json"
TAIL_BYTES = 1 << 20  # the end of the log that is parsed
HEAD_BYTES = 64 << 10  # from the newest invocation's first line, when it starts before the tail
SEARCH_BYTES = 16 << 20  # how far back the newest invocation's first line is looked for
MAX_ERROR_CHARS = 2_000
MAX_INVOCATIONS = 8  # the newest invocations of the tail that are returned
# An invocation whose log has been silent this long without an outcome was killed (dbt always logs its end).
SILENT_SECONDS = 6 * 3600

Status = Literal["running", "success", "error", "parse_error"]
SUBCOMMANDS = frozenset(
    {"build", "run", "test", "seed", "snapshot", "compile", "parse", "docs", "source", "deps", "debug", "ls"}
    | {"list", "clean", "init", "run-operation", "show", "retry", "clone", "freshness"}
)
_TWO_WORDS = {"docs", "source"}

_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_CLOCK = r"(\d{2}:\d{2}:\d{2}(?:\.\d+)?)"  # the time of day a text log line starts with
# the node kinds dbt names in its messages ("Error in model x") and unique_ids ("model.pkg.x")
_NODE_KINDS = "model|test|seed|snapshot|source|analysis|unit_test"
_SEPARATOR = re.compile(rf"^={{10,}} {_CLOCK} \| ([0-9A-Za-z-]+) ={{10,}}\s*$")
_TEXT_LINE = re.compile(rf"^(?:{_ANSI.pattern})*{_CLOCK} \[(\w+)\s*\](?: \[[^\]]*\]:)? ?(.*)$")
_INVOCATION_COMMAND = re.compile(r"'invocation_command': '([^']*)'")
_COMPLETED = re.compile(r"^Command `([^`]*)` (succeeded|failed) at")
_WROTE_RUN_RESULTS = re.compile(r"^Wrote artifact RunExecutionResult to (.+)$")
# Lines that only a run of nodes prints: per-node progress and the end-of-run summary (in the tail of the log even
# when the progress of a long run is not).
_RAN_NODES = re.compile(r"^(?:\d+ of \d+ |Finished running |Completed (?:successfully|with )|Done\. PASS=)")
_NODE_NAMED = re.compile(rf"(?:Error|Failure) in (?:{_NODE_KINDS}|operation) ([\w.\-]+)")
_NODE_ID = re.compile(rf"'((?:{_NODE_KINDS})\.[\w.\-]+)'")
_ABSOLUTE_PATH = re.compile(r"(?<![\w.:/])/(?:[\w.\-]+/)*[\w.\-]+")
_HEADER_MARKERS = (b"\n" + b"=" * 30 + b" ", b'"name": "MainReportVersion"')
_FAILED_STATUSES = {"error", "fail", "runtime error"}
# The debug-level lines read (the rest of a debug log is SQL and connection chatter).
_DEBUG_WANTED = ("running dbt with arguments", "Command `", "Wrote artifact RunExecutionResult")
# The JSON events read; a line naming none of them is skipped without being parsed.
_JSON_WANTED = re.compile(
    r'"name": "(?:MainReportVersion|MainReportArgs|CommandCompleted|ArtifactWritten|Log\w*Result|EndOfRunSummary'
    r'|StatsLine|FinishedRunningStats|RunResult\w*)"|"level": "error"'
)
_NODE_RESULT_EVENTS = re.compile(r"^(?:Log\w*Result|EndOfRunSummary|StatsLine|FinishedRunningStats)$")
_FAILURE_EVENTS = {"RunResultError", "RunResultFailure", "RunResultErrorNoMessage"}


@dataclass(frozen=True)
class DbtInvocation:
    invocation_id: str | None
    command: str | None  # "build", "run", "test", "compile", "parse", "source freshness", ...
    started_at: datetime | None  # tz-aware UTC
    finished_at: datetime | None  # None while running
    status: Status
    error: str | None  # the error dbt printed, secrets scrubbed, at most ~2,000 characters
    failed_nodes: tuple[str, ...]  # unique_ids (or names when only names are known) dbt reported failing
    wrote_artifacts: bool  # whether run_results.json of this invocation exists (same invocation_id)

    @property
    def at(self) -> datetime | None:
        """When it started (or, with no start in the log, finished)."""
        return self.started_at or self.finished_at

    def to_dict(self) -> dict[str, Any]:
        """The invocation as an answer field (times ISO-8601 UTC)."""
        return {
            "invocation_id": self.invocation_id,
            "command": self.command,
            "status": self.status,
            "started_at": _iso(self.started_at),
            "finished_at": _iso(self.finished_at),
            "error": self.error,
            "failed_nodes": list(self.failed_nodes),
            "wrote_artifacts": self.wrote_artifacts,
        }


def log_file(project_dir: Path, log_path: Path | None = None) -> Path:
    """dbt's log file: `<log_path>/dbt.log`, else the project's `logs/dbt.log`."""
    return (log_path if log_path is not None else project_dir / "logs") / LOG_FILE


def newest_invocation(
    project_dir: Path, log_path: Path | None = None, target_path: Path | None = None
) -> DbtInvocation | None:
    """The newest dbt invocation in the project's log folder (`<project>/logs/dbt.log`, or `log_path`), read
    from the end of the file (bounded read), whatever its outcome."""
    found = recent_invocations(project_dir, log_path, target_path)
    return found[-1] if found else None


def recent_invocations(
    project_dir: Path, log_path: Path | None = None, target_path: Path | None = None
) -> list[DbtInvocation]:
    """The newest invocations (at most MAX_INVOCATIONS) whose start or end lies in the bounded end of the log,
    oldest first."""
    path = log_file(project_dir, log_path)
    try:
        text, modified = _read_end(path)
    except (FileNotFoundError, NotADirectoryError, PermissionError):
        return []
    return parse_log(text, modified, project_dir=project_dir, target_path=target_path)


class InvocationLog:
    """The recent invocations of one dbt log, parsed again only when the file changed (a stat otherwise)."""

    def __init__(self, project_dir: Path, log_path: Path | None = None, target_path: Path | None = None):
        self.project_dir = project_dir
        self.log_path = log_path
        self.target_path = target_path
        self.path = log_file(project_dir, log_path)
        self._lock = threading.Lock()
        self._seen: tuple[Any, list[DbtInvocation]] = (None, [])

    def recent(self) -> list[DbtInvocation]:
        try:
            st = os.stat(self.path)
            signature: Any = (st.st_ino, st.st_mtime_ns, st.st_size)
        except (FileNotFoundError, NotADirectoryError, PermissionError):
            signature = None
        with self._lock:
            if signature == self._seen[0]:
                return self._seen[1]
        found = recent_invocations(self.project_dir, self.log_path, self.target_path) if signature else []
        with self._lock:
            self._seen = (signature, found)
        return found


# ---- reading -----------------------------------------------------------------------------------------------
def _newest_header(buffer: bytes) -> int | None:
    """Offset of the start of the line that opens the newest invocation in buffer."""
    text_marker, json_marker = (buffer.rfind(marker) for marker in _HEADER_MARKERS)
    if text_marker < 0 and json_marker < 0:
        return None
    if text_marker > json_marker:
        return text_marker + 1  # the marker starts with the newline before the separator
    return buffer.rfind(b"\n", 0, json_marker) + 1


def _read_end(path: Path) -> tuple[str, datetime]:
    """The end of the log (from a line start), and its modification time. When the newest invocation starts
    before the tail, its first HEAD_BYTES are read too, so its command and start are known."""
    with open(path, "rb") as fh:
        st = os.fstat(fh.fileno())
        size = st.st_size
        start = max(0, size - TAIL_BYTES)
        fh.seek(start)
        tail = fh.read(size - start)
        if start > 0:
            tail = tail[tail.find(b"\n") + 1 :]
        head = b""
        if start > 0 and _newest_header(tail) is None:
            pos, floor = start, max(0, size - SEARCH_BYTES)
            while pos > floor:
                chunk_start = max(floor, pos - TAIL_BYTES)
                fh.seek(chunk_start)
                # 64 bytes of overlap: a marker cut at the boundary is still found
                chunk = fh.read(pos - chunk_start + 64)
                found = _newest_header(chunk)
                if found is not None:
                    fh.seek(chunk_start + found)
                    head = fh.read(HEAD_BYTES)
                    head = head[: head.rfind(b"\n") + 1]
                    break
                pos = chunk_start
    modified = datetime.fromtimestamp(st.st_mtime, UTC)
    return (head + tail).decode("utf-8", errors="replace"), modified


# ---- parsing -----------------------------------------------------------------------------------------------
@dataclass
class _Seen:
    invocation_id: str | None
    started_at: datetime | None = None
    command: str | None = None
    finished_at: datetime | None = None
    success: bool | None = None
    ran_nodes: bool = False
    run_results_at: str | None = None  # where the log says it wrote run_results.json
    errors: list[str] = field(default_factory=list)
    failed: dict[str, None] = field(default_factory=dict)
    last_at: datetime | None = None


def parse_log(
    text: str,
    modified: datetime,
    *,
    project_dir: Path | None = None,
    target_path: Path | None = None,
) -> list[DbtInvocation]:
    """Invocations in a piece of dbt log (text or JSON lines, or both), oldest first. `modified` dates the text
    lines, which carry only a time of day."""
    order: list[_Seen] = []
    by_id: dict[str, _Seen] = {}
    current: _Seen | None = None  # the text invocation lines belong to
    # The message being read: (its time of day, level, lines). Continuation lines are kept for errors only: the
    # bulk of a debug log is SQL under debug lines, which nothing here reads.
    message: tuple[str, str, list[str]] | None = None

    def seen(invocation_id: str | None) -> _Seen:
        if invocation_id and invocation_id in by_id:
            return by_id[invocation_id]
        entry = _Seen(invocation_id)
        order.append(entry)
        if invocation_id:
            by_id[invocation_id] = entry
        return entry

    def flush() -> None:
        nonlocal message
        if message is not None and current is not None:
            clock, level, lines = message
            current.last_at = current.last_at or modified
            if level != "debug" or lines[0].startswith(_DEBUG_WANTED):
                _text_message(current, _on_day(clock, modified), level, "\n".join(lines))
        message = None

    for line in text.splitlines():
        first = line[:1]
        if first == "{":
            flush()
            if _JSON_WANTED.search(line):
                _json_line(line, seen)
            continue
        if first == "=":
            separator = _SEPARATOR.match(line)
            if separator:
                flush()
                current = seen(separator[2])
                current.started_at = current.started_at or _on_day(separator[1], modified)
            continue
        timed = _TEXT_LINE.match(line) if first == "\x1b" or first.isdigit() else None
        if timed:
            flush()
            if current is None:  # the tail starts inside an invocation whose first line was not read
                current = seen(None)
            message = (timed[1], timed[2].lower(), [timed[3]])
        elif message is not None and message[1] == "error" and line.strip():
            message[2].append(line)
    flush()
    result = []
    kept = [e for e in order if e.started_at or e.finished_at or e.last_at][-MAX_INVOCATIONS:]
    for i, entry in enumerate(kept):
        result.append(_invocation(entry, i < len(kept) - 1, modified, project_dir, target_path))
    return result


def _text_message(entry: _Seen, at: datetime, level: str, text: str) -> None:
    text = _ANSI.sub("", text).rstrip()
    entry.last_at = at
    first = text.split("\n", 1)[0]
    if entry.command is None and first.startswith("running dbt with arguments"):
        found = _INVOCATION_COMMAND.search(first)
        entry.command = subcommand(found[1]) if found else None
        return
    completed = _COMPLETED.match(first)
    if completed:
        entry.finished_at, entry.success = at, completed[2] == "succeeded"
        entry.command = entry.command or subcommand(completed[1])
        return
    wrote = _WROTE_RUN_RESULTS.match(first)
    if wrote:
        entry.run_results_at = wrote[1].strip()
        return
    if _RAN_NODES.match(text.lstrip()):
        entry.ran_nodes = True
        return
    if level == "error":
        _error(entry, text)


def _json_line(line: str, seen: Any) -> None:
    try:
        event = orjson.loads(line)
        info, data = event["info"], event.get("data") or {}
        name = info.get("name") or ""
    except (orjson.JSONDecodeError, KeyError, TypeError, AttributeError):
        return  # a line cut by a concurrent write, or not dbt's
    entry: _Seen = seen(info.get("invocation_id"))
    at = parse_timestamp(info.get("ts"))
    entry.last_at = at or entry.last_at
    node = (data.get("node_info") or {}).get("unique_id") if isinstance(data, dict) else None
    if name == "MainReportVersion":
        entry.started_at = entry.started_at or at
    elif name == "MainReportArgs":
        entry.command = entry.command or subcommand((data.get("args") or {}).get("invocation_command") or "")
    elif name == "CommandCompleted":
        entry.finished_at = parse_timestamp(data.get("completed_at")) or at
        entry.success = bool(data.get("success"))
        entry.command = entry.command or subcommand(data.get("command") or "")
    elif name == "ArtifactWritten" and data.get("artifact_type") == "RunExecutionResult":
        entry.run_results_at = data.get("artifact_path")
    elif _NODE_RESULT_EVENTS.match(name):
        entry.ran_nodes = True
        if str(data.get("status") or "").lower() in _FAILED_STATUSES and node:
            entry.failed[node] = None
    elif name in _FAILURE_EVENTS:
        if node:
            entry.failed[node] = None
        _error(entry, _ANSI.sub("", str(info.get("msg") or data.get("msg") or "")).strip())
    elif info.get("level") == "error":
        _error(entry, _ANSI.sub("", str(info.get("msg") or "")).strip())


def _error(entry: _Seen, text: str) -> None:
    text = text.removeprefix("Encountered an error:").strip()
    if not text:
        return
    entry.errors.append(text)
    for uid in _NODE_ID.findall(text):
        entry.failed[uid] = None
    for name in _NODE_NAMED.findall(text):  # a name alone, unless a unique_id of that name is known
        if not any(name in known.split(".")[1:] for known in entry.failed):
            entry.failed[name] = None


def _invocation(
    entry: _Seen, newer: bool, modified: datetime, project_dir: Path | None, target_path: Path | None
) -> DbtInvocation:
    error = _clean_error(entry.errors, project_dir) if entry.errors else None
    if entry.success is None:
        silent = (datetime.now(UTC) - modified).total_seconds() > SILENT_SECONDS
        if newer or silent:
            status: Status = "error"
            error = error or "dbt stopped before logging an outcome (killed or interrupted?)"
        else:
            status = "running"
    elif entry.success:
        status = "success"
    else:
        status = "error" if entry.ran_nodes or entry.run_results_at else "parse_error"
    return DbtInvocation(
        invocation_id=entry.invocation_id,
        command=entry.command,
        started_at=entry.started_at,
        finished_at=entry.finished_at,
        status=status,
        error=error,
        failed_nodes=tuple(entry.failed),
        wrote_artifacts=_wrote_run_results(entry, target_path),
    )


def _wrote_run_results(entry: _Seen, target_path: Path | None) -> bool:
    """Whether run_results.json (in target_path, else where the log says it was written) is this invocation's."""
    if target_path is not None:
        where: Path | None = target_path / RUN_RESULTS
    else:
        where = Path(entry.run_results_at) if entry.run_results_at else None
    if where is None or entry.invocation_id is None:
        return bool(entry.run_results_at) and target_path is None
    return artifact_invocation_id(where) == entry.invocation_id


_ID_IN_HEAD = re.compile(rb'"invocation_id"\s*:\s*"([^"]+)"')


def artifact_invocation_id(path: Path) -> str | None:
    """The invocation_id in an artifact's metadata, read from its first 8 KiB (dbt writes metadata first)."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(8192)
    except (FileNotFoundError, NotADirectoryError, IsADirectoryError, PermissionError):
        return None
    found = _ID_IN_HEAD.search(head)
    return found[1].decode(errors="replace") if found else None


def subcommand(invocation: str) -> str | None:
    """'dbt --debug build -s x' -> 'build'; 'dbt source freshness' -> 'source freshness'."""
    words = invocation.split()
    for i, word in enumerate(words):
        if word in SUBCOMMANDS:
            nxt = words[i + 1] if i + 1 < len(words) else ""
            return f"{word} {nxt}" if word in _TWO_WORDS and nxt and not nxt.startswith("-") else word
    return None


def _clean_error(errors: list[str], project_dir: Path | None) -> str:
    """dbt's error messages, deduplicated, without the project's absolute path or any other path outside it,
    secrets scrubbed, at most MAX_ERROR_CHARS characters."""
    text = "\n".join(dict.fromkeys(e for e in errors if e))
    if project_dir is not None:
        text = text.replace(str(project_dir).rstrip("/") + "/", "")
    text = _ABSOLUTE_PATH.sub(lambda m: "<path>/" + m[0].rsplit("/", 1)[-1], text)
    text = scrub_secrets(text)
    if len(text) > MAX_ERROR_CHARS:
        text = text[: MAX_ERROR_CHARS - 1].rstrip() + "…"
    return text


def _on_day(clock: str, modified: datetime) -> datetime:
    """A text line's time of day (UTC) on the right date: the log's modification day, or the day before for a
    time later than the file's last write."""
    hours, minutes, rest = clock.split(":")
    seconds, _, fraction = rest.partition(".")
    moment = modified.replace(
        hour=int(hours),
        minute=int(minutes),
        second=int(seconds),
        microsecond=int((fraction + "000000")[:6]) if fraction else 0,
    )
    return moment - timedelta(days=1) if moment > modified + timedelta(minutes=1) else moment


def _iso(moment: datetime | None) -> str | None:
    return moment.astimezone(UTC).isoformat(timespec="seconds").replace("+00:00", "Z") if moment else None
