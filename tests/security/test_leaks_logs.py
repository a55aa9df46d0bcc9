"""The gateway's stderr carries the error code and a short reason, never a traceback or an install path (issue 34):
`ade mcp` over stdio in a process of its own, made to fail in ordinary ways (refusals, missing files, invalid
arguments, bad YAML) and in an unexpected one (a symlink loop: internal_error)."""

from __future__ import annotations

import asyncio
import json
import os
import re
import sys
from pathlib import Path

from fastmcp import Client
from fastmcp.client.transports import StdioTransport

from tests.conftest import REPO_ROOT
from tests.mcp.dbt_support import PROJECT, manifest, model, write

# (tool, arguments, the code the answer carries)
ORDINARY = [
    ("fs_read_schema_yaml", {"schema_path": "profiles.yml"}, "path_not_allowed"),
    ("fs_read_schema_yaml", {"schema_path": "../../etc/passwd.yml"}, "path_not_allowed"),
    ("fs_read_schema_yaml", {"schema_path": "models/missing.yml"}, "file_not_found"),
    ("fs_read_schema_yaml", {"schema_path": "models/bad.yml"}, "yaml_invalid"),
    ("fs_read_schema_yaml", {"schema_path": "models/bad_date.yml"}, "yaml_invalid"),
    ("fs_read_schema_yaml", {"schema_path": "models/staging.sql"}, "path_not_allowed"),
    ("fs_read_model_sql", {"model_name": "nope"}, "model_not_found"),
    ("fs_read_model_sql", {"model_name": "stg_orders", "compiled": True}, "compiled_not_found"),
    ("fs_read_model_sql", {"model_name": "bad name!"}, "invalid_argument"),
    ("fs_find_models_referencing", {"source_or_model": "a.b.c"}, "invalid_argument"),
]
INTERNAL = [("fs_read_schema_yaml", {"schema_path": "models/loop.yml"}, "internal_error")]
SECRET = "hunter2-in-a-detail"


def _project(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    (root / "models").mkdir(parents=True)
    (root / "dbt_project.yml").write_text(f"name: {PROJECT}\nprofile: {PROJECT}\nmodel-paths: [models]\n")
    (root / "profiles.yml").write_text(f"shop: {{outputs: {{dev: {{password: {SECRET}}}}}}}\n")
    (root / "models" / "stg_orders.sql").write_text("select 1 as n\n")
    (root / "models" / "bad.yml").write_text("models: [\n")
    (root / "models" / "bad_date.yml").write_text("released: 2025-13-45\n")
    (root / "models" / "loop.yml").symlink_to(root / "models" / "loop.yml")
    write(root / "target", manifest=manifest(model("stg_orders", [])))
    return root


def _run(tmp_path: Path, log_level: str) -> tuple[list[tuple[str, dict]], str]:
    root = _project(tmp_path)
    env = {
        **os.environ,
        "ADE_HOME": str(tmp_path / "home"),
        "ADE_CONFIG": str(REPO_ROOT / "ade.yaml"),
        "LOG_LEVEL": log_level,
        "FASTMCP_LOG_LEVEL": log_level.upper(),
    }
    env.pop("DAGSTER_HOME", None)
    log = tmp_path / f"stderr-{log_level}.log"
    paths = ["--project-path", str(root), "--target-path", str(root / "target")]
    transport = StdioTransport(
        command=sys.executable,
        args=["-m", "ade_platform.cli", "mcp", "--server", "dbt-project", *paths],
        env=env,
        cwd=str(tmp_path),
        keep_alive=False,
        log_file=log,
    )

    async def session() -> list[tuple[str, dict]]:
        out = []
        async with Client(transport, timeout=60) as client:
            for tool, args, _ in ORDINARY + INTERNAL:
                result = await client.call_tool(tool, args, raise_on_error=False)
                payload = result.structured_content or {}
                if not payload and result.content:
                    payload = json.loads(result.content[0].text)
                out.append((tool, payload))
        return out

    answers = asyncio.run(session())
    return answers, log.read_text()


def _paths_outside(text: str, allowed: list[str]) -> list[str]:
    found = re.findall(r"(?<![\w.:/])/(?:[\w.@+-]+/)+[\w.@+-]*", text)
    return [p for p in found if not any(p.startswith(a) for a in allowed)]


def test_stderr_has_codes_and_short_reasons_only(tmp_path: Path) -> None:
    answers, stderr = _run(tmp_path, "warning")
    for (tool, payload), (_, args, code) in zip(answers, ORDINARY + INTERNAL, strict=True):
        assert payload.get("error") == code, (tool, args, payload)
    assert "Traceback" not in stderr and 'File "' not in stderr, stderr[-3000:]
    assert "site-packages" not in stderr and sys.prefix not in stderr, stderr[-3000:]
    assert SECRET not in stderr
    for code in ("path_not_allowed", "file_not_found", "yaml_invalid", "model_not_found", "internal_error"):
        assert code in stderr, (code, stderr[-3000:])
    assert "OSError" in stderr  # the internal error is named by its type
    # every line that reports a failure is short: one line per error, no dump
    assert all(len(line) < 400 for line in stderr.splitlines()), stderr[-3000:]
    assert not _paths_outside(stderr, [str(tmp_path)]), _paths_outside(stderr, [str(tmp_path)])


def test_debug_gets_the_traceback_of_an_internal_error_without_install_paths(tmp_path: Path) -> None:
    _, stderr = _run(tmp_path, "debug")
    assert "traceback of internal_error" in stderr, stderr[-3000:]
    assert "mcp_bridge/toolsets/dbt/project.py" in stderr or "project.py" in stderr
    assert "site-packages" not in stderr and str(REPO_ROOT) not in stderr, stderr[-3000:]
    assert SECRET not in stderr
