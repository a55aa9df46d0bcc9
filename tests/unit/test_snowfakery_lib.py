"""The snowfakery library without a sandbox: workspace confinement, scrubbing, static analysis,
formatting, docs/examples/schema content and the JSON-schema check."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import yaml

from ade_platform.lib.recipes import recipe_tables
from ade_platform.lib.snowfakery.analysis import analyze, table_names
from ade_platform.lib.snowfakery.content import BUNDLED, ContentLibrary, split_sections
from ade_platform.lib.snowfakery.errors import SnowfakeryError
from ade_platform.lib.snowfakery.formatting import format_recipe
from ade_platform.lib.snowfakery.policy import RunPolicy
from ade_platform.lib.snowfakery.schemacheck import schema_findings
from ade_platform.lib.snowfakery.scrub import Scrubber
from ade_platform.lib.snowfakery.service import FEATURES
from ade_platform.lib.snowfakery.workspace import Workspace

REPO_ROOT = Path(__file__).resolve().parents[2]
JAFFLE = REPO_ROOT / "dbt_demo" / "recipes" / "jaffle_shop.recipe.yml"


@pytest.fixture
def workspace(tmp_path: Path) -> Workspace:
    return Workspace.create(tmp_path / "ws", tmp_path / "runs")


def _analyze(text: str, root: Path, policy: RunPolicy | None = None) -> dict:
    return analyze(text, "r.yml", root, root, policy or RunPolicy())


# -- workspace -------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "bad", ["../outside.yml", "/etc/passwd", "~/x.yml", "a/../../b.yml", "x\x00.yml", ""]
)
def test_paths_outside_the_workspace_are_refused(workspace: Workspace, bad: str) -> None:
    with pytest.raises(SnowfakeryError) as caught:
        workspace.resolve(bad)
    assert caught.value.code == "path_not_allowed"


def test_symlinks_out_of_the_workspace_are_refused(workspace: Workspace, tmp_path: Path) -> None:
    (tmp_path / "secret.yml").write_text("- object: X\n")
    os.symlink(tmp_path / "secret.yml", workspace.root / "link.yml")
    with pytest.raises(SnowfakeryError):
        workspace.resolve("link.yml")
    (workspace.root / "sub").mkdir()
    (workspace.root / "sub" / "r.yml").write_text("- object: X\n")
    assert workspace.resolve("sub/r.yml") == workspace.root / "sub" / "r.yml"
    assert workspace.resolve(str(workspace.root / "sub" / "r.yml")) == workspace.root / "sub" / "r.yml"
    with pytest.raises(SnowfakeryError) as caught:
        workspace.resolve("missing.yml", must_exist=True)
    assert caught.value.code == "recipe_not_found"


def test_run_files_are_confined_and_pruned(workspace: Workspace) -> None:
    ids = []
    for _ in range(3):
        run_id, folder = workspace.new_run()
        (folder / "run.json").write_text("{}")
        (folder / "_request.json").write_text("{}")
        (folder / "stdout.txt").write_text("x")
        os.utime(folder / "run.json", ns=(len(ids) * 10**9, len(ids) * 10**9))  # finished in this order
        ids.append(run_id)
    assert workspace.run_file(ids[0], "stdout.txt").read_text() == "x"
    for bad in ("../x", "_request.json", "run.json", "nope.txt"):
        with pytest.raises(SnowfakeryError) as caught:
            workspace.run_file(ids[0], bad)
        assert caught.value.code == "run_not_found"
    with pytest.raises(SnowfakeryError):
        workspace.run_dir("../../etc")
    # the oldest go, by the second in their id and then by when they finished (not by the id's random suffix)
    assert set(workspace.prune(keep=1)) == set(ids[:2])
    assert [p.name for p in workspace.runs_dir.iterdir()] == [ids[-1]]


# -- scrubbing -------------------------------------------------------------------------------------
def test_scrubber_hides_secrets_credentials_and_foreign_paths(tmp_path: Path) -> None:
    scrub = Scrubber(
        {tmp_path / "ws": "", tmp_path / "runs": "runs"},
        env={"MY_API_TOKEN": "tok-123456", "HOME": "/root", "DB_PASSWORD": "hunter22"},
        extra_secrets=["s3cr3t-value"],
    )
    text = (
        f"failed near {tmp_path / 'ws' / 'a' / 'r.yml'}:3 and /usr/lib/python3/x.py; token tok-123456, "
        "pw hunter22 s3cr3t-value postgresql://bob:pw@db/x https://example.com/a/b"
    )
    out = scrub.text(text)
    assert "a/r.yml:3" in out and "<path>" in out and str(tmp_path) not in out
    assert "tok-123456" not in out and "hunter22" not in out and "s3cr3t-value" not in out
    assert "bob:pw" not in out and "https://example.com/a/b" in out
    assert scrub.path(tmp_path / "runs" / "1" / "x.csv") == "runs/1/x.csv"
    assert scrub.secrets("/data/path tok-123456") == "/data/path ***"


# -- static analysis -------------------------------------------------------------------------------
def test_analysis_of_the_demo_recipe() -> None:
    model = analyze(JAFFLE.read_text(), JAFFLE.name, JAFFLE.parent, JAFFLE.parent, RunPolicy())
    assert table_names(model) == ["customers", "orders", "payments"]
    kinds = {(r["from_table"], r["to_table"], r["kind"]) for r in model["relationships"]}
    assert ("customers", "orders", "friend") in kinds and ("orders", "customers", "reference") in kinds
    assert [o["name"] for o in model["options_declared"]] == ["customer_count"]
    orders = next(t for t in model["tables"] if t["name"] == "orders")
    assert {"name": "__payment_count", "kind": "random_choice", "hidden": True} in orders["fields"]
    flags = {r["flag"] for r in model["estimated_risk"]}
    assert {"count_from_option", "dynamic_count"} <= flags
    assert recipe_tables(JAFFLE) == ["customers", "orders", "payments"]


def test_analysis_relationships_nicknames_macros_and_random_reference(tmp_path: Path) -> None:
    text = """
- snowfakery_version: 3
- macro: stamped
  fields:
    created: ${{ now }}
- object: Team
  nickname: core
- object: Person
  count: 3
  include: stamped
  fields:
    team: {reference: core}
    buddy: ${{ reference('Team') }}
    desk:
      object: Desk
      fields: {floor: 2}
- object: Ticket
  fields:
    owner:
      random_reference: {to: Person, unique: true}
"""
    model = _analyze(text, tmp_path)
    rels = {(r["from_table"], r["field"], r["to_table"], r["kind"]) for r in model["relationships"]}
    assert ("Person", "team", "Team", "reference") in rels
    assert ("Person", "buddy", "Team", "reference") in rels
    assert ("Person", "desk", "Desk", "inline_object") in rels
    assert ("Ticket", "owner", "Person", "random_reference") in rels
    assert model["uses_random_reference"] == ["Person"]
    person = next(t for t in model["tables"] if t["name"] == "Person")
    assert person["macros"] == ["stamped"] and "created" in [f["name"] for f in person["fields"]]
    team_line = next(r["line"] for r in model["relationships"] if r["field"] == "team")
    assert team_line == 12


def test_analysis_risk_flags_and_policy(tmp_path: Path) -> None:
    text = """
- plugin: snowfakery.standard_plugins.Math
- plugin: somebody.Else
- plugin: snowfakery.standard_plugins.Salesforce.SalesforceQuery
- include_file: ../outside.yml
- object: A
  count: 2000
  friends:
    - object: B
      count: 1000
- object: C
  fields:
    p:
      Salesforce.ProfileId: Standard User
"""
    model = _analyze(text, tmp_path)
    flags = {r["flag"]: r for r in model["estimated_risk"]}
    assert flags["very_high_count"]["line"] == 9
    assert "include_outside_workspace" in flags
    assert [p["allowed"] for p in model["plugins_declared"]] == [True, False, False]
    kinds = sorted(p["kind"] for p in model["policy_problems"])
    assert kinds == ["PathNotAllowed", "PluginNotAllowed", "SalesforceOrgRequired", "SalesforceOrgRequired"]
    relaxed = _analyze(text, tmp_path, RunPolicy(allowed_plugins=("*",), allow_network=True))
    assert [p["kind"] for p in relaxed["policy_problems"]] == ["PathNotAllowed"]


def test_analysis_reports_yaml_errors_with_lines(tmp_path: Path) -> None:
    model = _analyze("- object: A\n  fields:\n    x: [1, 2\n", tmp_path)
    assert model["valid_yaml"] is False
    assert model["errors"][0]["kind"] == "YamlSyntaxError" and model["errors"][0]["line"] >= 3
    assert model["errors"][0]["column"] >= 1


# -- formatting ------------------------------------------------------------------------------------
MESSY = """# header comment
-   object:   Account
    count: 2
    fields:
      name: Foo   
      desc: |
          line one
            indented

      tags: [a,
        b]
    friends:
    - object: Contact   # trailing comment
      fields:
          x: >
             folded
             text
-  var: v
   value:
       - 1
       - 2


# end
"""


def test_format_is_stable_keeps_comments_and_never_changes_data() -> None:
    result = format_recipe(MESSY)
    assert result.changed and not result.notes
    assert yaml.safe_load(result.text) == yaml.safe_load(MESSY)
    assert (
        "# header comment" in result.text and "# trailing comment" in result.text and "# end" in result.text
    )
    assert "\n  friends:\n    - object: Contact" in result.text
    assert "\n\n\n" not in result.text and result.text.endswith("\n")
    again = format_recipe(result.text)
    assert again.text == result.text and not again.changed


def test_format_leaves_unusual_layouts_alone() -> None:
    text = "- - a\n  - b\n"
    result = format_recipe(text)
    assert result.text == text and not result.changed and result.notes
    bundled = (BUNDLED / "examples" / "friends.recipe.yml").read_text()
    assert format_recipe(bundled).text == bundled


# -- content ---------------------------------------------------------------------------------------
def test_bundled_content_covers_every_feature() -> None:
    content = ContentLibrary()
    names = {e.name for e in content.examples()}
    wanted = set(FEATURES) - {"continuation", "cci_mapping"}
    assert wanted <= names
    for page in ("index", "extending", "salesforce", "architecture"):
        assert content.doc(page)
    hits = content.search("random_reference unique row history", limit=3)
    assert hits[0]["doc"] == "docs/index.md" and hits[0]["heading"] == "Random references"
    assert hits[0]["uri"] == "snowfakery://docs/index" and hits[0]["line"] > 1
    assert content.schema["title"] == "Snowfakery recipe"
    assert content.source("docs") == "bundled"
    described = {e.name: e.description for e in content.examples()}
    assert described["just_once"].startswith("just_once:")


def test_headings_inside_code_blocks_are_not_sections() -> None:
    sections = split_sections("page", "# Title\ntext\n```yaml\n# not a heading\n```\n## Sub\nmore\n")
    assert [s.headings for s in sections] == [("Title",), ("Title", "Sub")]
    assert sections[1].line == 6


def test_docs_dir_serves_the_upstream_copy(snowfakery_corpus: Path) -> None:
    content = ContentLibrary(snowfakery_corpus)
    assert content.source("docs") == "docs_dir" and content.source("examples") == "docs_dir"
    assert content.doc_path("architecture") == snowfakery_corpus / "docs" / "arch" / "ArchIndex.md"
    assert content.example("datasets/simple_for_each") is not None
    assert content.example("docs_examples/st_ives.yml") is not None
    assert "$defs" in content.schema
    hits = content.search("just_once singleton", limit=5)
    assert any(h["doc"] == "docs/index.md" and "just_once" in h["heading"] for h in hits)


# -- schema ----------------------------------------------------------------------------------------
def test_schema_findings_carry_lines() -> None:
    schema = ContentLibrary().schema
    findings = schema_findings("- object: A\n  cont: 3\n- objec: B\n", schema, "r.yml")
    assert [f["line"] for f in findings] == [1, 3]
    assert all(f["kind"] == "SchemaWarning" for f in findings)
    for example in ContentLibrary().examples():
        assert schema_findings(example.path.read_text(), schema, example.name) == [], example.name


def test_spec_environment_variables_override_the_settings(tmp_path: Path) -> None:
    from ade_platform.config import load_settings

    (tmp_path / "ade.yaml").write_text("home: h\nsnowfakery:\n  max_reps: 5\n  timeout_seconds: 9\n")
    env = {
        "SNOWFAKERY_MCP_MAX_REPS": "7",
        "SNOWFAKERY_MCP_ALLOW_DBURL": "true",
        "SNOWFAKERY_MCP_WORKSPACE_ROOT": "ws",
    }
    cfg = load_settings(tmp_path / "ade.yaml", env=env).snowfakery
    assert (cfg.max_reps, cfg.timeout_seconds, cfg.allow_dburl, cfg.allow_network) == (7, 9, True, False)
    assert cfg.workspace_root == tmp_path / "ws" and cfg.allowed_plugins == ["snowfakery.standard_plugins.*"]
