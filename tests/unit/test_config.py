"""ade.yaml is validated at start-up into one typed settings object; bad config names the key and reason."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from ade_platform.config import ConfigError, load_settings
from ade_platform.store import StoreReader, StoreWriter
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
    assert settings.store_root.url == str(tmp_path / "store") == os.fspath(settings.store_root)
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


S3_STORE = (
    "store:\n  root: s3://shared-bucket/store\n  s3:\n    endpoint_url: ${ENDPOINT}\n"
    "    access_key_id: ${KEY_ID}\n    secret_access_key: ${SECRET}\n"
)


def test_two_settings_on_one_s3_url_each_reach_their_own_endpoint(tmp_path: Path) -> None:
    # Two configurations (two tenants, a test and the gateway...) name the same bucket behind different endpoints
    # and keys. A process-wide registry keyed by URL gave the first one's readers the second one's options.
    path = write(tmp_path, S3_STORE)
    first = load_settings(path, env={"ENDPOINT": "http://127.0.0.1:9001", "KEY_ID": "first", "SECRET": "s1"})
    second = load_settings(
        path, env={"ENDPOINT": "http://127.0.0.1:9002", "KEY_ID": "second", "SECRET": "s2"}
    )
    assert first.store_root.url == second.store_root.url
    readers = StoreReader(first.store_root), StoreReader(second.store_root)  # opened after both were built
    writer = StoreWriter(first.store_root)
    for root, port, key in ((readers[0].root, 9001, "first"), (readers[1].root, 9002, "second")):
        assert root.client.meta.endpoint_url == f"http://127.0.0.1:{port}"  # what boto3 will call
        assert root.options.access_key_id == key
    assert writer.root.client.meta.endpoint_url == "http://127.0.0.1:9001"
    assert "s1" not in repr(first.store_root) and "first" not in repr(first.store_root)
    assert str(first.store_root) == "s3://shared-bucket/store"
    with pytest.raises(TypeError, match="not a local folder"):
        os.fspath(first.store_root)  # a bucket is not a path


def test_loading_settings_writes_nothing_to_the_environment_and_fixes_dagster_home(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("ADE_HOME", "ADE_CONFIG", "DAGSTER_HOME", "LOG_LEVEL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("ENDPOINT", "http://127.0.0.1:9001")
    monkeypatch.setenv("KEY_ID", "key")
    monkeypatch.setenv("SECRET", "secret")
    path = write(tmp_path, "home: ./home\ndagster:\n  storage: postgres\n" + S3_STORE)
    before = dict(os.environ)
    settings = load_settings(path)
    assert dict(os.environ) == before
    assert settings.dagster_home == tmp_path / "home" / "dagster"
    # Resolved once, at load: a later change of the process environment does not move the instance.
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "elsewhere"))
    assert settings.dagster_home == tmp_path / "home" / "dagster"
    assert load_settings(path).dagster_home == tmp_path / "elsewhere"
    assert settings.env_reference("store.s3.secret_access_key") == "SECRET"
    assert settings.env_reference("store.s3.endpoint_url") == "ENDPOINT"
