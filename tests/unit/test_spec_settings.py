"""The specs' smaller settings: defaults, environment variables (snowflake-cli-mcp 5.2), server names."""

from __future__ import annotations

from pathlib import Path

import pytest

from ade_platform.cli import build_parser
from ade_platform.config import ConfigError, load_settings


def _yaml(tmp_path: Path, body: str = "") -> Path:
    path = tmp_path / "ade.yaml"
    path.write_text("home: .ade\n" + body)
    return path


def test_query_timeout_defaults_to_the_spec_120_seconds(tmp_path: Path) -> None:
    assert load_settings(_yaml(tmp_path), env={}).limits.query_timeout_seconds == 120


def test_log_level_and_sdaidf_env_are_read(tmp_path: Path) -> None:
    path = _yaml(tmp_path, "snowflake: {connection: dev}\n")
    settings = load_settings(path, env={"LOG_LEVEL": "info", "SDAIDF_ENV": "staging"})
    assert settings.log_level == "info" and settings.snowflake.environment == "staging"
    defaults = load_settings(path, env={})
    assert defaults.log_level == "warning" and defaults.snowflake.environment == "development"
    with pytest.raises(ConfigError, match="log_level"):
        load_settings(path, env={"LOG_LEVEL": "chatty"})


def test_the_spec_server_name_is_accepted(tmp_path: Path) -> None:
    args = build_parser().parse_args(["mcp", "--server", "snowfakery-mcp"])
    assert args.server == "snowfakery-mcp"
    from mcp_bridge.server import build_server
    from tests.helpers import list_tools

    settings = load_settings(_yaml(tmp_path), env={})
    names = {t.name for t in list_tools(build_server(settings, only="snowfakery-mcp"))}
    assert "snowfakery.run_recipe" in names and "snowfakery.validate_recipe" in names
