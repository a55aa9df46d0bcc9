"""Reading a dbt project's files safely: every path stays inside its root (symlinks resolved first).

Used by the dbt-project tools (model SQL, schema YAML, dbt_project.yml, file-level references) and by the
dbt-artifacts tools that accept an artifact path. Nothing here executes dbt or renders Jinja.
"""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Iterable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import yaml

from ade_platform.lib.errors import CodedError
from ade_platform.lib.file_secrets import credential_store

MAX_FILE_BYTES = 8 * 1024 * 1024
# Credential folders looked for in the real path too (a symlinked folder inside the project may lead to one).
_SECRET_DIR_NAMES = {".dbt", ".ssh", ".aws", ".gnupg", ".snowflake"}
_SKIP_DIRS = {"target", "dbt_packages", "dbt_modules", "logs", "node_modules", "__pycache__"}
_NAME = re.compile(r"^[A-Za-z0-9_\-]+$")


class ProjectFileError(CodedError):
    """code is an ERROR_CODES key; detail names paths relative to the project root only."""


def confine(path: str | os.PathLike[str], roots: Iterable[Path], base: Path | None = None) -> Path:
    """The real path of `path` (relative ones resolved from `base`) if it lies inside one of `roots`."""
    text = os.fspath(path)
    if not text or "\x00" in text:
        raise ProjectFileError("path_not_allowed", "empty or malformed path")
    candidate = Path(text).expanduser()
    if not candidate.is_absolute():
        if base is None:
            raise ProjectFileError("path_not_allowed", f"{text!r} is relative and there is no base folder")
        candidate = base / candidate
    real = Path(os.path.realpath(candidate))
    for root in roots:
        real_root = Path(os.path.realpath(root))
        if real == real_root or real.is_relative_to(real_root):
            return real
    raise ProjectFileError(
        "path_not_allowed",
        f"{text!r} resolves outside the allowed roots (dbt project, target path, ADE home)",
    )


def relative_to_root(path: Path, root: Path) -> str:
    try:
        return str(path.relative_to(os.path.realpath(root)))
    except ValueError:
        return path.name


def mtime_iso(path: Path) -> str:
    return (
        datetime.fromtimestamp(path.stat().st_mtime, UTC).isoformat(timespec="seconds").replace("+00:00", "Z")
    )


def refuse_credential_store(path: Path, display: str) -> None:
    """path_not_allowed for a file that holds credentials (profiles.yml, .env, keys, anything under .dbt/...;
    `ade_platform.lib.file_secrets`), judged on the name asked for and on the real file it leads to."""
    rule = credential_store(Path(display).parent / path.name)  # the folders asked for, the file read
    if rule is None:
        parts = [p for p in path.parts if p.lower() in _SECRET_DIR_NAMES]
        rule = f"folder {parts[0]}" if parts else None
    if rule is not None:
        raise ProjectFileError(
            "path_not_allowed", f"{display} is a credential store ({rule}) and is never served", rule=rule
        )


def read_text(path: Path, display: str) -> str:
    refuse_credential_store(path, display)
    try:
        size = path.stat().st_size
    except FileNotFoundError:
        raise ProjectFileError("file_not_found", f"{display} does not exist") from None
    if not path.is_file():
        raise ProjectFileError("file_not_found", f"{display} is not a file")
    if size > MAX_FILE_BYTES:
        raise ProjectFileError("limit_exceeded", f"{display} is {size} bytes (limit {MAX_FILE_BYTES})")
    return path.read_text(encoding="utf-8", errors="replace")


def load_yaml(text: str) -> Any:
    """The YAML as the tools serve it: the safe loader (C when available)."""
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    return yaml.load(text, Loader=loader)


def read_yaml(path: Path, display: str) -> Any:
    if path.suffix.lower() not in (".yml", ".yaml"):
        raise ProjectFileError("path_not_allowed", f"{display} is not a YAML file (.yml or .yaml)")
    text = read_text(path, display)
    try:
        return load_yaml(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark is not None else ""
        raise ProjectFileError("yaml_invalid", f"{display} is not valid YAML{where}") from None
    except (ValueError, OverflowError):  # a scalar the loader cannot construct: a date like 2025-13-45
        raise ProjectFileError("yaml_invalid", f"{display} holds a value YAML cannot construct") from None


def project_config(root: Path) -> dict[str, Any]:
    path = root / "dbt_project.yml"
    content = read_yaml(path, "dbt_project.yml")
    if not isinstance(content, dict):
        raise ProjectFileError("yaml_invalid", "dbt_project.yml is not a mapping")
    return content


def model_paths(root: Path) -> list[Path]:
    """The project's model folders (model-paths; source-paths before dbt 1.0), confined to the root."""
    try:
        config = project_config(root)
    except ProjectFileError:
        config = {}
    names = config.get("model-paths") or config.get("source-paths") or ["models"]
    out = []
    for name in names if isinstance(names, list) else [names]:
        try:
            folder = confine(str(name), [root], root)
        except ProjectFileError:
            continue
        if folder.is_dir():
            out.append(folder)
    return out


def iter_model_files(root: Path) -> Iterator[Path]:
    """.sql and .py files under the model paths, skipping build output and installed packages."""
    real_root = Path(os.path.realpath(root))
    for folder in model_paths(root):
        for dirpath, dirnames, filenames in os.walk(folder):
            dirnames[:] = sorted(d for d in dirnames if not d.startswith(".") and d not in _SKIP_DIRS)
            for filename in sorted(filenames):
                if filename.endswith((".sql", ".py")):
                    path = Path(dirpath) / filename
                    real = Path(os.path.realpath(path))
                    if real.is_relative_to(real_root):  # a symlink out of the project is not followed
                        yield path


def find_model_file(root: Path, name: str) -> Path | None:
    for path in iter_model_files(root):
        if path.stem == name:
            return path
    return None


def package_file(
    root: Path, project: str | None, package: str | None, original_file_path: str
) -> Path | None:
    """Where a manifest node's file lives: the root project, or an installed package under dbt_packages."""
    candidates = []
    if not package or package == project:
        candidates.append(root / original_file_path)
    else:
        for folder in ("dbt_packages", "dbt_modules"):
            candidates.append(root / folder / package / original_file_path)
            candidates.extend(sorted((root / folder).glob(f"*/{original_file_path}")))
    for candidate in candidates:
        if candidate.is_file():
            return candidate
    return None


def compiled_file(target: Path, package: str, original_file_path: str) -> Path | None:
    """The newest compiled file for a node: <target>/compiled/<package>/<path>, or the same under a
    per-invocation folder (<target>/<invocation>/compiled/..., as dagster-dbt writes them)."""
    rel = Path("compiled") / package / original_file_path
    candidates = [target / rel]
    try:
        candidates += [
            entry / rel for entry in target.iterdir() if entry.is_dir() and (entry / "compiled").is_dir()
        ]
    except (FileNotFoundError, NotADirectoryError):
        return None
    existing = [c for c in candidates if c.is_file()]
    return max(existing, key=lambda p: p.stat().st_mtime_ns) if existing else None


def reference_pattern(target: str) -> tuple[str, re.Pattern[str]]:
    """('ref'|'source', regex) for a model name or `source_name.table_name`."""
    parts = target.split(".")
    if not all(_NAME.match(p) for p in parts) or len(parts) > 2:
        raise ProjectFileError(
            "invalid_argument", "expected a model name or source_name.table_name (letters, digits, _ and -)"
        )
    q = r"""['"]"""
    if len(parts) == 2:
        src, table = (re.escape(p) for p in parts)
        return "source", re.compile(rf"source\s*\(\s*{q}{src}{q}\s*,\s*{q}{table}{q}\s*\)")
    name = re.escape(parts[0])
    return "ref", re.compile(rf"\bref\s*\(\s*(?:{q}[\w\-]+{q}\s*,\s*)?{q}{name}{q}\s*(?:,[^)]*)?\)")


class FileCache:
    """File texts keyed by (mtime, size), so repeated scans of a project read only what changed."""

    def __init__(self, limit: int = 20_000):
        self._texts: dict[Path, tuple[int, int, str]] = {}
        self._lock = threading.Lock()
        self._limit = limit

    def text(self, path: Path) -> str:
        st = path.stat()
        cached = self._texts.get(path)
        if cached and cached[0] == st.st_mtime_ns and cached[1] == st.st_size:
            return cached[2]
        text = path.read_text(encoding="utf-8", errors="replace") if st.st_size <= MAX_FILE_BYTES else ""
        with self._lock:
            if len(self._texts) >= self._limit:
                self._texts.clear()
            self._texts[path] = (st.st_mtime_ns, st.st_size, text)
        return text


def find_references(root: Path, target: str, cache: FileCache) -> list[dict[str, Any]]:
    """Every ref()/source() of `target` in the model files, with its line number (raw files, not compiled)."""
    kind, regex = reference_pattern(target)
    real_root = Path(os.path.realpath(root))
    out = []
    for path in iter_model_files(root):
        text = cache.text(path)
        if target.rsplit(".", 1)[-1] not in text:
            continue
        for match in regex.finditer(text):
            out.append(
                {
                    "model_name": path.stem,
                    "file_path": relative_to_root(Path(os.path.realpath(path)), real_root),
                    "reference_type": kind,
                    "reference_expression": " ".join(match.group(0).split()),
                    "line_number": text.count("\n", 0, match.start()) + 1,
                }
            )
    return out
