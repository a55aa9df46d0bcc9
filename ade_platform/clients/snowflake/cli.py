"""The `snow` CLI as a subprocess: `snow sql -q ... --format JSON_EXT`, `snow object list|describe ...`.

Credentials never pass through here: the CLI reads them from the user's snow configuration (config.toml /
connections.toml, SNOWFLAKE_HOME) or SNOWFLAKE_* environment variables. The command line carries the
connection *name* and, when configured, the context to pin (database, schema, role, warehouse).

Hardening of the CLI itself:
- `--enable-templating NONE`: the CLI would otherwise expand `<% ctx.env.NAME %>` and `&{...}` inside the
  SQL text - environment variables (secrets) straight into a query result.
- Client commands (`!source file`, `!result <query id>`, `!queries`, ...) are refused before the CLI runs:
  they read local files or fetch the raw rows of earlier queries. So is the async suffix `;>`.
- Each call runs in its own process group and is killed (the whole group) on timeout.
- Errors come back as `CliFailure` with the raw text; callers scrub it before anyone sees it.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import re
import shutil
import signal
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ade_platform.clients.snowflake.base import SnowContext, check_statement_text, classify_failure
from ade_platform.lib.snowflake.errors import CliFailure
from ade_platform.lib.snowflake.objects import ObjectKind, ObjectName, quote_ident

Row = dict[str, Any]
_BOX = re.compile(r"[╭╮╰╯─│┌┐└┘━┃]+")


def parse_json_output(text: str) -> Any:
    text = text.strip()
    if not text:
        return []
    try:
        return json.loads(text)
    except ValueError:
        # Anything printed before the document (a warning on stdout) is skipped.
        starts = [i for i in (text.find("["), text.find("{")) if i >= 0]
        if not starts:
            raise
        return json.loads(text[min(starts) :])


def error_text(stderr: str, stdout: str) -> str:
    """The CLI draws errors in a box; keep the words."""
    raw = stderr.strip() or stdout.strip()
    lines = [_BOX.sub(" ", line).strip() for line in raw.splitlines()]
    lines = [ln for ln in lines if ln and ln.lower() != "error"]
    return re.sub(r"[ \t]+", " ", "\n".join(lines)).strip()[:4000]


def locate(cli_path: str | None) -> str:
    """The configured executable, else `snow` on PATH. CLI_NOT_FOUND when neither exists."""
    if cli_path:
        path = Path(cli_path).expanduser()
        if path.is_file() and os.access(path, os.X_OK):
            return str(path)
        found = shutil.which(cli_path)
        if found:
            return found
        raise CliFailure("CLI_NOT_FOUND", "the configured snow CLI path is not an executable file")
    found = shutil.which("snow")
    if not found:
        raise CliFailure("CLI_NOT_FOUND", "the snow CLI is not on PATH")
    return found


@dataclass(frozen=True)
class SnowCli(SnowContext):
    """One connection of the user's snow configuration, pinned to a context. Implements SnowRunner."""

    cli_path: str | None = None
    env: Mapping[str, str] = field(default_factory=dict)

    def pinned(self, database: str | None, schema: str | None) -> SnowCli:
        return dataclasses.replace(self, database=database, schema=schema)

    def withheld(self) -> SnowCli:
        # Every statement is a process with a session of its own: nothing later runs in it.
        return self

    def _connection_args(self) -> list[str]:
        args: list[str] = []
        if self.connection:
            args += ["--connection", self.connection]
        for flag, value in (
            ("--database", self.database),
            ("--schema", self.schema),
            ("--role", self.role),
            ("--warehouse", self.warehouse),
        ):
            if value:
                args += [flag, quote_ident(value)]
        return args

    def command(self, args: Sequence[str]) -> list[str]:
        head = [locate(self.cli_path)]
        if self.config_file:
            head += ["--config-file", str(self.config_file)]
        return [*head, *args, "--format", "JSON_EXT", *self._connection_args()]

    def _environment(self) -> dict[str, str]:
        env = {**os.environ, **self.env}
        # No colour, no wrapping of the error box; no version check against PyPI on every call.
        env.update({"NO_COLOR": "1", "TERM": "dumb", "COLUMNS": "400", "PYTHONIOENCODING": "utf-8"})
        env.setdefault("SNOWFLAKE_CLI_AIR_GAPPED", "true")
        env.setdefault("SNOWFLAKE_CLI_IGNORE_NEW_VERSION_WARNING", "true")
        return env

    def run(self, args: Sequence[str], timeout: float | None = None) -> Any:
        argv = self.command(args)
        try:
            proc = subprocess.Popen(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                env=self._environment(),
                start_new_session=True,
                text=True,
                encoding="utf-8",
                errors="replace",
            )
        except OSError:
            raise CliFailure("CLI_NOT_FOUND", "the snow CLI could not be started") from None
        try:
            stdout, stderr = proc.communicate(timeout=timeout or self.timeout)
        except subprocess.TimeoutExpired:
            _kill_group(proc)
            raise CliFailure(
                "QUERY_TIMEOUT", f"the snow CLI did not finish within {timeout or self.timeout:g} s"
            ) from None
        if proc.returncode != 0:
            message = error_text(stderr, stdout)
            code, sf_code = classify_failure(message)
            raise CliFailure(code, message, sf_code)
        try:
            return parse_json_output(stdout)
        except ValueError:
            raise CliFailure("QUERY_FAILED", "the snow CLI printed output that is not JSON") from None

    # -- SnowRunner -------------------------------------------------------------------------------
    def sql(self, query: str) -> list[Row]:
        check_statement_text(query)
        result = self.run(["sql", "--query", query, "--enable-templating", "NONE"])
        if isinstance(result, list) and result and all(isinstance(r, list) for r in result):
            # The CLI returns one list per statement; a single statement must give one.
            raise CliFailure("QUERY_FAILED", "expected one statement's result")
        return _rows(result)

    def sql_batch(self, statements: Sequence[str]) -> list[list[Row]]:
        """Several statements in one CLI process (ours only: the agent's SQL is always one statement)."""
        for statement in statements:
            check_statement_text(statement)
        if len(statements) == 1:
            return [self.sql(statements[0])]
        text = ";\n".join(s.strip().rstrip(";") for s in statements) + ";"
        result = self.run(["sql", "--query", text, "--enable-templating", "NONE"])
        if not isinstance(result, list) or len(result) != len(statements):
            raise CliFailure("QUERY_FAILED", "unexpected result shape for a batch of statements")
        return [_rows(r) for r in result]

    def object_list(
        self, kind: ObjectKind, *, database: str | None, schema: str | None, like: str | None
    ) -> list[Row]:
        if kind.cli is None:
            raise ValueError(f"the snow CLI cannot list {kind.name}")
        args = ["object", "list", kind.cli]
        if like:
            args += ["--like", like]
        runner = self
        if schema:
            args += ["--in", "schema", quote_ident(schema)]
            runner = self.pinned(database or self.database, None)
        elif database:
            args += ["--in", "database", quote_ident(database)]
        return _rows(runner.run(args))

    def object_describe(self, name: ObjectName) -> list[Row]:
        if name.kind.cli is None:
            raise ValueError(f"the snow CLI cannot describe {name.kind.name}")
        return _rows(self.run(["object", "describe", name.kind.cli, name.fqn]))

    def version(self) -> str:
        proc = subprocess.run(
            [locate(self.cli_path), "--version"],
            capture_output=True,
            text=True,
            timeout=self.timeout,
            env=self._environment(),
            check=False,
        )
        return proc.stdout.strip()


def _rows(result: Any) -> list[Row]:
    if isinstance(result, dict):
        return [result]
    if isinstance(result, list):
        return [r if isinstance(r, dict) else {"value": r} for r in result]
    return []


def _kill_group(proc: subprocess.Popen[str]) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        proc.kill()
    with contextlib.suppress(subprocess.TimeoutExpired, ValueError):
        proc.communicate(timeout=5)
