"""Reading ade.yaml into Settings: `${ENV}` references, paths relative to the file, the specs' own variables.

Relative paths in ade.yaml are resolved against the file's own folder, so the demo config works from any
working directory. `${NAME}` and `${NAME:-default}` reference environment variables (for secrets); an
unset variable without a default is a configuration error naming the key. Loading reads the environment and
the file and writes nothing: not the environment, not a registry.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from ade_platform.config.base import DEFAULT_CONFIG, ConfigError
from ade_platform.config.settings import Settings

_ENV_REF = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")

_PATH_KEYS = {
    ("home",),
    ("dbt", "project_dir"),
    ("dbt", "profiles_dir"),
    ("dbt", "target_path"),
    ("dbt", "log_path"),
    ("datasets", "recipes_dir"),
    ("snowfakery", "workspace_root"),
    ("snowfakery", "runs_dir"),
    ("snowfakery", "docs_dir"),
    ("snowflake", "config_file"),
    ("snowflake", "project_file"),
    ("snowflake", "sync", "target_dir"),
}

# The snowfakery spec's environment variables (section 10) override the `snowfakery:` section.
_SNOWFAKERY_ENV = {
    "SNOWFAKERY_MCP_WORKSPACE_ROOT": "workspace_root",
    "SNOWFAKERY_MCP_MAX_REPS": "max_reps",
    "SNOWFAKERY_MCP_MAX_TARGET_COUNT": "max_target_count",
    "SNOWFAKERY_MCP_TIMEOUT_SECONDS": "timeout_seconds",
    "SNOWFAKERY_MCP_ALLOW_DBURL": "allow_dburl",
    "SNOWFAKERY_MCP_ALLOW_NETWORK": "allow_network",
}


def _expand(value: Any, key: str, env: dict[str, str], references: dict[str, str] | None = None) -> Any:
    """`value` with every ${NAME} substituted; `references` collects key -> NAME where a whole value is one
    reference read from the environment (what a Dagster resource can name instead of carrying the secret)."""
    if isinstance(value, dict):
        return {k: _expand(v, f"{key}.{k}" if key else str(k), env, references) for k, v in value.items()}
    if isinstance(value, list):
        return [_expand(v, f"{key}[{i}]", env, references) for i, v in enumerate(value)]
    if not isinstance(value, str):
        return value

    def substitute(match: re.Match[str]) -> str:
        name, default = match.group(1), match.group(2)
        if name in env:
            return env[name]
        if default is not None:
            return default
        raise ConfigError(f"{key}: environment variable {name} is not set (referenced as ${{{name}}})")

    whole = _ENV_REF.fullmatch(value)
    if references is not None and whole and whole.group(1) in env:
        references[key] = whole.group(1)
    return _ENV_REF.sub(substitute, value)


def _resolve_paths(raw: dict[str, Any], base: Path) -> None:
    def fix(value: Any) -> Any:
        if isinstance(value, str) and value and "://" not in value:
            path = Path(value).expanduser()
            return str(path if path.is_absolute() else (base / path).resolve())
        return value

    for parts in _PATH_KEYS:
        node: Any = raw
        for part in parts[:-1]:
            node = node.get(part) if isinstance(node, dict) else None
        if isinstance(node, dict) and parts[-1] in node:
            node[parts[-1]] = fix(node[parts[-1]])
    dbt = raw.get("dbt")
    if isinstance(dbt, dict) and isinstance(dbt.get("artifact_roots"), list):
        dbt["artifact_roots"] = [fix(v) for v in dbt["artifact_roots"]]
    for wh in (raw.get("warehouses") or {}).values():
        if isinstance(wh, dict):
            for key in ("path", "credentials_path"):
                if key in wh:
                    wh[key] = fix(wh[key])
    receive = (
        (raw.get("openlineage") or {}).get("receive") if isinstance(raw.get("openlineage"), dict) else None
    )
    if isinstance(receive, dict) and isinstance(receive.get("files"), list):
        receive["files"] = [fix(v) for v in receive["files"]]
    store = raw.get("store")
    if isinstance(store, dict) and store.get("root"):
        store["root"] = fix(store["root"])


def load_settings(path: str | os.PathLike[str] | None = None, env: dict[str, str] | None = None) -> Settings:
    """Read, expand and validate the configuration. Raises ConfigError with the key and reason."""
    env = dict(os.environ if env is None else env)
    config_path = Path(path or env.get("ADE_CONFIG") or DEFAULT_CONFIG).expanduser().resolve()
    try:
        raw = yaml.safe_load(config_path.read_text()) or {}
    except FileNotFoundError:
        raise ConfigError(f"config file not found: {config_path}") from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"{config_path.name}: not valid YAML ({exc})") from None
    if not isinstance(raw, dict):
        raise ConfigError(f"{config_path.name}: the top level must be a mapping")
    # ADE_HOME (environment, else `home:`) is resolved first so the rest of the file can say ${ADE_HOME}.
    home = env.get("ADE_HOME") or _expand(raw.get("home", ".ade"), "home", env)
    home_path = Path(home).expanduser()
    env["ADE_HOME"] = str(
        home_path if home_path.is_absolute() else (config_path.parent / home_path).resolve()
    )
    references: dict[str, str] = {}
    raw = _expand(raw, "", env, references)
    raw["home"] = env["ADE_HOME"]
    # Resolved once, here: every later reader of settings.dagster_home sees the same instance.
    raw["dagster_home"] = env.get("DAGSTER_HOME") or str(Path(env["ADE_HOME"]) / "dagster")
    overrides = {key: env[name] for name, key in _SNOWFAKERY_ENV.items() if env.get(name)}
    if overrides:
        raw["snowfakery"] = {**(raw.get("snowfakery") or {}), **overrides}
    _resolve_paths(raw, config_path.parent)
    if raw.get("snowflake") is not None or env.get("SDAIDF_CONFIG_PATH") or env.get("SNOW_CONNECTION"):
        from ade_platform.lib.snowflake.project import snowflake_section

        try:
            raw["snowflake"] = snowflake_section(raw.get("snowflake"), env, config_path.parent)
        except ValueError as exc:
            raise ConfigError(f"{config_path.name}: snowflake: {exc}") from None
    raw["config_path"] = str(config_path)
    if env.get("LOG_LEVEL"):  # snowflake-cli-mcp spec 5.2 (LOG_LEVEL="info")
        raw["log_level"] = env["LOG_LEVEL"].strip().lower()
    try:
        return Settings.model_validate(raw, context={"env_references": references})
    except ValidationError as exc:
        first = exc.errors()[0]
        key = ".".join(str(p) for p in first["loc"]) or "(top level)"
        raise ConfigError(f"{config_path.name}: {key}: {first['msg']}") from None
