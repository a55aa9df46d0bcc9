"""Output shapes of the snowfakery toolset (snowfakery spec section 8), with the spec's field names, and the
two structured inputs its tools take (a stopping criterion, an error reported back).

Open to extra keys like every shape here. Locations are workspace-relative (or `<recipe_text>`, or
`examples/...`); `line` is 1-based and null where Snowfakery does not know it. Values copied from a
recipe's YAML (a count, an option default, a field name) can be any YAML scalar, so they are `Any`.
"""

from __future__ import annotations

from typing import Any, Literal, NotRequired

from pydantic import BaseModel, Field

from ade_platform.lib.shapes import OpenShape
from mcp_bridge.toolsets.schemas.paging import Paged
from mcp_bridge.toolsets.schemas.provenance import Provenance
from mcp_bridge.toolsets.schemas.snowflake import LiveProvenance


class RecipeProblem(OpenShape):
    """An error or warning about a recipe (the spec's `{message, filename, line, column?, kind}`)."""

    kind: str
    message: str
    filename: str | None
    line: int | None
    column: NotRequired[int]


# -- catalog ---------------------------------------------------------------------------------------------
class Limits(OpenShape):
    max_reps: int
    max_target_count: int
    max_rows: int
    timeout_seconds: float
    max_output_bytes: int
    max_inline_chars: int
    max_recipe_bytes: int
    max_memory_mb: int


class Capabilities(OpenShape):
    snowfakery_version: str
    output_formats: list[str]
    graphviz_available: bool
    features: list[str]
    limits: Limits
    allow_dburl: bool
    allow_network: bool
    allowed_plugins: list[str]
    content: dict[str, Literal["bundled", "docs_dir"]]
    discovery: dict[str, str]


class ExampleItem(OpenShape):
    name: str
    description: str
    uri: str


class ExampleList(Paged):
    examples: list[ExampleItem]
    count: int
    total: int
    source: Literal["bundled", "docs_dir"]


class ExampleProvenance(Provenance):
    source: Literal["bundled", "docs_dir"]  # type: ignore[misc]  (narrower than the root's)
    path: str


class ExampleAnswer(ExampleItem):
    recipe_text: str
    provenance: ExampleProvenance


class SchemaAnswer(OpenShape):
    schema: dict[str, Any]
    uri: str
    source: Literal["bundled", "docs_dir"]


class DocHit(OpenShape):
    doc: str
    uri: str
    heading: str
    headings: list[str]
    line: int
    score: float
    snippet: str


class DocSearch(Paged):
    query: str
    results: list[DocHit]
    count: int
    total: NotRequired[int]


# -- validation and analysis ------------------------------------------------------------------------------
class Checks(OpenShape):
    """Which checks ran: YAML, the JSON schema, the server's policy, then Snowfakery's own validator."""

    yaml: bool
    schema: bool
    policy: bool
    snowfakery: Literal["validate_only+strict_mode", "parse"] | None


class Validation(OpenShape):
    recipe: str
    valid: bool
    errors: list[RecipeProblem]
    warnings: list[RecipeProblem]
    checks: Checks


class Located(OpenShape):
    filename: str | None
    line: int | None


class FieldInfo(OpenShape):
    name: Any
    kind: str
    hidden: bool


class TableInfo(Located):
    name: str
    fields: list[FieldInfo]
    hidden: bool
    nicknames: list[str]
    count: Any
    just_once: bool
    parents: list[str]
    templates: int
    macros: NotRequired[list[str]]


class Relationship(Located):
    from_table: str
    field: Any
    to_table: str
    kind: Literal["friend", "inline_object", "reference", "random_reference"]
    nickname: NotRequired[str]


class OptionDeclared(Located):
    name: Any
    default: Any
    required: bool


class PluginDeclared(Located):
    name: str
    allowed: bool


class MacroDeclared(Located):
    name: str


class IncludeInfo(Located):
    path: str
    followed: bool


class Risk(Located):
    flag: str
    severity: Literal["info", "warning", "error"]
    message: str


class Analysis(OpenShape):
    """The static model of a recipe; a recipe that is not valid YAML (or not a list) has `errors` only."""

    recipe: str
    valid_yaml: bool
    errors: list[RecipeProblem]
    snowfakery_version: NotRequired[Any]
    tables: NotRequired[list[TableInfo]]
    relationships: NotRequired[list[Relationship]]
    uses_random_reference: NotRequired[list[str]]
    options_declared: NotRequired[list[OptionDeclared]]
    plugins_declared: NotRequired[list[PluginDeclared]]
    macros: NotRequired[list[MacroDeclared]]
    includes: NotRequired[list[IncludeInfo]]
    estimated_risk: NotRequired[list[Risk]]
    policy_problems: NotRequired[list[RecipeProblem]]


class FormatAnswer(OpenShape):
    recipe: str
    formatted_text: str
    changed: bool
    notes: list[str]


# -- runs ---------------------------------------------------------------------------------------------------
class TableDependency(OpenShape):
    from_table: str
    field: str
    to_table: str


class RunSummary(OpenShape):
    row_counts: dict[str, int]
    total_rows: int
    reps: int | None
    last_ids: dict[str, int]
    tables: dict[str, list[str]]
    dependencies: list[TableDependency]
    elapsed_seconds: float | None


class CsvFile(OpenShape):
    name: str
    uri: str
    rows: NotRequired[int]


class RunAnswer(OpenShape):
    """A run (`run_id` set) or, with validate_only, the validation verdict (`run_id` null). Update mode adds
    `update_input_file`: the workspace CSV the run read."""

    run_id: str | None
    recipe: str
    output_format: NotRequired[str]
    summary: NotRequired[RunSummary]
    stdout_text: NotRequired[str]
    truncated: NotRequired[bool]
    output_bytes: NotRequired[int]
    csv_files: NotRequired[list[CsvFile]]
    mapping_yaml: NotRequired[str]
    mapping_truncated: NotRequired[bool]
    messages: NotRequired[list[str]]
    warnings: NotRequired[list[RecipeProblem]]
    resources: NotRequired[list[str]]
    workspace_files: NotRequired[dict[str, str]]
    update_input_file: NotRequired[str]
    provenance: NotRequired[LiveProvenance]
    validate_only: NotRequired[bool]
    valid: NotRequired[bool]
    errors: NotRequired[list[RecipeProblem]]
    checks: NotRequired[Checks]


class DiagramAnswer(OpenShape):
    run_id: str
    format: str
    diagram_uri: str
    diagram_text: str | None
    truncated: bool
    summary: RunSummary
    resources: list[str]


class MappingAnswer(OpenShape):
    run_id: str
    mapping_yaml: str
    truncated: bool
    mapping_uri: str
    tables: list[str]
    resources: list[str]


# -- explain_errors ---------------------------------------------------------------------------------------
class SourceLocation(OpenShape):
    filename: str | None
    line: int | None
    column: NotRequired[int]


class SuggestedFix(OpenShape):
    """The smallest change: on `line`, `before` becomes `after` (both null when no edit can be derived,
    then `description` says what to do)."""

    description: str
    line: int | None
    before: str | None
    after: str | None


class Explanation(OpenShape):
    kind: str
    message: str
    location: SourceLocation
    failing_construct: str | None
    rule: str
    fix: SuggestedFix
    source_line: str | None


class ErrorExplanations(OpenShape):
    recipe: str
    valid: bool
    explanations: list[Explanation]
    checks: Checks


# -- draft_recipe -------------------------------------------------------------------------------------------------
class DraftError(OpenShape):
    kind: str
    message: str
    line: int | None
    rule: str | None
    fix: str | None


class DraftRound(OpenShape):
    """One draft from the client's model and the server's verdict on it."""

    round: int
    valid: bool
    recipe_text: str
    errors: list[DraftError]


class DraftAnswer(OpenShape):
    valid: bool
    recipe_text: str
    rounds: list[DraftRound]
    round_count: int
    stopped: Literal["valid", "max_rounds"]
    next: str


# -- inputs ---------------------------------------------------------------------------------------------------
class TargetNumber(BaseModel):
    # run until `table` (an object name or nickname) holds at least `count` rows

    table: str = Field(min_length=1, max_length=256)
    count: int = Field(ge=1)


class ReportedLocation(BaseModel):
    filename: str | None = Field(default=None, max_length=1000)
    line: int | None = Field(default=None, ge=1)


class ReportedProblem(BaseModel):
    # one error as validate_recipe / run_recipe return it

    kind: str | None = Field(default=None, max_length=100)
    message: str | None = Field(default=None, max_length=5000)
    filename: str | None = Field(default=None, max_length=1000)
    line: int | None = Field(default=None, ge=1)


class ReportedError(ReportedProblem):
    # an error object as the snowfakery tools return it; any subset will do

    detail: str | None = Field(default=None, max_length=5000)
    location: ReportedLocation | None = None
    errors: list[ReportedProblem] | None = Field(default=None, max_length=50)

    def problems(self) -> list[dict[str, Any]]:
        if self.errors:
            return [e.model_dump() for e in self.errors]
        where = self.location or ReportedLocation(filename=self.filename, line=self.line)
        return [
            {
                "kind": self.kind,
                "message": self.message or self.detail,
                "filename": where.filename or self.filename,
                "line": where.line or self.line,
            }
        ]
