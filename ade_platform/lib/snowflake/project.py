"""The spec's standalone project.yaml (section 5.1), mapped onto ade.yaml's `snowflake:` section.

    exclusions.patterns          regexes (``^PROD_``)      -> exclusions.regexes, verbatim (they replace the
                                                              spec's defaults, which apply when absent)
    exclusions.objectTypes                                 -> exclusions.object_types
    snowcli.connection / defaults.{warehouse,role,...}     -> connection / defaults
    guardrail.maxScalarRows, variantAnalysis.sampleSize    -> guardrail
    sync.targetDir (relative to the project file)          -> sync.target_dir

Keys written in ade.yaml win over the project file. Environment (spec 5.2): SDAIDF_CONFIG_PATH names the
project file, SNOW_CONNECTION overrides the connection name, SDAIDF_ENV names the environment (stamped on
provenance); LOG_LEVEL is read by the settings loader for the whole platform.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

_CAMEL_PATHS = {"configFile": "config_file", "targetDir": "target_dir"}


def map_project(doc: Mapping[str, Any], base: Path) -> dict[str, Any]:
    if not isinstance(doc, Mapping):
        raise ValueError("the project file must be a mapping")
    section: dict[str, Any] = {}
    exclusions = doc.get("exclusions") or {}
    if exclusions:
        if not isinstance(exclusions, Mapping):
            raise ValueError("exclusions must be a mapping (patterns, objectTypes)")
        mapped: dict[str, Any] = {}
        if "patterns" in exclusions:
            mapped["regexes"] = [str(p) for p in exclusions.get("patterns") or []]
        types = exclusions.get("objectTypes") or exclusions.get("object_types")
        if types:
            mapped["object_types"] = [str(t) for t in types]
        section["exclusions"] = mapped
    snowcli = doc.get("snowcli") or {}
    if snowcli.get("connection"):
        section["connection"] = str(snowcli["connection"])
    if snowcli.get("defaults"):
        section["defaults"] = {k: v for k, v in dict(snowcli["defaults"]).items() if v is not None}
    guardrail = doc.get("guardrail") or {}
    if guardrail:
        section["guardrail"] = dict(guardrail)
    sync = doc.get("sync") or {}
    target = sync.get("targetDir") or sync.get("target_dir")
    if target:
        path = Path(str(target)).expanduser()
        section["sync"] = {"target_dir": str(path if path.is_absolute() else (base / path).resolve())}
    return section


def _merge(base: dict[str, Any], over: Mapping[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in over.items():
        if isinstance(value, Mapping) and isinstance(out.get(key), dict):
            out[key] = _merge(out[key], value)
        else:
            out[key] = value
    return out


def _resolve(value: Any, base: Path) -> Any:
    if isinstance(value, str) and value and "://" not in value:
        path = Path(value).expanduser()
        return str(path if path.is_absolute() else (base / path).resolve())
    return value


def snowflake_section(
    section: Mapping[str, Any] | None, env: Mapping[str, str], base: Path
) -> dict[str, Any]:
    """The `snowflake:` section with the project file (if any) and the spec's environment applied."""
    own = dict(section or {})
    for camel, snake in _CAMEL_PATHS.items():
        if camel in own:
            own[snake] = _resolve(own.pop(camel), base)
    if isinstance(own.get("sync"), Mapping) and "targetDir" in own["sync"]:
        sync = dict(own["sync"])
        sync["target_dir"] = _resolve(sync.pop("targetDir"), base)
        own["sync"] = sync
    project = own.get("project_file") or env.get("SDAIDF_CONFIG_PATH")
    result = own
    if project:
        path = Path(_resolve(str(project), base))
        try:
            doc = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
        except FileNotFoundError:
            raise ValueError(f"project file not found: {path.name}") from None
        except yaml.YAMLError as exc:
            raise ValueError(f"project file {path.name} is not valid YAML ({exc})") from None
        result = _merge(map_project(doc, path.parent), own)
        result["project_file"] = str(path)
    if env.get("SNOW_CONNECTION"):
        result["connection"] = env["SNOW_CONNECTION"]
    if env.get("SDAIDF_ENV"):
        result["environment"] = env["SDAIDF_ENV"].strip()
    return result
