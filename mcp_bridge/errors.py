"""The one table of error codes, and how failures become MCP error results.

A tool error reaches the agent as an MCP error result (isError: true) whose text is the JSON object
{"error": "<stable code>", "detail": "...", "hint": "...", **fields}. Every layer raises a CodedError
(ade_platform/lib/errors.py); the middleware (`StructuredErrors`) maps any of them here, in one place
(`to_tool_error`), so no toolset translates an exception by hand. Codes come from the specs; anything
unexpected (or a code missing from ERROR_CODES) is masked as internal_error so tracebacks, secrets and paths
never leave the server.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from fastmcp.exceptions import NotFoundError, ResourceError, ToolError
from fastmcp.exceptions import ValidationError as ArgumentValidationError
from fastmcp.server.middleware import Middleware

from ade_platform.lib.errors import CodedError

log = logging.getLogger("ade.mcp")
# What parsing or expanding an agent's input runs out of: a structured refusal (resource_limit), never
# internal_error.
RESOURCE_ERRORS = (MemoryError, RecursionError, OverflowError)

# code -> default hint. Every code any toolset or CodedError raises is listed here
# (tests/contract/test_error_codes.py checks it).
ERROR_CODES: dict[str, str] = {
    # generic
    "invalid_argument": "Check the parameter against the tool's input schema.",
    "internal_error": "An unexpected error occurred; the server log has details.",
    "resource_limit": "Send a smaller or less deeply nested input.",
    "not_implemented": "This capability is not available for the configured backend.",
    "path_not_allowed": "Paths must stay inside the configured project or workspace root.",
    # a task's caller cancelled it (tasks/cancel): its audit run is recorded as failed with this code
    "cancelled": "The call was cancelled by its caller; call it again to resume the wait.",
    # paging (issue 27, docs/PAGING.md)
    "invalid_cursor": "Pass next_cursor unchanged with the same arguments, or start again without cursor.",
    # the asset store
    "asset_not_materialized": "Materialize it first: `ade materialize --select <asset>`.",
    "snapshot_corrupt": "Re-materialize the asset: `ade materialize --select <asset>`.",
    "store_error": "Check the store root in ade.yaml.",
    "store_read_only": "This process may not write the store: check the store root's owner and permissions "
    "(or the object store's credentials).",
    "store_full": "The store's disk is full: free space, or lower store.retention.",
    "store_write_failed": "The store could not be written: see the gateway's log line with this code.",
    # dbt artifacts / dbt project (agent-toolset-spec categories 1 and 6)
    "node_not_found": "Use a dbt unique_id such as model.<project>.<name>.",
    "model_not_found": "List models with fs_list_models or check the unique_id.",
    "artifact_not_found": "Run dbt (or `ade materialize`) so the artifact exists.",
    "artifact_unreadable": "Regenerate the artifact with dbt.",
    "unsupported_artifact_version": "Regenerate the artifacts with dbt 1.0-1.11.",
    "catalog_not_found": "Run `dbt docs generate` (or `ade materialize --select dbt_catalog`).",
    "sources_not_found": "Run `dbt source freshness` (or `ade materialize --select dbt_sources`).",
    "compiled_not_found": "Run `dbt compile` so compiled SQL exists.",
    "invalid_regex": "Fix the regular expression.",
    "pattern_too_complex": "Simplify the pattern: fewer nested repeats and alternatives.",
    "invalid_pattern": "Use a glob such as stg_* or a unique_id such as model.<project>.<name>.",
    "ambiguous_node": "Several nodes share this name; pass the unique_id instead.",
    "file_not_found": "Paths are relative to the dbt project root, e.g. models/staging/schema.yml.",
    "yaml_invalid": "Fix the YAML syntax of the file.",
    # warehouse (category 2)
    "connection_failed": "Check the warehouse settings in ade.yaml and that it is reachable.",
    "dml_not_permitted": "Only read-only single statements are allowed here.",
    "table_excluded": "The query reads a table the exclusions (snowflake.exclusions, or their defaults) keep "
    "from agents, through a join, subquery or CTE too; query other tables.",
    "column_not_found": "Check the column name with warehouse_get_schema.",
    "table_not_found": "Check the table name with warehouse_get_schema.",
    "query_timeout": "Narrow the query or raise limits.query_timeout_seconds.",
    "query_failed": "The warehouse rejected the query; fix it using the detail.",
    "schema_not_found": "Check the schema name; the detail lists the schemas in the latest snapshot.",
    # dbt Cloud / orchestrator / BI (categories 3-5)
    "no_matching_run": "Check the job or DAG id and the time window.",
    "no_freshness_run": "Run a source freshness step in the job first.",
    "look_error": "Check the Look id and its query in Looker.",
    "upstream_error": "The external system returned an error; see detail.",
    "auth_failed": "Check the credentials configured for this system.",
    # bi-api (category 5)
    "dashboard_not_found": "List dashboards with bi_list_dashboards and use one of their dashboard_id values.",
    "look_not_found": "Check the Look id in Looker (a Look's URL ends with /looks/<id>).",
    # orchestrator (issue 12)
    "dag_not_found": "Check the DAG id (Airflow), deployment or flow name (Prefect) or job name (Dagster).",
    "task_not_found": "List the run's tasks: the detail names them.",
    "backend_not_configured": "Add the backend under orchestrators: in ade.yaml (dagster needs nothing).",
    # dbt Cloud (category 3)
    "job_not_found": "List the project's jobs with dbtcloud_list_jobs.",
    "rate_limited": "dbt Cloud is rate-limiting this token; wait and call again.",
    "dbt_cloud_not_configured": "Add a dbt_cloud: section (base_url, account_id, api_token) to ade.yaml.",
    "invalid_query": "Fix the JMESPath expression (jmespath.org): pick one part, e.g. keys(nodes) first.",
    # triggers (issue 23): what an agent may start, and with which commands and parameters
    "trigger_not_allowed": "Only allow-listed jobs and DAGs can be triggered (dbt_cloud.triggerable_jobs, "
    "orchestrators.<backend>.triggerable); an operator adds them in ade.yaml.",
    "steps_override_refused": "Steps are plain dbt commands: build, run, test, seed, snapshot, compile, source "
    "freshness, docs generate, with selection and behaviour options only (--select, --exclude, --selector, "
    "--resource-type, --fail-fast, --defer, --state, --favor-state, --threads, --warn-error).",
    "conf_refused": "conf is plain JSON within orchestrators.max_conf_bytes, max_conf_depth and max_conf_keys, "
    "matching the DAG's schema in orchestrators.<backend>.conf_schemas.",
    # incidents (issue 36, docs/INCIDENTS.md)
    "incident_not_found": "List incidents with incident_list; ids look like inc-<12 hex>.",
    "invalid_transition": "Read the incident's status with incident_get (docs/INCIDENTS.md, lifecycle).",
    "invalid_incident_action": "Use acknowledge, resolve, reopen or not_an_incident.",
    # who is calling (issue 28): roles from the caller's token (mcp.access), limits per user
    "forbidden": "Your roles do not allow this tool; an operator grants roles to scopes and groups in "
    "mcp.access (ade.yaml), or sign in with a scope or group that has one.",
    # snowflake metadata-only proxy (E-codes per the snowflake spec)
    "EXCLUDED_OBJECT": "The object matches an exclusion pattern in the snowflake policy.",
    "AUTH_FAILED": "Check the snow connection configuration.",
    "OBJECT_NOT_FOUND": "List objects with list_objects.",
    "PERMISSION_DENIED": "The configured role lacks the privilege.",
    "CLI_NOT_FOUND": "Install snowflake-cli (`snow`) and put it on PATH.",
    "QUERY_CLASSIFIED": "The statement reads data; only metadata and scalar aggregates are returned.",
    "WRITE_REFUSED": "The statement may change state; only execute_ddl accepts CREATE/ALTER/DROP.",
    "MULTI_STATEMENT": "Send one statement per call.",
    "NOT_DDL": "execute_ddl accepts CREATE/ALTER/DROP/UNDROP/COMMENT only; read with execute_sql.",
    "QUERY_FAILED": "Fix the statement; compilation errors are shown, run-time errors on data are not.",
    "QUERY_TIMEOUT": "Narrow the statement or raise snowflake.timeout_seconds.",
    "SNOWFLAKE_NOT_CONFIGURED": "Add a snowflake: section (snow connection name) to ade.yaml.",
    "SESSION_STATE_REFUSED": "Each call stands alone: no earlier result, session variable or temporary object.",
    "DDL_KIND_REFUSED": "execute_ddl creates, alters and drops tables, views, schemas, databases, sequences, file "
    "formats, tags, streams, internal stages and checked SQL tasks, alerts, procedures and functions; "
    "integrations, users, roles, grants, shares, policies and task resumes are the operator's.",
    "DDL_BODY_REFUSED": "Bodies of tasks, alerts, procedures and functions are checked as statements: LANGUAGE SQL "
    "only, no EXECUTE IMMEDIATE, CALL, EXECUTE TASK, unloads or session state inside.",
    # OpenLineage in (issue 37): the gateway's /api/v1/lineage endpoint and the files producers write
    "openlineage_invalid_event": "Send one OpenLineage 2-0-2 event (RunEvent, DatasetEvent or JobEvent) as JSON.",
    "openlineage_too_large": "Send smaller events (openlineage.receive.max_event_bytes).",
    "openlineage_unauthorized": "Send `Authorization: Bearer <openlineage.receive.token>` (or the gateway's token).",
    # snowfakery
    "recipe_invalid": "Fix the recipe; errors carry file and line.",
    "run_timeout": "Lower reps/target_number or raise the run timeout.",
    "limit_exceeded": "Lower the requested size or raise the configured limit.",
    "recipe_not_found": "Recipe paths are relative to the snowfakery workspace root; or pass recipe_text.",
    "example_not_found": "List examples with snowfakery.list_examples or read snowfakery://examples/list.",
    "run_not_found": "Run ids come from run_recipe; old runs are pruned (snowfakery.max_runs_kept).",
    "run_failed": "Fix the recipe at the reported file and line; validate_recipe checks it without running.",
    "plugin_not_allowed": "Use an allowed plugin (snowfakery.allowed_plugins); org plugins need a Salesforce org.",
    "sandbox_violation": "Recipes may not touch files outside the workspace, the network or other programs.",
    "dburl_not_allowed": "Database output is disabled; enable snowfakery.allow_dburl (sqlite in the workspace).",
    "graphviz_missing": "Install Graphviz (`dot`) for svg/png diagrams, or use format dot.",
    "output_exists": "Choose another path or pass overwrite: true.",
    "sampling_unavailable": "Use the author_recipe prompt: draft with your own model, check with validate_recipe.",
    "sampling_failed": "The client's model did not answer; retry, or use the author_recipe prompt.",
}


class ToolFailure(CodedError, ToolError):
    """The MCP side of a CodedError: raised by tool code for a failure only the tool knows, and made from any
    other CodedError by `to_tool_error`. A ToolError subclass whose message is already the JSON payload, so
    FastMCP passes it through unmasked. The code must be registered; the hint defaults to the code's."""

    def __init__(self, code: str, detail: str, hint: str | None = None, /, **extra: Any):
        if code not in ERROR_CODES:
            raise ValueError(f"unregistered error code {code!r}")
        super().__init__(code, detail, hint or ERROR_CODES[code])
        self.extra = extra  # set here, not passed on: a field may be named `code` (the snowflake E-code)
        self.args = (json.dumps(self.payload(), default=str),)

    @classmethod
    def of(cls, error: CodedError) -> ToolFailure:
        """The structured form of a CodedError: its code, detail and fields; its hint, else the code's default
        (naming the asset of a store error)."""
        hint = error.hint
        asset = getattr(error, "asset", None)
        if hint is None and isinstance(asset, str):
            hint = ERROR_CODES[error.code].replace("<asset>", asset)
        return cls(error.code, error.detail, hint, **error.fields())

    def payload(self) -> dict[str, Any]:
        return {"error": self.code, "detail": self.detail, "hint": self.hint, **self.extra}


def _describe_validation(exc: BaseException) -> str:
    cause = exc.__cause__
    errors = getattr(cause, "errors", None)
    if callable(errors):
        parts = []
        for err in errors()[:5]:
            loc = ".".join(str(p) for p in err.get("loc", ()) if p not in ("call",)) or "arguments"
            parts.append(f"{loc}: {err.get('msg')}")
        return "; ".join(parts)
    return "the arguments do not match the tool's input schema"


def _is_structured(message: str) -> bool:
    try:
        payload = json.loads(message)
    except ValueError:
        return False
    return isinstance(payload, dict) and "error" in payload


def to_tool_error(exc: BaseException, tool: str) -> ToolError:
    """Map any exception raised while running a tool to a structured ToolError."""
    if isinstance(exc, ToolError) and not isinstance(exc, ToolFailure) and exc.__cause__ is not None:
        # FastMCP wraps (and masks) exceptions from the tool body; map the original instead.
        exc = exc.__cause__
    if isinstance(exc, ToolFailure):
        return exc
    if isinstance(exc, RESOURCE_ERRORS):
        # Hostile input (a pattern, JSON or SQL nested or repeated past a bound), not a fault of the server.
        return ToolFailure(
            "resource_limit", f"tool {tool} stopped: its input exceeded a memory or nesting bound"
        )
    if isinstance(exc, ArgumentValidationError):
        return ToolFailure("invalid_argument", _describe_validation(exc))
    if isinstance(exc, ToolError) and _is_structured(str(exc)):
        return exc
    if isinstance(exc, CodedError) and exc.code in ERROR_CODES:
        return ToolFailure.of(exc)
    if isinstance(exc, CodedError):
        log.error("tool %s raised %s with the unregistered code %r", tool, type(exc).__name__, exc.code)
    else:
        log.exception("unexpected error in tool %s", tool)
    return ToolFailure("internal_error", f"tool {tool} failed unexpectedly")


def scrubbed(error: ToolError, scrub: Any) -> ToolError:
    """The structured error with every string in it passed through `scrub` (the secret scrubber)."""
    try:
        payload = json.loads(str(error))
    except ValueError:
        return error
    clean = _scrub_json(payload, scrub)
    if clean == payload:
        return error
    if isinstance(error, ToolFailure):
        code, detail, hint = clean.pop("error"), clean.pop("detail", ""), clean.pop("hint", None)
        return ToolFailure(code, detail, hint, **clean)
    return ToolError(json.dumps(clean, default=str))


def _scrub_json(value: Any, scrub: Any) -> Any:
    if isinstance(value, str):
        return scrub(value)
    if isinstance(value, dict):
        return {k: _scrub_json(v, scrub) for k, v in value.items()}
    if isinstance(value, list):
        return [_scrub_json(v, scrub) for v in value]
    return value


class StructuredErrors(Middleware):
    """Turns every tool failure, including argument validation, into the structured error shape, and a
    CodedError from a resource read into the same shape (anything else a resource raises FastMCP masks); with a
    `scrub` (the configured secrets' scrubber), no secret survives in it."""

    def __init__(self, scrub: Any = None):
        self.scrub = scrub

    def _clean(self, error: ToolError) -> ToolError:
        return scrubbed(error, self.scrub) if self.scrub is not None else error

    async def on_call_tool(self, context, call_next):  # type: ignore[override]
        try:
            return await call_next(context)
        except NotFoundError:
            raise
        except Exception as exc:
            raise self._clean(to_tool_error(exc, context.message.name)) from None

    async def on_read_resource(self, context, call_next):  # type: ignore[override]
        try:
            return await call_next(context)
        except Exception as exc:
            # FastMCP wraps (and masks) what a resource raises; the original is the cause.
            error = exc.__cause__ if isinstance(exc, ResourceError) and exc.__cause__ is not None else exc
            if (
                isinstance(error, CodedError)
                and not isinstance(error, ToolFailure)
                and error.code in ERROR_CODES
            ):
                error = ToolFailure.of(error)
            if not isinstance(error, ToolFailure):
                raise
            raise self._clean(error) from None
