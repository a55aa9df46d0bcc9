"""dbt node selection (`--select` / `--exclude`) evaluated against the compact lineage index.

Which models a dbt Cloud job step or an Airflow task's `dbt build --select ...` builds is what connects a model to
the job that refreshes it. This evaluates the common selector methods the way dbt documents them:

- a space separates a union, a comma an intersection, `--exclude` subtracts;
- graph operators: `+x` (ancestors), `x+` (descendants), `N+x` / `x+N` (bounded depth), `@x` (descendants and
  their ancestors);
- methods: bare names (model name, with `*` wildcards, or a dotted fqn/path), `tag:`, `path:` / `file:`,
  `source:`, `resource_type:`, `package:`, `fqn:`, `config.materialized:`; `state:`, `result:`,
  `source_status:` and unknown methods depend on run state ADE does not evaluate: they are reported as
  unresolvable, never guessed.
"""

from __future__ import annotations

import fnmatch
import re
import shlex
from collections import deque
from dataclasses import dataclass, field
from typing import Any

# Flags that carry selectors in dbt's CLI (and their short forms).
_SELECT_FLAGS = {"--select", "-s", "--models", "-m"}
_EXCLUDE_FLAGS = {"--exclude"}
_BUILDING = {"run", "build", "seed", "snapshot"}  # commands that (re)build relations
_UNRESOLVABLE = {"state", "result", "source_status", "exposure", "metric", "semantic_model", "saved_query"}
_SELECTOR = re.compile(r"^(?P<at>@)?(?:(?P<up_n>\d*)\+)?(?P<body>[^+]+?)(?:\+(?P<down_n>\d*))?$")


@dataclass
class DbtCommand:
    """One dbt invocation as written in a job step or a task command."""

    text: str
    subcommand: str | None
    select: list[str] = field(default_factory=list)
    exclude: list[str] = field(default_factory=list)
    selector: str | None = None  # --selector NAME (a YAML selector: not evaluated)

    @property
    def builds(self) -> bool:
        return self.subcommand in _BUILDING


@dataclass
class Selection:
    """The nodes a command selects, and what could not be evaluated."""

    nodes: set[str]
    unresolvable: list[str]


def parse_dbt_commands(text: str) -> list[DbtCommand]:
    """Every `dbt <subcommand> ...` in a step or shell command (`&&`/`;`-chained commands are split)."""
    commands: list[DbtCommand] = []
    for chunk in re.split(r"&&|\|\||;|\n", text or ""):
        try:
            words = shlex.split(chunk)
        except ValueError:
            words = chunk.split()
        if "dbt" not in words:
            continue
        words = words[words.index("dbt") + 1 :]
        cmd = DbtCommand(text=chunk.strip(), subcommand=None)
        target: list[str] | None = None
        for word in words:
            if word in _SELECT_FLAGS:
                target = cmd.select
            elif word in _EXCLUDE_FLAGS:
                target = cmd.exclude
            elif word == "--selector":
                target = None
                cmd.selector = ""
            elif word.startswith("-"):
                target = None
                if word.startswith(("--select=", "--models=")):
                    cmd.select.extend(word.split("=", 1)[1].split())
                elif word.startswith("--exclude="):
                    cmd.exclude.extend(word.split("=", 1)[1].split())
            elif cmd.selector == "":
                cmd.selector = word
            elif target is not None:
                target.append(word)
            elif cmd.subcommand is None:
                cmd.subcommand = word
        commands.append(cmd)
    return commands


def _matches_name(pattern: str, uid: str, rec: dict[str, Any]) -> bool:
    name = rec.get("name") or ""
    if "." in pattern and not any(ch in pattern for ch in "*?["):
        # a dotted fqn-ish name: package.name or path-like segments
        return uid.endswith("." + pattern.split(".")[-1]) and (
            pattern.split(".")[0] in {rec.get("package"), *((rec.get("path") or "").split("/"))}
        )
    return fnmatch.fnmatchcase(name, pattern)


def _method_nodes(method: str, value: str, index: dict[str, Any]) -> set[str] | None:
    """The nodes one method:value selects (None: the method is not evaluated)."""
    nodes: dict[str, dict[str, Any]] = index["nodes"]
    out: set[str] = set()
    if method in _UNRESOLVABLE:
        return None
    for uid, rec in nodes.items():
        rtype = rec.get("resource_type")
        if method == "":
            # dbt's default (fqn) method searches parsed nodes: sources need `source:`
            if rtype in {"test", "source"}:
                continue
            if _matches_name(value, uid, rec):
                out.add(uid)
        elif method == "tag":
            if any(fnmatch.fnmatchcase(t, value) for t in rec.get("tags") or ()):
                out.add(uid)
        elif method in {"path", "file"}:
            path = (rec.get("path") or "").replace("\\", "/")
            want = value.rstrip("/")
            if method == "file":
                if fnmatch.fnmatchcase(path.rsplit("/", 1)[-1], want):
                    out.add(uid)
            elif path == want or path.startswith(want + "/") or fnmatch.fnmatchcase(path, want):
                out.add(uid)
        elif method == "source":
            if rtype != "source":
                continue
            source_name = rec.get("source_name") or uid.split(".")[-2]
            full = f"{source_name}.{rec.get('name')}"
            if fnmatch.fnmatchcase(source_name, value) or fnmatch.fnmatchcase(full, value):
                out.add(uid)
        elif method == "resource_type":
            if rtype == value:
                out.add(uid)
        elif method == "package":
            if fnmatch.fnmatchcase(rec.get("package") or "", value):
                out.add(uid)
        elif method == "fqn":
            if fnmatch.fnmatchcase(rec.get("name") or "", value.split(".")[-1]):
                out.add(uid)
        elif method == "config.materialized":
            if rec.get("materialization") == value:
                out.add(uid)
        else:
            return None
    return out


def _walk(start: set[str], adjacency: dict[str, list[str]], depth: int | None) -> set[str]:
    seen = set(start)
    queue = deque((n, 0) for n in start)
    while queue:
        node, level = queue.popleft()
        if depth is not None and level >= depth:
            continue
        for nxt in adjacency.get(node, ()):
            if nxt not in seen:
                seen.add(nxt)
                queue.append((nxt, level + 1))
    return seen


def _atom(selector: str, index: dict[str, Any], unresolvable: list[str]) -> set[str]:
    match = _SELECTOR.match(selector)
    if not match:
        unresolvable.append(selector)
        return set()
    body = match["body"]
    method, _, value = body.rpartition(":") if ":" in body else ("", "", body)
    base = _method_nodes(method, value, index)
    if base is None:
        unresolvable.append(selector)
        return set()
    out = set(base)
    if match["at"]:
        down = _walk(base, index["children"], None)
        return down | _walk(down, index["parents"], None)
    if match["up_n"] is not None:
        out |= _walk(base, index["parents"], int(match["up_n"]) if match["up_n"] else None)
    if match["down_n"] is not None:
        out |= _walk(base, index["children"], int(match["down_n"]) if match["down_n"] else None)
    return out


def evaluate(select: list[str], exclude: list[str], index: dict[str, Any]) -> Selection:
    """Union of the select terms (comma = intersection), minus the exclude terms; no select = every node."""
    unresolvable: list[str] = []

    def union(terms: list[str]) -> set[str]:
        out: set[str] = set()
        for term in terms:
            parts = [p for p in term.split(",") if p]
            sets = [_atom(p, index, unresolvable) for p in parts]
            if sets:
                out |= set.intersection(*sets)
        return out

    chosen = union(select) if select else set(index["nodes"])
    chosen -= union(exclude)
    return Selection(nodes=chosen, unresolvable=unresolvable)


def built_by(command: DbtCommand, index: dict[str, Any]) -> Selection:
    """The relations (models, seeds, snapshots) a building dbt command refreshes."""
    if not command.builds:
        return Selection(set(), [])
    if command.selector is not None:
        return Selection(set(), [f"--selector {command.selector}"])
    selection = evaluate(command.select, command.exclude, index)
    kinds = {"run": {"model"}, "seed": {"seed"}, "snapshot": {"snapshot"}}.get(
        command.subcommand or "", {"model", "seed", "snapshot"}
    )
    nodes = index["nodes"]
    selection.nodes = {uid for uid in selection.nodes if (nodes.get(uid) or {}).get("resource_type") in kinds}
    return selection
