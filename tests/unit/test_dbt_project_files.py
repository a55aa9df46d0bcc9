"""Confinement of paths to the project root, YAML reading, model files, compiled files, references."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from ade_platform.lib.dbt import project_files as pf


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    (root / "models" / "staging").mkdir(parents=True)
    (root / "dbt_project.yml").write_text("name: shop\nmodel-paths: [models]\n")
    (root / "profiles.yml").write_text("shop: {outputs: {dev: {password: hunter2}}}\n")
    (root / "models" / "staging" / "stg_orders.sql").write_text(
        "select * from {{ source('raw', 'orders') }}\n"
    )
    (root / "models" / "orders.sql").write_text(
        "with o as (\n  select * from {{ ref('stg_orders') }}\n),\np as (select * from {{ref(\"pkg\", 'stg_orders')}})\n"
        "select * from o -- not ref('stg_orders_v2')\n"
    )
    (root / "models" / "py_model.py").write_text("def model(dbt, s):\n    return dbt.ref('stg_orders')\n")
    (root / "models" / "schema.yml").write_text("version: 2\nmodels:\n  - name: orders\n")
    (root / "models" / "broken.yml").write_text("models: [\n")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.yml").write_text("token: x\n")
    (outside / "leak.sql").write_text("select ref('stg_orders')\n")
    (root / "models" / "link_out.yml").symlink_to(outside / "secret.yml")
    (root / "models" / "leak.sql").symlink_to(outside / "leak.sql")
    (root / "models" / "link_in.yml").symlink_to(root / "models" / "schema.yml")
    return root


def test_confine(project: Path) -> None:
    assert pf.confine("models/schema.yml", [project], project) == project.resolve() / "models/schema.yml"
    assert pf.confine("models/../dbt_project.yml", [project], project).name == "dbt_project.yml"
    assert pf.confine(str(project / "models" / "link_in.yml"), [project], project).name == "schema.yml"
    for bad in ("../outside/secret.yml", "/etc/passwd", "models/link_out.yml", "", "a\x00b", "~/x.yml"):
        with pytest.raises(pf.ProjectFileError) as err:
            pf.confine(bad, [project], project)
        assert err.value.code == "path_not_allowed"
    with pytest.raises(pf.ProjectFileError):
        pf.confine("models/schema.yml", [project], None)


def test_read_yaml_and_secrets(project: Path) -> None:
    assert pf.read_yaml(project / "models" / "schema.yml", "schema.yml")["models"][0]["name"] == "orders"
    cases = [
        (project / "models" / "broken.yml", "yaml_invalid"),
        (project / "profiles.yml", "path_not_allowed"),
        (project / "models" / "orders.sql", "path_not_allowed"),
        (project / "models" / "missing.yml", "file_not_found"),
        (project / "models", "path_not_allowed"),
    ]
    for path, code in cases:
        with pytest.raises(pf.ProjectFileError) as err:
            pf.read_yaml(path, path.name)
        assert err.value.code == code, path
    assert pf.project_config(project)["name"] == "shop"


def test_model_files_skip_symlinks_out_of_the_project(project: Path) -> None:
    names = sorted(p.name for p in pf.iter_model_files(project))
    assert names == ["orders.sql", "py_model.py", "stg_orders.sql"]
    assert pf.find_model_file(project, "stg_orders") == project / "models" / "staging" / "stg_orders.sql"
    assert pf.find_model_file(project, "nope") is None


def test_find_references_with_line_numbers(project: Path) -> None:
    cache = pf.FileCache()
    refs = pf.find_references(project, "stg_orders", cache)
    got = sorted((r["model_name"], r["line_number"], r["reference_expression"]) for r in refs)
    assert got == [
        ("orders", 2, "ref('stg_orders')"),
        ("orders", 4, "ref(\"pkg\", 'stg_orders')"),
        ("py_model", 2, "ref('stg_orders')"),
    ]
    assert all(r["reference_type"] == "ref" and not r["file_path"].startswith("/") for r in refs)
    sources = pf.find_references(project, "raw.orders", cache)
    assert [(r["model_name"], r["reference_type"], r["line_number"]) for r in sources] == [
        ("stg_orders", "source", 1)
    ]
    assert pf.find_references(project, "nothing_here", cache) == []
    for bad in ("a'b", "a.b.c", "x y", ""):
        with pytest.raises(pf.ProjectFileError):
            pf.find_references(project, bad, cache)


def test_compiled_file_prefers_the_newest(tmp_path: Path) -> None:
    target = tmp_path / "target"
    plain = target / "compiled" / "shop" / "models" / "a.sql"
    plain.parent.mkdir(parents=True)
    plain.write_text("select 1")
    assert pf.compiled_file(target, "shop", "models/a.sql") == plain
    newer = target / "dbt_project_models-abc-123" / "compiled" / "shop" / "models" / "a.sql"
    newer.parent.mkdir(parents=True)
    newer.write_text("select 2")
    later = time.time() + 5
    os.utime(newer, (later, later))
    assert pf.compiled_file(target, "shop", "models/a.sql") == newer
    assert pf.compiled_file(target, "shop", "models/b.sql") is None
    assert pf.compiled_file(tmp_path / "missing", "shop", "models/a.sql") is None


def test_package_file(project: Path) -> None:
    pkg = project / "dbt_packages" / "utils_repo" / "models"
    pkg.mkdir(parents=True)
    (pkg / "u.sql").write_text("select 1")
    assert pf.package_file(project, "shop", "shop", "models/orders.sql") == project / "models" / "orders.sql"
    assert pf.package_file(project, "shop", "utils", "models/u.sql") == pkg / "u.sql"
    assert pf.package_file(project, "shop", "shop", "models/none.sql") is None
