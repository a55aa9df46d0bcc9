"""A local Snowflake for the snowflake toolset tests: a fakesnow server on loopback (with the session features
of tests/fakes/fakesnow_server.py), seeded with canary values, and a snow CLI config (chmod 0600) whose named connection points at it.

Canaries are values that must never appear in any tool answer: unique strings and numbers in plain
columns, inside VARIANT values (including data-like object keys), and in excluded objects.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from tests.conftest import REPO_ROOT
from tests.processes import execute_all, free_port, wait_for_port

DATABASE = "ADE_SNOW"
SCHEMA = "APP"
CONNECTION = "ade_fake"
EXCLUSIONS = ["*.PROD_HR.*", "*_BACKUP"]

# Strings and numbers that exist only as row values.
CANARIES = [
    "qz7k1-alice@example.com",
    "Zebulon Canaryfield",
    "platinum-qz7k1",
    "9182736.45",
    "9182736",
    "CNRY-PLAN-55731",
    "7711993",
    "cnry-tag-41",
    "Canaryville-88",
    "cnrykey-4471@example.com",
    "20240131",
    "cnry-note-6620",
    "4821377.21",
    "4821377",
    "cnry-backup-3321@example.com",
    "987-65-4329",
    "5551239",
    "cnry-ssn-note-0042",
    "qz7k1-bob@example.com",
    "3141592653",
]

SEED = [
    f"CREATE DATABASE IF NOT EXISTS {DATABASE}",
    f"CREATE SCHEMA IF NOT EXISTS {DATABASE}.APP",
    f"CREATE SCHEMA IF NOT EXISTS {DATABASE}.PROD_HR",
    f"""CREATE OR REPLACE TABLE {DATABASE}.APP.CUSTOMERS (
        ID NUMBER(38,0), EMAIL VARCHAR, FULL_NAME VARCHAR, TIER VARCHAR, BALANCE NUMBER(12,2),
        SIGNUP DATE, PROFILE VARIANT)""",
    f"""INSERT INTO {DATABASE}.APP.CUSTOMERS SELECT 1, 'qz7k1-alice@example.com', 'Zebulon Canaryfield',
        'platinum-qz7k1', 9182736.45, '2024-01-31',
        PARSE_JSON('{{"plan": "CNRY-PLAN-55731", "score": 7711993, "tags": ["cnry-tag-41"],
                     "address": {{"city": "Canaryville-88"}}}}')""",
    f"""INSERT INTO {DATABASE}.APP.CUSTOMERS SELECT 2, 'qz7k1-bob@example.com', NULL, NULL, 3141592653,
        NULL, PARSE_JSON('{{"plan": "basic", "score": 1, "tags": []}}')""",
    f"INSERT INTO {DATABASE}.APP.CUSTOMERS SELECT 3, NULL, NULL, NULL, NULL, NULL, NULL",
    f"CREATE OR REPLACE TABLE {DATABASE}.APP.ORDERS (ID NUMBER, CUSTOMER_ID NUMBER, AMOUNT NUMBER(12,2), NOTE VARCHAR)",
    f"INSERT INTO {DATABASE}.APP.ORDERS VALUES (10, 1, 4821377.21, 'cnry-note-6620'), (11, 2, 5.5, NULL)",
    f"CREATE OR REPLACE TABLE {DATABASE}.APP.EVENTS (ID NUMBER, PAYLOAD VARIANT)",
    f"""INSERT INTO {DATABASE}.APP.EVENTS SELECT 1,
        PARSE_JSON('{{"cnrykey-4471@example.com": {{"n": 1}}, "20240131": {{"n": 2}}}}')""",
    f"CREATE OR REPLACE TABLE {DATABASE}.APP.CUSTOMERS_BACKUP (ID NUMBER, EMAIL VARCHAR)",
    f"INSERT INTO {DATABASE}.APP.CUSTOMERS_BACKUP VALUES (1, 'cnry-backup-3321@example.com')",
    f"CREATE OR REPLACE TABLE {DATABASE}.PROD_HR.SALARIES (ID NUMBER, SSN VARCHAR, SALARY NUMBER, NOTE VARCHAR)",
    f"INSERT INTO {DATABASE}.PROD_HR.SALARIES VALUES (1, '987-65-4329', 5551239, 'cnry-ssn-note-0042')",
    f"CREATE OR REPLACE VIEW {DATABASE}.APP.V_CUSTOMER_CONTACT AS SELECT ID, EMAIL FROM {DATABASE}.APP.CUSTOMERS",
    f"CREATE OR REPLACE VIEW {DATABASE}.APP.V_ORDER_TOTALS AS SELECT C.ID, O.AMOUNT FROM {DATABASE}.APP.V_CUSTOMER_CONTACT C "
    f"JOIN {DATABASE}.APP.ORDERS O ON O.CUSTOMER_ID = C.ID",
    f"CREATE OR REPLACE VIEW {DATABASE}.APP.V_SALARY_BAND AS SELECT ID, SALARY FROM {DATABASE}.PROD_HR.SALARIES",
]


def snow_cli() -> str | None:
    """The snow CLI: on PATH (the Makefile puts .tools/bin there), else the repo's .tools/bin."""
    found = shutil.which("snow")
    if found:
        return found
    local = REPO_ROOT / ".tools" / "bin" / "snow"
    return str(local) if local.exists() else None


def connect(port: int):
    import snowflake.connector

    return snowflake.connector.connect(
        user="fake",
        password="snow",
        account="fakesnow",
        host="127.0.0.1",
        port=port,
        protocol="http",
        database=DATABASE,
        schema=SCHEMA,
    )


def run_sql(port: int, statements: list[str]) -> None:
    execute_all(connect(port), statements)


def write_snow_config(home: Path, port: int) -> Path:
    home.mkdir(parents=True, exist_ok=True)
    path = home / "config.toml"
    path.write_text(
        f'default_connection_name = "{CONNECTION}"\n\n'
        f"[connections.{CONNECTION}]\n"
        'account = "fakesnow"\nuser = "fake"\npassword = "snow"\n'
        f'host = "127.0.0.1"\nport = {port}\nprotocol = "http"\n'
        f'database = "{DATABASE}"\nschema = "{SCHEMA}"\n'
        # fakesnow answers statements it cannot run with HTTP 500, which the connector retries until this.
        "network_timeout = 20\nlogin_timeout = 20\n"
    )
    path.chmod(0o600)
    return path


@dataclass
class SnowflakeStack:
    port: int
    config_file: Path
    cli: str | None
    home: Path

    def require_cli(self) -> str:
        if self.cli is None:
            import pytest

            pytest.skip("the snow CLI is not installed (`make setup` puts it in .tools/bin)")
        return self.cli

    def ade_yaml(self, ade_home: Path, **overrides: Any) -> Path:
        """An ade.yaml with a snowflake section pointing at this stack (``overrides`` replace its keys)."""
        ade_home.mkdir(parents=True, exist_ok=True)
        path = ade_home.parent / f"ade-{ade_home.name}.yaml"
        section: dict[str, Any] = {
            "connection": CONNECTION,
            "config_file": str(self.config_file),
            "cli_path": self.cli,
            # A `snow` process per statement needs the time; through the connector a statement the fake cannot
            # run comes back as HTTP 500, which the connector retries until this timeout: keep it short there.
            "timeout_seconds": 6 if overrides.get("transport") == "connector" else 90,
            "defaults": {"database": DATABASE, "schema": SCHEMA},
            "exclusions": {"patterns": EXCLUSIONS},
            "guardrail": {"max_scalar_rows": 50, "max_stat_rows": 1000, "variant_sample_size": 20},
            "sync": {"databases": [DATABASE]},
            **overrides,
        }
        doc = {"home": str(ade_home), "mcp": {"toolsets": ["snowflake"]}, "snowflake": section}
        path.write_text(yaml.safe_dump(doc, sort_keys=False))
        return path


@contextlib.contextmanager
def start_stack(workdir: Path) -> Iterator[SnowflakeStack]:
    cli = snow_cli()
    port = free_port()
    log = (workdir / "fakesnow.log").open("wb")
    proc = subprocess.Popen(
        # fakesnow plus LAST_QUERY_ID, DESCRIBE RESULT and dynamic PIVOT (tests/fakes/fakesnow_server.py)
        [sys.executable, "-m", "tests.fakes.fakesnow_server", "--port", str(port)],
        stdout=log,
        stderr=subprocess.STDOUT,
        cwd=workdir,
        env={**os.environ, "PYTHONUNBUFFERED": "1", "PYTHONPATH": str(REPO_ROOT)},
    )
    try:
        wait_for_port(port, proc)
        run_sql(port, SEED)
        home = workdir / "snowflake_home"
        yield SnowflakeStack(port=port, config_file=write_snow_config(home, port), cli=cli, home=home)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()
