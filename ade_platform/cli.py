"""`ade`: materialize, status, mcp, dev (and the toolset-specific commands of later issues).

Heavy imports (Dagster, FastMCP) happen inside the commands, so `ade --help` is instant and `ade mcp`
never imports Dagster for cached tools.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Sequence

from ade_platform import __version__
from ade_platform.config import SERVER_ALIASES, TOOLSETS, ConfigError, Settings, load_settings
from ade_platform.instance import instance_environment


def _settings(args: argparse.Namespace) -> Settings:
    settings = load_settings(args.config)
    # A process-wide switch at start-up, not part of loading: the Dagster instance this command and its children
    # open (on Postgres: the URL with its driver named) reads the environment.
    os.environ.update(instance_environment(settings, os.environ))
    return settings


def cmd_materialize(args: argparse.Namespace) -> int:
    from ade_platform.ops import materialize

    settings = _settings(args)
    return materialize(settings, args.select, out=sys.stdout)


def cmd_status(args: argparse.Namespace) -> int:
    from ade_platform.ops import asset_status, dbt_folders_note, render_status

    settings = _settings(args)
    rows = asset_status(settings)
    note = dbt_folders_note(settings)
    journal = audit_backlog_note(settings)
    incidents = incidents_note(settings)
    if args.json:
        import json

        print(json.dumps(rows, indent=2, default=str))
        for line in (note, journal, incidents):  # stdout stays the JSON document
            if line:
                print(line, file=sys.stderr)
    else:
        if note:
            print(note + "\n")
        print(render_status(rows))
        print("\n" + journal)
        print("\n" + incidents)
    return 0


def incidents_note(settings: Settings) -> str:
    """The open incidents (the store's journal, as every gateway and the daemon see it)."""
    from ade_platform.lib.incidents.cycle import status_lines
    from ade_platform.store import StoreReader
    from ade_platform.store.incidents import IncidentJournal

    return "\n".join(status_lines(IncidentJournal(StoreReader(settings.store_root).root).state()))


def cmd_store_fsck(args: argparse.Namespace) -> int:
    """Exit 0: nothing wrong (or all repaired); 1: problems remain (an abandoned leftover not removed, a corrupt
    latest snapshot, a version with no pointer)."""
    from ade_platform.store.fsck import fsck, render

    settings = _settings(args)
    findings = fsck(settings.store_root, repair=args.repair, grace=args.grace)
    if args.json:
        import json

        print(json.dumps([f.to_dict() for f in findings], indent=2))
    else:
        print(render(findings, repair=args.repair))
    remaining = [f for f in findings if f.problem != "in_flight" and not f.repaired]
    return 1 if remaining else 0


def audit_backlog_note(settings: Settings) -> str:
    """The audit journal's backlog: audited calls not yet recorded as Dagster runs (ade_platform/live.py)."""
    import time

    from ade_platform.lib.audit_journal import backlog

    try:
        pending, oldest = backlog(settings.dagster_home)
    except OSError as exc:
        return f"audit journal: unreadable ({type(exc).__name__})"
    if not pending:
        return "audit journal: 0 calls pending (every audited call is recorded in Dagster)"
    age = max(0.0, time.time() - (oldest or time.time()))
    return (
        f"audit journal: {pending} call(s) pending, oldest {age:.0f} s ago (recorded by the running gateway, "
        "or by the next one to start)"
    )


def cmd_mcp(args: argparse.Namespace) -> int:
    # Quiet FastMCP's start-up banner logs: stderr of a stdio server lands in the host's log pane.
    os.environ.setdefault("FASTMCP_LOG_LEVEL", "WARNING")
    settings = _settings(args)
    # LOG_LEVEL (snowflake-cli-mcp spec 5.2, read into settings.log_level) sets the platform's own loggers.
    logging.getLogger("ade").setLevel(settings.log_level.upper())
    if args.target_path or args.project_path:
        from ade_platform.standalone import with_dbt_paths

        settings = with_dbt_paths(settings, args.target_path, args.project_path)
    from mcp_bridge.server import serve

    serve(settings, server_name=args.server, transport=args.transport, host=args.host, port=args.port)
    return 0


def cmd_dev(args: argparse.Namespace) -> int:
    from ade_platform.dev import run_dev

    return run_dev(
        _settings(args), ui_port=args.ui_port, mcp_port=args.mcp_port, materialize_first=args.materialize
    )


def cmd_guard_classify(args: argparse.Namespace) -> int:
    from ade_platform.lib.guard import GuardPolicy
    from ade_platform.lib.guard.batch import run
    from ade_platform.lib.guard.policy import DEFAULT_EXCLUSION_REGEXES

    settings = _settings(args)
    if settings.snowflake is not None:
        from ade_platform.clients.snowflake import policy_from_settings

        policy = policy_from_settings(settings.snowflake)
    else:
        print("ade guard: no snowflake section configured; using the default policy", file=sys.stderr)
        policy = GuardPolicy(exclusion_regexes=DEFAULT_EXCLUSION_REGEXES)
    from ade_platform.lib.guard.classify import parser_warning_count

    kwargs = {"database": args.database, "schema": args.schema, "explain": args.explain}
    if args.file == "-":
        status = run(policy, sys.stdin, sys.stdout, **kwargs)
    else:
        with open(args.file, encoding="utf-8") as source:
            status = run(policy, source, sys.stdout, **kwargs)
    if notes := parser_warning_count():
        print(
            f"ade guard: {notes} statement(s) used sqlglot's generic command parsing (classified conservatively)",
            file=sys.stderr,
        )
    return status


def cmd_write_lock(args: argparse.Namespace) -> int:
    import subprocess
    from pathlib import Path

    from ade_platform.lib.warehouse.file_lock import writing

    settings = _settings(args)
    warehouse = settings.warehouses.get(args.warehouse)
    if warehouse is None or warehouse.type != "duckdb":
        duckdb_names = sorted(n for n, w in settings.warehouses.items() if w.type == "duckdb")
        print(
            f"ade: no DuckDB warehouse named {args.warehouse!r} (configured: {duckdb_names})", file=sys.stderr
        )
        return 2
    run = args.run[1:] if args.run[:1] == ["--"] else args.run
    if not run:
        print("ade: write-lock needs a command after --", file=sys.stderr)
        return 2
    path = Path(warehouse.path)
    print(f"ade: announcing a write to {path.name}; waiting for its readers to let go", file=sys.stderr)
    with writing(path):
        print(f"ade: holding {path.name} for writing; running {run[0]}", file=sys.stderr)
        try:
            return subprocess.call(run)
        except OSError as exc:
            print(f"ade: cannot run {run[0]}: {exc.strerror}", file=sys.stderr)
            return 127


def cmd_openlineage_emit(args: argparse.Namespace) -> int:
    """Send the newest cross-stack graph through openlineage.emit.transport now (a catalog just pointed at ADE
    need not wait for the next build). Exit 2: no transport configured or no graph yet."""
    from ade_platform.lib.lineage.sources import LINEAGE_ASSET
    from ade_platform.store import SnapshotNotFound, StoreReader

    settings = _settings(args)
    emit = settings.openlineage.emit
    if not emit.transport:
        print("ade: openlineage.emit.transport is not set in ade.yaml: nowhere to send", file=sys.stderr)
        return 2
    try:
        lineage = StoreReader(settings.store_root).latest(LINEAGE_ASSET).data
    except SnapshotNotFound:
        print(
            f"ade: no {LINEAGE_ASSET} yet: `ade materialize --select {LINEAGE_ASSET}` first", file=sys.stderr
        )
        return 2
    from ade_platform.lib.openlineage.emit import graph_events, send

    print(
        f"ade: sent {send(emit, graph_events(lineage, emit))} OpenLineage events ({emit.transport.get('type')})"
    )
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="ade",
        description="ADE Platform: Dagster-materialized data-stack metadata, served to agents over MCP.",
    )
    parser.add_argument("--version", action="version", version=f"ade-platform {__version__}")
    parser.add_argument("--config", help="path to ade.yaml (default: $ADE_CONFIG, else the demo's ade.yaml)")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    p = sub.add_parser("materialize", help="materialize assets into $ADE_HOME with a progress display")
    p.add_argument(
        "--select",
        default="*",
        help="Dagster asset selection (e.g. 'dbt_lineage_index', 'group:dbt_artifacts', '*'); default all",
    )
    p.set_defaults(func=cmd_materialize)

    p = sub.add_parser("status", help="each asset: last materialized, age, run id, stale or not")
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")
    p.set_defaults(func=cmd_status)

    p = sub.add_parser(
        "store", help="the asset store: fsck (find, and with --repair remove, what killed writers left)"
    )
    store = p.add_subparsers(dest="store_command", required=True, metavar="SUBCOMMAND")
    s = store.add_parser("fsck", help="report half-written versions, leftovers and corrupt latest snapshots")
    s.add_argument("--repair", action="store_true", help="remove the leftovers of writers that are gone")
    s.add_argument(
        "--grace",
        type=float,
        default=3600.0,
        help="seconds after which an unfinished version is abandoned whoever wrote it (default 3600; a writer "
        "on this host whose process is gone is abandoned at once)",
    )
    s.add_argument("--json", action="store_true", help="print JSON instead of a table")
    s.set_defaults(func=cmd_store_fsck)

    p = sub.add_parser("mcp", help="serve the MCP gateway (all enabled toolsets) or one toolset")
    p.add_argument(
        "--server",
        choices=[*TOOLSETS, *SERVER_ALIASES],
        help="serve only this toolset (the specs' server names are accepted too: snowfakery-mcp)",
    )
    p.add_argument("--transport", choices=("stdio", "http"), default="stdio")
    p.add_argument("--host", help="HTTP host (default from ade.yaml: 127.0.0.1)")
    p.add_argument("--port", type=int, help="HTTP port (default from ade.yaml: 8765)")
    p.add_argument("--target-path", help="serve the artifacts of this dbt target directory (any dbt project)")
    p.add_argument("--project-path", help="the dbt project root for dbt-project tools")
    p.set_defaults(func=cmd_mcp)

    p = sub.add_parser("guard", help="the Snowflake guardrail: test the configured policy on statements")
    guard = p.add_subparsers(dest="guard_command", required=True, metavar="SUBCOMMAND")
    g = guard.add_parser("classify", help="classify statements (one per line, or JSON lines with `sql`)")
    g.add_argument("file", nargs="?", default="-", help="file of statements (default: stdin)")
    g.add_argument("--database", help="default database of the statements (for exclusion matching)")
    g.add_argument("--schema", help="default schema of the statements")
    g.add_argument("--explain", action="store_true", help="add a human explanation of each reason")
    g.set_defaults(func=cmd_guard_classify)

    p = sub.add_parser(
        "write-lock",
        help="run a command that writes a DuckDB warehouse (a dbt run in a shell) under the platform's write "
        "lock: the gateway's reads give the file up and wait, instead of making the command fail on DuckDB's lock",
    )
    p.add_argument("warehouse", help="the DuckDB warehouse's name in ade.yaml")
    p.add_argument("run", nargs=argparse.REMAINDER, metavar="-- COMMAND ...")
    p.set_defaults(func=cmd_write_lock)

    p = sub.add_parser(
        "openlineage", help="OpenLineage out: send the cross-stack graph now (docs/OPENLINEAGE.md)"
    )
    ol = p.add_subparsers(dest="openlineage_command", required=True, metavar="SUBCOMMAND")
    o = ol.add_parser("emit", help="send the newest cross-stack graph through openlineage.emit.transport")
    o.set_defaults(func=cmd_openlineage_emit)

    p = sub.add_parser("dev", help="run the Dagster UI and the MCP gateway (HTTP on loopback)")
    p.add_argument("--ui-port", type=int, default=3000)
    p.add_argument("--mcp-port", type=int, help="default from ade.yaml (8765)")
    p.add_argument("--materialize", action="store_true", help="materialize everything before serving")
    p.set_defaults(func=cmd_dev)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except ConfigError as exc:
        print(f"ade: configuration error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    sys.exit(main())
