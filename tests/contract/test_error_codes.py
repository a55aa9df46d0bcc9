"""Every code an error can carry to an agent is registered in ERROR_CODES (with its default hint).

The gateway maps any CodedError (ade_platform/lib/errors.py) to the structured error, but only with a registered
code: an unregistered one is masked as internal_error. So each literal code given to a CodedError subclass or a
ToolFailure anywhere in the code, each class-level code and per-class hint, and each code list a client declares
is checked here, statically: a branch no test reaches is checked too.
"""

from __future__ import annotations

import ast
from pathlib import Path

import ade_platform
import mcp_bridge
from mcp_bridge.errors import ERROR_CODES

ROOTS = [Path(ade_platform.__file__).parent, Path(mcp_bridge.__file__).parent]


def _trees() -> list[tuple[Path, ast.Module]]:
    return [(path, ast.parse(path.read_text())) for root in ROOTS for path in sorted(root.rglob("*.py"))]


def _coded_errors(trees: list[tuple[Path, ast.Module]]) -> dict[str, ast.ClassDef]:
    """Every class that subclasses CodedError, directly or through another one (matched by name)."""
    classes = [node for _, tree in trees for node in ast.walk(tree) if isinstance(node, ast.ClassDef)]
    found: dict[str, ast.ClassDef] = {}
    known = {"CodedError"}
    while True:
        new = {
            c.name: c
            for c in classes
            if c.name not in known
            and any(getattr(b, "id", getattr(b, "attr", None)) in known for b in c.bases)
        }
        if not new:
            return found
        found.update(new)
        known |= set(new)


def _takes_code(name: str, errors: dict[str, ast.ClassDef]) -> bool:
    """Whether the class's constructor takes the code first (CodedError's does; StoreError(detail) does not)."""
    cls = errors.get(name)
    if cls is None:
        return True
    init = next((f for f in cls.body if isinstance(f, ast.FunctionDef) and f.name == "__init__"), None)
    if init is not None:
        return len(init.args.args) > 1 and init.args.args[1].arg == "code"
    bases = [getattr(b, "id", getattr(b, "attr", None)) for b in cls.bases]
    return all(_takes_code(b, errors) for b in bases if b in errors)


def _literal(node: ast.expr) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def _codes(trees: list[tuple[Path, ast.Module]], errors: dict[str, ast.ClassDef]) -> list[tuple[str, str]]:
    """(where, code): each `Error("literal", ...)` call of a class that takes the code first, each
    `super().__init__("literal", ...)` of a class that fixes its code, each class-level `code = "..."`, each
    `hints` key."""
    found = []
    for path, tree in trees:
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call) or not node.args or _literal(node.args[0]) is None:
                continue
            name = getattr(node.func, "id", getattr(node.func, "attr", None))
            if name in errors and _takes_code(name, errors):
                found.append((f"{path.name}:{node.lineno}", _literal(node.args[0])))
    for cls in errors.values():
        for call in ast.walk(cls):
            func = getattr(call, "func", None)
            is_super_init = getattr(func, "attr", None) == "__init__" and isinstance(
                getattr(func, "value", None), ast.Call
            )
            if is_super_init and call.args and _literal(call.args[0]) is not None:
                found.append((f"{cls.name}.__init__", _literal(call.args[0])))
        for item in cls.body:
            target = item.target if isinstance(item, ast.AnnAssign) else None
            targets = item.targets if isinstance(item, ast.Assign) else [target] if target else []
            names = {getattr(t, "id", None) for t in targets}
            value = getattr(item, "value", None)
            if "code" in names:
                found.append((f"{cls.name}.code", ast.literal_eval(value)))
            if "hints" in names and isinstance(value, ast.Dict):
                found += [(f"{cls.name}.hints", ast.literal_eval(k)) for k in value.keys if k is not None]
    return found


def test_every_code_an_error_can_carry_is_registered() -> None:
    trees = _trees()
    errors = _coded_errors(trees)
    layers = {
        "StoreError",
        "ArtifactError",
        "WarehouseError",
        "BiError",
        "OrchestratorError",
        "DbtCloudError",
    }
    assert layers | {"SnowflakeError", "SnowfakeryError", "ToolFailure"} <= set(errors)
    codes = _codes(trees, errors)
    assert len(codes) > 150, "the scan found too few raise sites: is it reading the right code?"
    assert sorted({(where, code) for where, code in codes if code not in ERROR_CODES}) == []


def test_declared_code_lists_are_registered() -> None:
    from ade_platform.clients.orchestrators.base import ERROR_CODES as ORCHESTRATOR_CODES
    from ade_platform.lib.snowflake.errors import E_CODES

    assert set(ORCHESTRATOR_CODES) <= set(ERROR_CODES)
    assert set(E_CODES) <= set(ERROR_CODES)
