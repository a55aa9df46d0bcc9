"""One sandboxed Snowfakery job, executed inside a child forked by the zygote (never in the server).

`run_job(request_path)` reads the request the parent wrote into the run folder, locks the process down
(own stdio, empty environment, resource limits, audit hook), runs Snowfakery through its public API
(`snowfakery.api.generate_data`, as the CLI does) and writes `_result.json` next to the request. The
result carries structured errors (kind, message, filename, line), warnings, Snowfakery's messages and
row counts per table. Nothing here prints to the server's stdout.
"""

from __future__ import annotations

import io
import json
import os
import random
import re
import resource
import signal
import tempfile
import time
import warnings
from collections import Counter
from pathlib import Path
from typing import Any

from ade_platform.lib.snowfakery import cyaml

REQUEST = "_request.json"
RESULT = "_result.json"
DOORBELL = "_done"  # a FIFO the parent waits on (sandbox.Sandbox.execute)
STDIO_LOG = "_stdio.log"
_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_MAX_ERRORS = 50
_MAX_MESSAGE = 2000
_FILE_LIMIT: list[bool] = []  # set by the SIGXFSZ handler


class RowLimitReached(BaseException):
    """Raised when a run writes more rows than allowed (BaseException: Snowfakery must not wrap it)."""


class NamedText(io.StringIO):
    """Recipe text with a (virtual) file name: relative includes and datasets resolve beside it."""

    def __init__(self, text: str, name: str) -> None:
        super().__init__(text)
        self.name = name


def run_job(request_path: str) -> None:
    request = json.loads(Path(request_path).read_text())
    run_dir = Path(request["run_dir"])
    started = time.monotonic()
    _isolate(run_dir, request)
    result: dict[str, Any]
    try:
        result = _execute(request)
    except BaseException as exc:  # every failure becomes a structured result
        result = {"ok": False, "errors": describe(exc)}
        if _FILE_LIMIT or _file_limit_reached(run_dir, int(request["limits"]["max_output_bytes"])):
            # the failing write may surface as anything (SQLite says "disk I/O error"): name the cause
            limit = _error("LimitExceeded", "an output file reached snowfakery.max_output_bytes")
            result["errors"] = [limit, *result["errors"]]
    from ade_platform.lib.snowfakery import guard

    refused = [_error("SandboxViolation", m) for m in dict.fromkeys(guard.VIOLATIONS)][:5]
    if refused and not result["ok"]:
        # Snowfakery may have wrapped the refusal in its own error: name the real cause first
        result["errors"] = refused + result["errors"]
    elif refused:
        result["warnings"] = result.get("warnings", []) + refused
    result["elapsed_seconds"] = round(time.monotonic() - started, 4)
    tmp = run_dir / (RESULT + ".tmp")
    tmp.write_text(json.dumps(result, default=str))
    os.replace(tmp, run_dir / RESULT)
    _ring(request.get("doorbell"))


def _ring(doorbell: str | None) -> None:
    """Tell the waiting parent the result is there (it also finds it by polling, should this fail)."""
    if not doorbell:
        return
    try:
        fd = os.open(doorbell, os.O_WRONLY | os.O_NONBLOCK)
    except OSError:  # the parent stopped waiting
        return
    try:
        os.write(fd, b"1")
    except OSError:
        pass
    finally:
        os.close(fd)


def _isolate(run_dir: Path, request: dict[str, Any]) -> None:
    log = os.open(run_dir / STDIO_LOG, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.dup2(log, 1)
    os.dup2(log, 2)
    limits = request["limits"]
    tmp = run_dir / "_tmp"
    tmp.mkdir(exist_ok=True)
    path = os.environ.get("PATH", os.defpath)
    os.environ.clear()  # nothing of the server's environment is visible to a recipe
    os.environ.update({"PATH": path, "TMPDIR": str(tmp), "HOME": str(tmp), "LANG": "C.UTF-8"})
    tempfile.tempdir = str(tmp)
    fsize = int(limits["max_output_bytes"])
    # oversize writes fail with EFBIG instead of killing the run; the handler remembers that they did
    signal.signal(signal.SIGXFSZ, lambda *_: _FILE_LIMIT.append(True))
    resource.setrlimit(resource.RLIMIT_FSIZE, (fsize, fsize))
    if limits.get("max_memory_mb"):
        memory = int(limits["max_memory_mb"]) * 1024 * 1024
        resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
    cpu = int(limits["cpu_seconds"])
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 5))
    os.chdir(request["cwd"])
    from ade_platform.lib.snowfakery import guard

    guard.install(
        read_roots=request["read_roots"],
        write_roots=[str(run_dir)],
        allow_network=bool(request.get("allow_network")),
        allow_exec=("dot",) if request.get("output_format") in _graphviz_formats() else (),
    )


def _file_limit_reached(run_dir: Path, limit: int) -> bool:
    for folder, _, files in os.walk(run_dir):
        for name in files:
            try:
                if os.path.getsize(os.path.join(folder, name)) >= limit:
                    return True
            except OSError:
                continue
    return False


def _graphviz_formats() -> tuple[str, ...]:
    from ade_platform.lib.snowfakery.policy import GRAPHVIZ_FORMATS

    return GRAPHVIZ_FORMATS


def _execute(request: dict[str, Any]) -> dict[str, Any]:
    from snowfakery.api import generate_data

    _enforce_plugin_policy(request)
    counts = _count_rows(int(request["limits"]["max_rows"]))
    _seed(request)
    mode = request["mode"]
    if mode == "validate":
        return _validate(request)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        if mode == "parse":
            return _parse_only(_recipe(request), request, caught)
        app, kwargs = _generation(request)
        _add_outputs(kwargs, request)
        summary = generate_data(_recipe(request), **kwargs)
    return {
        "ok": True,
        "errors": [],
        "warnings": _warning_list(caught),
        "messages": _clean(app.messages),
        "row_counts": dict(sorted(counts.items())),
        "reps": app.rep_count,
        "last_ids": {k: v for k, v in app.last_ids.items() if v},
        "tables": {
            name: sorted(f for f in info.fields if not f.startswith("__"))
            for name, info in sorted(summary.tables.items())
        },
        "dependencies": sorted(
            {(d.table_name_from, d.field_name, d.table_name_to) for d in summary.intertable_dependencies}
        ),
    }


def _seed(request: dict[str, Any]) -> None:
    from faker import Faker

    if request.get("seed") is not None:
        random.seed(request["seed"])
        Faker.seed(request["seed"])


def _recipe(request: dict[str, Any]) -> Any:
    """The recipe to read: its path, or its text under its (virtual) name (a fresh reader each time)."""
    path = request.get("recipe_path")
    return path if path is not None else NamedText(request["recipe_text"], request["recipe_name"])


def _generation(request: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
    """The quiet application that collects Snowfakery's messages, and generate_data's arguments."""
    from snowfakery.api import COUNT_REPS, stopping_criteria_from_target_number

    from ade_platform.lib.snowfakery.quiet import QuietApplication

    target = tuple(request["target_number"]) if request.get("target_number") else None
    if request.get("reps"):
        target = (COUNT_REPS, int(request["reps"]))
    app = QuietApplication(stopping_criteria_from_target_number(target))
    kwargs: dict[str, Any] = {
        "parent_application": app,
        "user_options": request.get("options") or {},
        "plugin_options": request.get("plugin_options") or {},
        "target_number": target,
        "strict_mode": bool(request.get("strict_mode", True)),
    }
    return app, kwargs


def _validate(request: dict[str, Any]) -> dict[str, Any]:
    """Validate with the recipe read by libyaml; a verdict with an error or a warning (which may name a line) is
    given by a second validation with Snowfakery's own reader, so every answer is the one Snowfakery gives."""
    with cyaml.c_parsed_recipes() as fast:
        if fast:
            try:
                verdict = _validate_once(request)
            except Exception:  # answered below, by Snowfakery's own reader with its own message
                verdict = None
            if verdict is not None and not verdict["warnings"]:
                return verdict
    _seed(request)
    return _validate_once(request)


def _validate_once(request: dict[str, Any]) -> dict[str, Any]:
    from snowfakery.api import generate_data

    app, kwargs = _generation(request)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        outcome = generate_data(
            _recipe(request), validate_only=True, output_format="txt", output_file=io.StringIO(), **kwargs
        )
    return {
        "ok": True,
        "errors": [],
        "warnings": [_where(w, "ValidationWarning") for w in outcome.warnings] + _warning_list(caught),
        "messages": _clean(app.messages),
    }


def _parse_only(recipe: Any, request: dict[str, Any], caught: list) -> dict[str, Any]:
    from snowfakery.data_generator import merge_options, process_plugins, process_plugins_options
    from snowfakery.parse_recipe_yaml import parse_recipe
    from snowfakery.utils.files import open_file_like

    with open_file_like(recipe, "r") as (_, handle):
        parsed = parse_recipe(handle)
    _, plugins = process_plugins(parsed.plugins)
    plugin_options = process_plugins_options(plugins, request.get("plugin_options") or {})
    merge_options(parsed.options, request.get("options") or {}, plugin_options)
    return {"ok": True, "errors": [], "warnings": _warning_list(caught), "messages": []}


def _add_outputs(kwargs: dict[str, Any], request: dict[str, Any]) -> None:
    fmt = request.get("output_format")
    if request.get("dburl"):
        kwargs["dburls"] = [request["dburl"]]
    elif fmt == "csv":
        kwargs.update(output_format="csv", output_folder=request["output_path"])
    elif fmt:
        kwargs.update(output_format=fmt, output_file=Path(request["output_path"]))
    if request.get("continuation_in"):
        kwargs["continuation_file"] = Path(request["continuation_in"])
    if request.get("continuation_out"):
        kwargs["generate_continuation_file"] = Path(request["continuation_out"])
    if request.get("update_input_file"):
        kwargs["update_input_file"] = Path(request["update_input_file"])
        kwargs["update_passthrough_fields"] = list(request.get("update_passthrough_fields") or ())
    if request.get("mapping_out"):
        kwargs["generate_cci_mapping_file"] = Path(request["mapping_out"])
        kwargs["load_declarations"] = [Path(p) for p in request.get("load_declarations") or []]


def _count_rows(max_rows: int) -> Counter[str]:
    """Count rows per table as they are written, and stop the run past `max_rows`."""
    from snowfakery.output_streams import MultiplexOutputStream, OutputStream

    counts: Counter[str] = Counter()
    depth = [0]
    total = [0]

    def counting(original: Any) -> Any:
        def write_row(self: Any, tablename: str, row: dict) -> None:
            if depth[0] == 0:
                counts[tablename] += 1
                total[0] += 1
                if total[0] > max_rows:
                    raise RowLimitReached(
                        f"the run would write more than {max_rows} rows (snowfakery.max_rows)"
                    )
            depth[0] += 1
            try:
                original(self, tablename, row)
            finally:
                depth[0] -= 1

        return write_row

    OutputStream.write_row = counting(OutputStream.write_row)  # type: ignore[method-assign]
    MultiplexOutputStream.write_row = counting(MultiplexOutputStream.write_row)  # type: ignore[method-assign]
    return counts


def _enforce_plugin_policy(request: dict[str, Any]) -> None:
    """Refuse plugins outside the allow-list at import time too (the static check may not see them all)."""
    import snowfakery.parse_recipe_yaml as parser
    from snowfakery.data_gen_exceptions import DataGenImportError

    from ade_platform.lib.snowfakery.policy import RunPolicy

    policy = RunPolicy(
        allow_network=bool(request.get("allow_network")), allowed_plugins=tuple(request["allowed_plugins"])
    )
    original = parser.resolve_plugins

    def resolve_plugins(specs: list, *args: Any, **kwargs: Any) -> Any:
        for name, line in specs:
            problem = policy.plugin_problem(name)
            if problem:
                raise DataGenImportError(
                    problem[1], getattr(line, "filename", None), getattr(line, "line_num", None)
                )
        return original(specs, *args, **kwargs)

    parser.resolve_plugins = resolve_plugins


def describe(exc: BaseException) -> list[dict[str, Any]]:
    """Structured errors (kind, message, filename, line) from whatever a run raised."""
    import yaml
    from snowfakery.data_gen_exceptions import DataGenError, DataGenValidationError

    from ade_platform.lib.snowfakery.guard import SandboxViolation

    if isinstance(exc, DataGenValidationError):
        return [_where(e, "ValidationError") for e in exc.validation_result.errors[:_MAX_ERRORS]]
    if isinstance(exc, DataGenError):
        return [_error(type(exc).__name__, exc.message, exc.filename, exc.line_num)]
    if isinstance(exc, yaml.MarkedYAMLError):
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark else None
        return [_error("YamlSyntaxError", f"{exc.problem or exc}", getattr(mark, "name", None), line)]
    if isinstance(exc, RowLimitReached):
        return [_error("LimitExceeded", str(exc))]
    if isinstance(exc, SandboxViolation):
        return [_error("SandboxViolation", str(exc))]
    if isinstance(exc, MemoryError):
        return [_error("MemoryLimit", "the run exceeded its memory limit (snowfakery.max_memory_mb)")]
    if isinstance(exc, OSError) and exc.errno == 27:  # EFBIG
        return [_error("LimitExceeded", "an output file exceeded snowfakery.max_output_bytes")]
    return [_error(type(exc).__name__, str(exc) or type(exc).__name__)]


def _error(kind: str, message: Any, filename: Any = None, line: Any = None) -> dict[str, Any]:
    text = _ANSI.sub("", str(message))[:_MAX_MESSAGE]
    return {
        "kind": kind,
        "message": text,
        "filename": filename,
        "line": line if isinstance(line, int) else None,
    }


def _where(item: Any, kind: str) -> dict[str, Any]:
    return _error(kind, item.message, item.filename, item.line_num)


def _warning_list(caught: list) -> list[dict[str, Any]]:
    seen: list[dict[str, Any]] = []
    for w in caught:
        text = str(w.message)
        if issubclass(w.category, DeprecationWarning) or any(s["message"] == text for s in seen):
            continue
        seen.append(_error(w.category.__name__, text))
    return seen[:_MAX_ERRORS]


def _clean(messages: list[str]) -> list[str]:
    return [_ANSI.sub("", m).strip() for m in messages if m and m.strip()][:200]
