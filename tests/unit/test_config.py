"""ade.yaml is validated at start-up into one typed settings object; bad config names the key and reason."""

from __future__ import annotations

from pathlib import Path

import pytest

from ade_platform.config import ConfigError, load_settings
from mcp_bridge.http_security import http_auth, is_loopback
from tests.conftest import REPO_ROOT


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "ade.yaml"
    path.write_text(text)
    return path


def test_demo_config_loads_with_paths_relative_to_the_file(tmp_path: Path) -> None:
    settings = load_settings(REPO_ROOT / "ade.yaml", env={"ADE_HOME": str(tmp_path)})
    assert settings.home == tmp_path
    assert settings.dbt is not None and settings.dbt.project_dir == REPO_ROOT / "dbt_demo"
    assert settings.warehouses["demo"].path == tmp_path / "warehouse" / "demo.duckdb"
    assert settings.store_root == str(tmp_path / "store")
    assert "dbt-artifacts" in settings.mcp.toolsets


def test_env_references_resolve_and_defaults_apply(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "warehouses:\n  sf:\n    type: snowflake\n    account: acme\n    user: ${SF_USER}\n"
        "    password: ${SF_PASSWORD}\n    role: ${SF_ROLE:-ANALYST}\n",
    )
    settings = load_settings(path, env={"SF_USER": "bot", "SF_PASSWORD": "s3cret"})
    wh = settings.warehouses["sf"]
    assert wh.user == "bot" and wh.role == "ANALYST"
    assert wh.password.get_secret_value() == "s3cret"
    assert "s3cret" not in repr(settings)


def test_missing_env_var_names_the_key(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "warehouses:\n  sf:\n    type: snowflake\n    account: a\n    user: u\n    password: ${NOPE}\n",
    )
    with pytest.raises(ConfigError, match=r"warehouses\.sf\.password: environment variable NOPE is not set"):
        load_settings(path, env={})


@pytest.mark.parametrize(
    ("text", "key"),
    [
        ("limits:\n  max_rows: -1\n", "limits.max_rows"),
        ("mcp:\n  toolsets: [dbt-artifacts, nonsense]\n", "mcp.toolsets"),
        ("warehouses:\n  w:\n    type: oracle\n", "warehouses.w"),
        ("store:\n  retention: 0\n", "store.retention"),
        ("unknown_section: 1\n", "unknown_section"),
        ("mcp:\n  http:\n    port: 99999\n", "mcp.http.port"),
        ("pii:\n  ignore: ['(unclosed']\n", "pii.ignore"),
    ],
)
def test_bad_values_name_the_key(tmp_path: Path, text: str, key: str) -> None:
    with pytest.raises(ConfigError, match=key.replace(".", r"\.")):
        load_settings(write(tmp_path, text), env={})


def test_unreadable_files_are_config_errors(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="not found"):
        load_settings(tmp_path / "missing.yaml", env={})
    with pytest.raises(ConfigError, match="not valid YAML"):
        load_settings(write(tmp_path, "a: [unclosed\n"), env={})
    with pytest.raises(ConfigError, match="mapping"):
        load_settings(write(tmp_path, "- a\n- b\n"), env={})


def test_http_requires_a_token_off_loopback(tmp_path: Path) -> None:
    settings = load_settings(write(tmp_path, "{}\n"), env={})
    assert is_loopback("127.0.0.1") and is_loopback("::1") and is_loopback("localhost")
    assert not is_loopback("0.0.0.0")
    assert http_auth(settings, "127.0.0.1") is None
    with pytest.raises(ConfigError, match="bearer token is required"):
        http_auth(settings, "0.0.0.0")
    token = "t0k" * 11
    with_token = load_settings(write(tmp_path, "mcp:\n  http:\n    token: ${TOKEN}\n"), env={"TOKEN": token})
    assert http_auth(with_token, "0.0.0.0") is not None


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("mcp:\n  http:\n    token: short-token-of-31-characters-xx\n", "at least 32 characters"),
        ("mcp:\n  http:\n    allowed_hosts: ['http://mcp.example.com']\n", "not host names"),
        ("mcp:\n  http:\n    allowed_hosts: ['mcp.example.com/path']\n", "not host names"),
        ("mcp:\n  http:\n    allowed_origins: ['mcp.example.com']\n", "not origins"),
        ("mcp:\n  http:\n    allowed_origins: ['https://app.example.com/page']\n", "not origins"),
    ],
)
def test_http_token_length_and_allow_lists_are_validated(tmp_path: Path, text: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message) as refused:
        load_settings(write(tmp_path, text), env={})
    assert "short-token-of" not in str(refused.value)  # the refused token is not echoed


def test_http_allow_lists_accept_names_ports_and_origins(tmp_path: Path) -> None:
    text = (
        "mcp:\n  http:\n    allowed_hosts: [mcp.example.com, 'gw.internal:8443', '[::1]:9000']\n"
        "    allowed_origins: ['https://app.example.com', 'http://localhost:6274']\n"
    )
    http = load_settings(write(tmp_path, text), env={}).mcp.http
    assert http.allowed_hosts == ["mcp.example.com", "gw.internal:8443", "[::1]:9000"]
    assert http.allowed_origins == ["https://app.example.com", "http://localhost:6274"]
