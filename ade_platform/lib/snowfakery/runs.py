"""Recipe runs: checked against the limits, executed in the sandbox, kept as a run folder of artifacts.

A run writes only into its own folder under runs_dir; files the caller asked for in the workspace
(output file or folder, continuation file, a SQLite database) are copied there after the run succeeded,
so a failed or timed-out run leaves nothing behind. Each kept run folder backs the resources
`snowfakery://runs/<run_id>/...`.
"""

from __future__ import annotations

import csv
import json
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ade_platform.lib.snowfakery.analysis import analyze, table_names
from ade_platform.lib.snowfakery.errors import SnowfakeryError
from ade_platform.lib.snowfakery.policy import BINARY_FORMATS, GRAPHVIZ_FORMATS, OUTPUT_FORMATS
from ade_platform.lib.snowfakery.service import RecipeSource, SnowfakeryService
from ade_platform.lib.snowfakery.workspace import MANIFEST, RUN_ID

RUNS_URI = "snowfakery://runs/"
STAGED_SQLITE = "sqlite:staged"
# resource name -> file in the run folder
FILES = {"recipe": "recipe.yml", "stdout": "stdout.txt"}
POLICY_KINDS = {"PluginNotAllowed", "SalesforceOrgRequired"}
INVALID_KINDS = {
    "ValidationError",
    "YamlSyntaxError",
    "DataGenSyntaxError",
    "DataGenYamlSyntaxError",
    "DataGenNameError",
    "DataGenImportError",
    "DataGenValidationError",
}
_CSV_PREVIEW_ROWS = 5
MIME = {
    "json": "application/json",
    "sql": "application/sql",
    "csv": "text/csv",
    "yml": "application/yaml",
    "dot": "text/vnd.graphviz",
    "svg": "image/svg+xml",
    "svgz": "image/svg+xml",
    "png": "image/png",
    "jpeg": "image/jpeg",
    "jpg": "image/jpeg",
    "ps": "application/postscript",
}


@dataclass(frozen=True)
class RunParams:
    reps: int | None = None
    target_table: str | None = None
    target_count: int | None = None
    options: dict[str, Any] = field(default_factory=dict)
    plugin_options: dict[str, Any] = field(default_factory=dict)
    output_format: str = "txt"
    capture_output: bool = True
    output_file_path: str | None = None
    output_folder_path: str | None = None
    continuation_file_path: str | None = None
    generate_continuation_file_path: str | None = None
    generate_continuation: bool = False
    strict_mode: bool = True
    seed: int | None = None
    dburl: str | None = None
    overwrite: bool = False
    generate_mapping: bool = False
    load_declarations_paths: tuple[str, ...] = ()
    timeout_seconds: float | None = None
    update_input_file: str | None = None  # update mode (CLI --update-input-file): a workspace CSV
    update_passthrough_fields: tuple[str, ...] = ()


def artifact_name(output_format: str) -> str:
    """The resource name of a format's output."""
    if output_format == "txt":
        return "stdout"
    if output_format in ("json", "sql"):
        return f"output.{output_format}"
    if output_format == "csv":
        return "csv/"
    return f"diagram.{output_format}"


def prepare_run(service: SnowfakeryService, source: RecipeSource, params: RunParams) -> dict[str, Any]:
    """Every check that can fail before anything runs (limits, paths, policy); returns the run plan."""
    return _plan(service, source, params)


def run_recipe(
    service: SnowfakeryService, source: RecipeSource, params: RunParams, plan: dict[str, Any] | None = None
) -> dict[str, Any]:
    """Run a recipe in the sandbox (after `prepare_run`'s checks) and keep its artifacts as a run."""
    ws, policy = service.workspace, service.policy
    plan = plan if plan is not None else _plan(service, source, params)
    timeout = min(params.timeout_seconds or policy.timeout_seconds, policy.timeout_seconds)
    run_id, run_dir = ws.new_run()
    try:
        (run_dir / FILES["recipe"]).write_text(source.text, encoding="utf-8")
        dburl = plan["dburl"]
        if dburl == STAGED_SQLITE:
            # the sandbox writes only into the run folder: work on a copy, delivered after success
            if plan["targets"]["sqlite"].is_file():
                shutil.copyfile(plan["targets"]["sqlite"], run_dir / "output.db")
            dburl = f"sqlite:///{run_dir / 'output.db'}"
        fmt = params.output_format
        output = run_dir / (FILES["stdout"] if fmt == "txt" else artifact_name(fmt).rstrip("/"))
        extra: dict[str, Any] = {
            "output_format": None if dburl else fmt,
            "output_path": str(output),
            # Snowfakery's validator cannot walk an update recipe's input loop (it fails on every one)
            "strict_mode": params.strict_mode and plan["update_input"] is None,
            "seed": params.seed,
            "reps": params.reps,
            "target_number": [params.target_table, params.target_count] if params.target_table else None,
            "continuation_in": str(plan["continuation_in"]) if plan["continuation_in"] else None,
            "continuation_out": str(run_dir / "continuation.yml") if plan["continuation_out"] else None,
            "dburl": dburl,
        }
        if plan["update_input"] is not None:
            plan["read_roots"].append(plan["update_input"])
            extra["update_input_file"] = str(plan["update_input"])
            extra["update_passthrough_fields"] = list(params.update_passthrough_fields)
        if params.generate_mapping:
            extra["mapping_out"] = str(run_dir / "mapping.yml")
            extra["load_declarations"] = [str(p) for p in plan["declarations"]]
        request = service.request(
            source,
            run_dir,
            mode="run",
            options=params.options,
            plugin_options=params.plugin_options,
            read_roots=plan["read_roots"],
            timeout=timeout,
            **extra,
        )
        outcome = service.sandbox.execute(request, run_dir, timeout)
        result = outcome.result
        if not result.get("ok"):
            raise _failure(service, source, result.get("errors", []))
        delivered = _deliver(run_dir, output, plan, params)
        answer = _answer(service, source, run_id, run_dir, output, params, result, delivered)
        if plan["update_input"] is not None and params.strict_mode:
            answer["warnings"].append(
                {
                    "kind": "UpdateModeWarning",
                    "message": "strict_mode was not applied: Snowfakery's validator does not support "
                    "update recipes",
                    "filename": source.display,
                    "line": None,
                }
            )
        manifest = {
            "run_id": run_id,
            "created_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "recipe": source.display,
            "output_format": fmt,
            "summary": answer["summary"],
            "resources": answer["resources"],
        }
        (run_dir / MANIFEST).write_text(json.dumps(manifest, indent=2))
    except BaseException:
        shutil.rmtree(run_dir, ignore_errors=True)
        raise
    ws.prune(policy.max_runs_kept, later=True)
    return answer


def _plan(service: SnowfakeryService, source: RecipeSource, params: RunParams) -> dict[str, Any]:
    """Every check that can fail before anything runs."""
    ws, policy = service.workspace, service.policy
    fmt = params.output_format
    if fmt not in OUTPUT_FORMATS:
        raise SnowfakeryError("invalid_argument", f"output_format must be one of {', '.join(OUTPUT_FORMATS)}")
    if params.reps is not None and params.target_table is not None:
        raise SnowfakeryError("invalid_argument", "pass either reps or target_number, not both")
    if params.reps is not None and not 1 <= params.reps <= policy.max_reps:
        raise SnowfakeryError(
            "limit_exceeded", f"reps must be between 1 and {policy.max_reps} (snowfakery.max_reps)"
        )
    if params.target_table is not None:
        count = params.target_count or 0
        if not 1 <= count <= policy.max_target_count:
            raise SnowfakeryError(
                "limit_exceeded",
                f"target_number.count must be between 1 and {policy.max_target_count} (snowfakery.max_target_count)",
            )
    if fmt in GRAPHVIZ_FORMATS and shutil.which("dot") is None:
        raise SnowfakeryError(
            "graphviz_missing", f"output format {fmt} needs Graphviz's `dot`, which is not installed"
        )
    if params.output_folder_path and fmt != "csv":
        raise SnowfakeryError(
            "invalid_argument", "output_folder_path is for output_format csv; use output_file_path"
        )
    if params.output_file_path and fmt == "csv":
        raise SnowfakeryError("invalid_argument", "csv output is a folder: use output_folder_path")
    model = analyze(source.text, source.display, source.virtual.parent, source.root, policy)
    if model.get("errors"):
        raise _failure(service, source, model["errors"])
    if model["policy_problems"]:
        raise _failure(service, source, model["policy_problems"])
    tables = table_names(model)
    nicknames = {n for t in model["tables"] for n in t["nicknames"]}
    if (
        params.target_table
        and tables
        and params.target_table not in tables
        and params.target_table not in nicknames
    ):
        raise SnowfakeryError(
            "invalid_argument",
            f"the recipe never creates {params.target_table!r}; it creates {', '.join(tables)}",
        )
    plan: dict[str, Any] = {
        "read_roots": [],
        "continuation_in": None,
        "continuation_out": params.generate_continuation or bool(params.generate_continuation_file_path),
        "dburl": None,
        "declarations": [],
        "targets": {},
        "update_input": None,
    }
    for key in ("output_file_path", "output_folder_path", "generate_continuation_file_path"):
        value = getattr(params, key)
        if value:
            target = ws.resolve(value)
            busy = target.is_file() or (target.is_dir() and any(target.iterdir()))
            if busy and not params.overwrite:
                raise SnowfakeryError(
                    "output_exists", f"{value!r} already exists (pass overwrite: true to replace it)"
                )
            plan["targets"][key] = target
    if params.continuation_file_path:
        plan["continuation_in"] = _continuation_source(service, params.continuation_file_path, plan)
    plan["declarations"] = [ws.resolve(p, must_exist=True) for p in params.load_declarations_paths]
    if params.update_input_file:
        plan["update_input"] = _update_input(service, params)
    elif params.update_passthrough_fields:
        raise SnowfakeryError("invalid_argument", "update_passthrough_fields needs update_input_file")
    if params.dburl:
        plan["dburl"] = _dburl(service, params, plan)
    return plan


def _update_input(service: SnowfakeryService, params: RunParams) -> Path:
    """Update mode reads one CSV of the workspace (Snowfakery checks the recipe is one object template)."""
    value = params.update_input_file or ""
    path = service.workspace.resolve(value, must_exist=True)
    if not path.is_file():
        raise SnowfakeryError("recipe_not_found", f"{value!r} is not a file")
    if params.reps is not None or params.target_table is not None:
        raise SnowfakeryError(
            "invalid_argument", "update mode makes one row per input row: pass neither reps nor target_number"
        )
    return path


def _continuation_source(service: SnowfakeryService, value: str, plan: dict[str, Any]) -> Path:
    if value.startswith(RUNS_URI):
        run_id, _, name = value[len(RUNS_URI) :].partition("/")
        path = service.workspace.run_file(run_id, name or "continuation.yml")
        plan["read_roots"].append(path.parent)
        return path
    path = service.workspace.resolve(value, must_exist=True)
    if not path.is_file():
        raise SnowfakeryError("recipe_not_found", f"{value!r} is not a file")
    return path


def _dburl(service: SnowfakeryService, params: RunParams, plan: dict[str, Any]) -> str:
    policy = service.policy
    if not policy.allow_dburl:
        raise SnowfakeryError(
            "dburl_not_allowed", "writing to a database URL is disabled (snowfakery.allow_dburl)"
        )
    url = params.dburl or ""
    if url.startswith("sqlite:///"):
        target = service.workspace.resolve(url[len("sqlite:///") :])
        plan["targets"]["sqlite"] = target
        return STAGED_SQLITE
    if not policy.allow_network:
        raise SnowfakeryError(
            "dburl_not_allowed", "only sqlite:///<workspace path> is allowed without snowfakery.allow_network"
        )
    return url


def _deliver(run_dir: Path, output: Path, plan: dict[str, Any], params: RunParams) -> dict[str, str]:
    """Copy what the caller asked for into the workspace (only after a successful run)."""
    targets: dict[str, Path] = plan["targets"]
    delivered: dict[str, str] = {}
    if "output_file_path" in targets:
        targets["output_file_path"].parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(output, targets["output_file_path"])
        delivered["output_file_path"] = params.output_file_path or ""
    if "output_folder_path" in targets:
        shutil.copytree(output, targets["output_folder_path"], dirs_exist_ok=True)
        delivered["output_folder_path"] = params.output_folder_path or ""
    continuation = run_dir / "continuation.yml"
    if "generate_continuation_file_path" in targets and continuation.is_file():
        targets["generate_continuation_file_path"].parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(continuation, targets["generate_continuation_file_path"])
        delivered["generate_continuation_file_path"] = params.generate_continuation_file_path or ""
    if "sqlite" in targets and (run_dir / "output.db").is_file():
        targets["sqlite"].parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(run_dir / "output.db", targets["sqlite"])
        delivered["dburl"] = "sqlite"
    return delivered


def _answer(
    service: SnowfakeryService,
    source: RecipeSource,
    run_id: str,
    run_dir: Path,
    output: Path,
    params: RunParams,
    result: dict[str, Any],
    delivered: dict[str, str],
) -> dict[str, Any]:
    base = f"{RUNS_URI}{run_id}/"
    fmt = params.output_format
    counts = result.get("row_counts", {})
    resources = [base + "recipe"]
    answer: dict[str, Any] = {"run_id": run_id, "recipe": source.display, "output_format": fmt}
    limit = service.policy.max_inline_chars
    if fmt == "csv" and output.is_dir():
        resources.append(base + "csv/")
        files = csv_listing(run_id, output, known_rows=counts)
        resources += [f["uri"] for f in files]
        answer["csv_files"] = (
            files if params.capture_output else [{k: f[k] for k in ("name", "uri")} for f in files]
        )
        if params.capture_output:
            answer["stdout_text"], answer["truncated"] = _csv_preview(service, output, limit)
    elif output.is_file():
        resources.append(base + artifact_name(fmt))
        if params.capture_output and fmt not in BINARY_FORMATS:
            text, truncated = read_capped(output, limit)
            answer["stdout_text"], answer["truncated"] = service.scrubber.secrets(text), truncated
        answer["output_bytes"] = output.stat().st_size
    for name in ("continuation.yml", "mapping.yml"):
        if (run_dir / name).is_file():
            resources.append(base + name)
    if (run_dir / "mapping.yml").is_file():
        text, truncated = read_capped(run_dir / "mapping.yml", limit)
        answer["mapping_yaml"], answer["mapping_truncated"] = text, truncated
    answer["summary"] = {
        "row_counts": counts,
        "total_rows": sum(counts.values()),
        "reps": result.get("reps"),
        "last_ids": result.get("last_ids", {}),
        "tables": result.get("tables", {}),
        "dependencies": [
            {"from_table": a, "field": f, "to_table": b} for a, f, b in result.get("dependencies", [])
        ],
        "elapsed_seconds": result.get("elapsed_seconds"),
    }
    prefix = str(run_dir)
    answer["messages"] = [
        service.scrubber.text(m.replace(prefix, base.rstrip("/"))) for m in result.get("messages", [])
    ]
    answer["warnings"] = [service.location(w, source) for w in result.get("warnings", [])]
    answer["resources"] = resources
    answer["workspace_files"] = delivered
    return answer


def _failure(
    service: SnowfakeryService, source: RecipeSource, errors: list[dict[str, Any]]
) -> SnowfakeryError:
    shown = [service.location(e, source) for e in errors]
    kinds = {e["kind"] for e in shown}
    if "PathNotAllowed" in kinds:
        code = "path_not_allowed"
    elif kinds & POLICY_KINDS:
        code = "plugin_not_allowed"
    elif "SandboxViolation" in kinds:
        code = "sandbox_violation"
    elif kinds & {"LimitExceeded", "MemoryLimit"}:
        code = "limit_exceeded"
    elif kinds & INVALID_KINDS:
        code = "recipe_invalid"
    else:
        code = "run_failed"
    first = shown[0] if shown else {"message": "the run failed", "filename": source.display, "line": None}
    where = f" ({first['filename']}:{first['line']})" if first.get("line") else ""
    return SnowfakeryError(
        code,
        f"{first['message']}{where}",
        errors=shown,
        kind=first.get("kind"),
        location={"filename": first.get("filename"), "line": first.get("line")},
    )


def read_capped(path: Path, limit: int) -> tuple[str, bool]:
    with path.open(encoding="utf-8", errors="replace") as handle:
        text = handle.read(limit + 1)
    return text[:limit], len(text) > limit


def csv_listing(run_id: str, folder: Path, known_rows: dict[str, int] | None = None) -> list[dict[str, Any]]:
    """The CSV files of a run with their row counts. Right after a run, `known_rows` (the rows the job wrote
    per table; Snowfakery writes table T to T.csv, one record per row) spares reading every file again."""
    files = []
    for path in sorted(folder.glob("*.csv")):
        rows = (known_rows or {}).get(path.stem)
        if rows is None:
            with path.open(encoding="utf-8", errors="replace", newline="") as handle:
                rows = max(sum(1 for _ in csv.reader(handle)) - 1, 0)
        files.append({"name": path.name, "rows": rows, "uri": f"{RUNS_URI}{run_id}/csv/{path.name}"})
    return files


def _csv_preview(service: SnowfakeryService, folder: Path, limit: int) -> tuple[str, bool]:
    parts: list[str] = []
    for path in sorted(folder.glob("*.csv")):
        with path.open(encoding="utf-8", errors="replace") as handle:
            head = [next(handle, "") for _ in range(_CSV_PREVIEW_ROWS + 1)]
        parts.append(f"== {path.name} ==\n" + "".join(head))
    text = service.scrubber.secrets("\n".join(parts))
    return text[:limit], len(text) > limit


def run_artifact(service: SnowfakeryService, run_id: str, name: str) -> tuple[str | bytes, str]:
    """(content, mime type) of one artifact of a kept run; `csv/` is a JSON listing of the CSV files."""
    ws = service.workspace
    if name in ("csv", "csv/"):
        folder = ws.run_file(run_id, "csv")
        return json.dumps(
            {"run_id": run_id, "files": csv_listing(run_id, folder)}, indent=2
        ), "application/json"
    path = ws.run_file(run_id, FILES.get(name, name))
    if path.is_dir():
        raise SnowfakeryError("run_not_found", f"run {run_id} has no file {name!r}")
    suffix = path.suffix.lstrip(".")
    if suffix in BINARY_FORMATS:
        return path.read_bytes(), MIME.get(suffix, "application/octet-stream")
    text = path.read_text(encoding="utf-8", errors="replace")
    return service.scrubber.secrets(text), MIME.get(suffix, "text/plain")


def is_run_id(value: str) -> bool:
    return bool(RUN_ID.match(value))
