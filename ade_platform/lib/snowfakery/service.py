"""The snowfakery operations the MCP toolset exposes, as plain functions over a workspace and a policy.

`SnowfakeryService` resolves recipes (a workspace path, an example URI or inline text), validates them
(YAML, JSON schema, server policy, then Snowfakery's own validator in the sandbox, as the CLI's
`--validate-only --strict-mode` does), analyzes and formats them. Runs live in `runs.py`.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ade_platform.lib.snowfakery import analysis as static
from ade_platform.lib.snowfakery import catalog
from ade_platform.lib.snowfakery.content import ContentLibrary
from ade_platform.lib.snowfakery.errors import SnowfakeryError
from ade_platform.lib.snowfakery.formatting import format_recipe
from ade_platform.lib.snowfakery.policy import OUTPUT_FORMATS, RunPolicy
from ade_platform.lib.snowfakery.sandbox import Sandbox
from ade_platform.lib.snowfakery.schemacheck import schema_findings
from ade_platform.lib.snowfakery.scrub import Scrubber
from ade_platform.lib.snowfakery.workspace import Workspace

EXAMPLE_URI = "snowfakery://examples/"
TEXT_NAME = "<recipe_text>"
FEATURES = (
    "object",
    "fields",
    "friends",
    "nickname",
    "reference",
    "random_reference",
    "just_once",
    "macro",
    "include_file",
    "option",
    "for_each",
    "plugins",
    "continuation",
    "cci_mapping",
)


@dataclass(frozen=True)
class RecipeSource:
    """A recipe ready to hand to Snowfakery."""

    display: str  # what agents see: workspace-relative path, example URI or <recipe_text>
    text: str
    path: Path | None  # the real file, or None for inline text
    virtual: Path  # the name Snowfakery sees; relative includes and datasets resolve beside it
    root: Path  # the folder reads are confined to


class SnowfakeryService:
    def __init__(
        self,
        workspace: Workspace,
        policy: RunPolicy,
        content: ContentLibrary,
        *,
        sandbox: Sandbox | None = None,
        secrets: Iterable[str] = (),
    ) -> None:
        self.workspace = workspace
        self.policy = policy
        self.content = content
        self.sandbox = sandbox or Sandbox()
        self.scrubber = Scrubber(
            {workspace.root: "", content.examples_root: "examples"}, extra_secrets=secrets
        )

    # -- recipes ---------------------------------------------------------------------------------------
    def source(self, recipe_path: str | None = None, recipe_text: str | None = None) -> RecipeSource:
        if (recipe_path is None) == (recipe_text is None):
            raise SnowfakeryError("invalid_argument", "pass exactly one of recipe_path or recipe_text")
        if recipe_text is not None:
            self._check_size(len(recipe_text.encode()))
            root = self.workspace.root
            return RecipeSource(TEXT_NAME, recipe_text, None, root / TEXT_NAME, root)
        assert recipe_path is not None
        if recipe_path.startswith(EXAMPLE_URI):
            example = self.content.example(recipe_path[len(EXAMPLE_URI) :])
            if example is None:
                raise SnowfakeryError("example_not_found", f"no example {recipe_path!r}")
            root = self.content.examples_root.resolve()
            path = example.path.resolve()
            return RecipeSource(recipe_path, path.read_text(encoding="utf-8"), path, path, root)
        path = self.workspace.resolve(recipe_path, must_exist=True)
        if not path.is_file():
            raise SnowfakeryError("recipe_not_found", f"{recipe_path!r} is not a file")
        self._check_size(path.stat().st_size)
        text = path.read_text(encoding="utf-8", errors="replace")
        return RecipeSource(self.workspace.display(path), text, path, path, self.workspace.root)

    def _check_size(self, size: int) -> None:
        if size > self.policy.max_recipe_bytes:
            raise SnowfakeryError(
                "limit_exceeded", f"the recipe is {size} bytes; the limit is {self.policy.max_recipe_bytes}"
            )

    # -- static ----------------------------------------------------------------------------------------
    def analyze(self, source: RecipeSource) -> dict[str, Any]:
        result = static.analyze(source.text, source.display, source.virtual.parent, source.root, self.policy)
        return self._clean_locations({"recipe": source.display, **result})

    def format(self, source: RecipeSource) -> dict[str, Any]:
        problem = static.yaml_error(source.text, source.display)
        if problem:
            raise SnowfakeryError("recipe_invalid", problem["message"], errors=[problem])
        result = format_recipe(source.text)
        return {
            "recipe": source.display,
            "formatted_text": result.text,
            "changed": result.changed,
            "notes": result.notes,
        }

    def capabilities(self) -> dict[str, Any]:
        from importlib.metadata import version

        dot = shutil.which("dot") is not None
        p = self.policy
        return {
            "snowfakery_version": version("snowfakery"),
            "output_formats": list(OUTPUT_FORMATS),
            "graphviz_available": dot,
            "features": list(FEATURES),
            "limits": {
                "max_reps": p.max_reps,
                "max_target_count": p.max_target_count,
                "max_rows": p.max_rows,
                "timeout_seconds": p.timeout_seconds,
                "max_output_bytes": p.max_output_bytes,
                "max_inline_chars": p.max_inline_chars,
                "max_recipe_bytes": p.max_recipe_bytes,
                "max_memory_mb": p.max_memory_mb,
            },
            "allow_dburl": p.allow_dburl,
            "allow_network": p.allow_network,
            "allowed_plugins": list(p.allowed_plugins),
            "content": {part: self.content.source(part) for part in ("docs", "examples", "schema")},
            "discovery": dict(catalog.DISCOVERY),
        }

    def catalog(self, part: str) -> dict[str, Any]:
        """One discovery catalogue: Faker providers, the plugins this server allows, or the output formats."""
        if part == "providers":
            return catalog.faker_providers()
        if part == "plugins":
            return catalog.plugins(self.policy)
        return catalog.output_formats(self.policy, shutil.which("dot") is not None)

    # -- validation --------------------------------------------------------------------------------------
    def validate(
        self,
        source: RecipeSource,
        *,
        strict_mode: bool = True,
        schema_validate: bool = True,
        options: dict[str, Any] | None = None,
        plugin_options: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        """valid, errors and warnings, each with filename and line where Snowfakery knows them."""
        checks = {"yaml": True, "schema": schema_validate, "policy": True, "snowfakery": None}
        problem = static.yaml_error(source.text, source.display)
        if problem:
            checks["yaml"] = False
            return self._verdict(source, [problem], [], checks)
        warnings: list[dict[str, Any]] = []
        failed: list[BaseException] = []

        def check_schema() -> None:
            try:
                if schema_validate:
                    warnings.extend(schema_findings(source.text, self.content.schema, source.display))
            except BaseException as exc:  # raised again once the job is done (never leaving it running)
                failed.append(exc)

        model = static.analyze(source.text, source.display, source.virtual.parent, source.root, self.policy)
        if model.get("errors") or model["policy_problems"]:
            check_schema()
            if failed:
                raise failed[0]
            if model.get("errors"):
                return self._verdict(source, model["errors"], warnings, checks)
            checks["policy"] = False
            return self._verdict(source, model["policy_problems"], warnings, checks)
        mode = "validate" if strict_mode else "parse"
        checks["snowfakery"] = "validate_only+strict_mode" if strict_mode else "parse"
        run_dir = self.workspace.scratch()
        try:
            request = self.request(source, run_dir, mode=mode, options=options, plugin_options=plugin_options)
            # the schema check (advice, never the verdict) runs here while the sandbox validates: no thread to
            # start and join (each a wake-up, milliseconds on a loaded machine)
            outcome = self.sandbox.execute(
                request, run_dir, self.policy.timeout_seconds, meanwhile=check_schema
            )
        finally:
            self.workspace.discard(run_dir)
        if failed:
            raise failed[0]
        result = outcome.result
        return self._verdict(source, result.get("errors", []), warnings + result.get("warnings", []), checks)

    def _verdict(
        self,
        source: RecipeSource,
        errors: list[dict[str, Any]],
        warnings: list[dict[str, Any]],
        checks: dict[str, Any],
    ) -> dict[str, Any]:
        return {
            "recipe": source.display,
            "valid": not errors,
            "errors": [self.location(e, source) for e in errors],
            "warnings": [self.location(w, source) for w in warnings],
            "checks": checks,
        }

    # -- explaining errors --------------------------------------------------------------------------------
    def explain_errors(
        self,
        source: RecipeSource,
        reported: list[dict[str, Any]] | None = None,
        *,
        options: dict[str, Any] | None = None,
        plugin_options: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        """Each error of the recipe (from a fresh validation, plus any `reported` error the validation does
        not reproduce, such as a run-time one) with its construct, rule and smallest fix."""
        from ade_platform.lib.snowfakery.explain import explain, facts_from

        verdict = self.validate(source, options=options, plugin_options=plugin_options)
        problems = list(verdict["errors"])
        for item in reported or []:
            problem = self._reported(item, source)
            if not any(_same_problem(problem, p) for p in problems):
                problems.append(problem)
        model = static.analyze(source.text, source.display, source.virtual.parent, source.root, self.policy)
        facts = facts_from(model, self.content.schema, source.text)
        files: dict[str | None, list[str] | None] = {source.display: source.text.splitlines()}

        def read_lines(filename: str | None) -> list[str] | None:
            if filename not in files:
                files[filename] = self._recipe_file_lines(filename, source)
            return files[filename]

        return {
            "recipe": source.display,
            "valid": verdict["valid"],
            "explanations": [explain(p, read_lines, facts) for p in problems],
            "checks": verdict["checks"],
        }

    def _reported(self, item: dict[str, Any], source: RecipeSource) -> dict[str, Any]:
        """An error an agent passed back: its message scrubbed, its file kept only if it is one we can read."""
        filename = item.get("filename")
        if not isinstance(filename, str) or self._recipe_file_lines(filename, source) is None:
            filename = source.display
        line = item.get("line")
        return {
            "kind": str(item.get("kind") or "Error")[:100],
            "message": self.scrubber.text(str(item.get("message") or ""))[:2000],
            "filename": filename,
            "line": line if isinstance(line, int) and line > 0 else None,
        }

    def _recipe_file_lines(self, filename: str | None, source: RecipeSource) -> list[str] | None:
        """The lines of a recipe file an error names: the recipe itself, or a file inside its root."""
        if filename == source.display:
            return source.text.splitlines()
        if not filename or filename.startswith("<"):
            return None
        candidates = [source.root / filename]
        if filename.startswith("examples/"):
            candidates.append(self.content.examples_root / filename[len("examples/") :])
        for candidate in candidates:
            path = candidate.resolve()
            roots = (source.root.resolve(), self.content.examples_root.resolve())
            if path.is_file() and any(r == path or r in path.parents for r in roots):
                return path.read_text(encoding="utf-8", errors="replace").splitlines()
        return None

    # -- shared with runs ------------------------------------------------------------------------------------
    def request(
        self,
        source: RecipeSource,
        run_dir: Path,
        *,
        mode: str,
        options: dict[str, Any] | None = None,
        plugin_options: dict[str, Any] | None = None,
        read_roots: Iterable[Path] = (),
        timeout: float | None = None,
        **extra: Any,
    ) -> dict[str, Any]:
        p = self.policy
        request: dict[str, Any] = {
            "mode": mode,
            "run_dir": str(run_dir),
            "cwd": str(source.virtual.parent),
            "options": {k: _option_value(v) for k, v in (options or {}).items()},
            "plugin_options": {k: _option_value(v) for k, v in (plugin_options or {}).items()},
            "limits": {
                "max_rows": p.max_rows,
                "max_output_bytes": p.max_output_bytes,
                "max_memory_mb": p.max_memory_mb,
                "cpu_seconds": int((timeout or p.timeout_seconds) + 5),
            },
            "read_roots": [str(source.root), *map(str, read_roots)],
            "allowed_plugins": list(p.allowed_plugins),
            "allow_network": p.allow_network,
            **extra,
        }
        if source.path is not None:
            request["recipe_path"] = str(source.path)
        else:
            request["recipe_text"] = source.text
            request["recipe_name"] = str(source.virtual)
        return request

    def location(self, item: dict[str, Any], source: RecipeSource) -> dict[str, Any]:
        """An error or warning as agents see it: scrubbed message, workspace-relative filename."""
        filename = item.get("filename")
        if filename and str(filename) == str(source.virtual):
            shown = source.display
        elif filename:
            shown = self.scrubber.path(filename)
        else:
            shown = source.display
        out = {
            "kind": item.get("kind", "Error"),
            "message": self.scrubber.text(str(item.get("message", ""))).replace(
                str(source.virtual), source.display
            ),
            "filename": shown,
            "line": item.get("line"),
        }
        if item.get("column") is not None:
            out["column"] = item["column"]
        return out

    def _clean_locations(self, value: Any) -> Any:
        if isinstance(value, dict):
            return {
                k: (
                    self.scrubber.path(v)
                    if k == "filename" and isinstance(v, str)
                    else self._clean_locations(v)
                )
                for k, v in value.items()
            }
        if isinstance(value, list):
            return [self._clean_locations(v) for v in value]
        return value


def _same_problem(a: dict[str, Any], b: dict[str, Any]) -> bool:
    """Whether a reported error is one the validation found too (its message may carry " (file:line)")."""
    message_a, message_b = str(a.get("message", "")), str(b.get("message", ""))
    return bool(message_b) and (message_a == message_b or message_a.startswith(message_b + " ("))


def _option_value(value: Any) -> Any:
    """Options reach Snowfakery as the CLI would pass them: numbers stay numbers, the rest are strings."""
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, int | float):
        return value
    text = str(value)
    return int(text) if text.isnumeric() else text
