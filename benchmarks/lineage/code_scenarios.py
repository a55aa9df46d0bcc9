"""Incidents that arrive as code: a staging model's SQL edited by the team (committed, or only saved in the
working tree) and built from a terminal with what reads it, so the model below fails; and the control, a refactor
that keeps every name. The cause a correct answer ranks first is the edited model (`code_change`), not the model
that merely failed."""

from __future__ import annotations

import random

from benchmarks.lineage.scenarios import Catalog, Expected, Scenario, _models


def staging_edit(cat: Catalog, rng: random.Random, kind: str, tag: str) -> Scenario | None:
    """A staging model edited by the team and built from a terminal with what reads it (`dbt run -s stg+`):
    one of its output columns renamed (committed, or only saved) so the model below fails; or, for the control, a
    refactor that keeps every name (committed) so everything stays green."""
    options = []
    for model in _models(cat):
        sql = (cat.p.project / cat.model_path(model)).read_text()
        below = [m for m in cat.downstream(model, {"model"}) if cat.nodes[m].get("path")]
        head = sql.split("from", 1)[0]
        cols = [c.strip() for c in head.removeprefix("select").split(",")]
        plain = [c for c in cols if c.isidentifier() and not c.startswith("_")]
        if below and plain and sql.lstrip().startswith("select") and " as " in head:
            options.append((model, plain, below))
    if not options:
        return None
    model, plain, below = rng.choice(options)
    column = rng.choice(plain)
    name = str(cat.nodes[model]["name"])
    path = cat.p.project / cat.model_path(model)
    original = path.read_text()
    commit = kind != "upstream_rename_uncommitted"
    if kind == "healthy_refactor":
        edited = f"-- tidied up\nwith base as (\n{original.rstrip()}\n)\nselect * from base\n"
    else:
        head, rest = original.split("from", 1)
        edited = head.replace(f" {column},", f" {column} as {column}_{tag},", 1) + "from" + rest
        if edited == original:
            edited = head.replace(f" {column}\n", f" {column} as {column}_{tag}\n", 1) + "from" + rest

    def apply() -> None:
        path.write_text(edited)
        if commit:
            cat.p.git("commit", "-qam", f"Edit {name} ({tag})")
        result = cat.p.dbt("run", "--select", f"{name}+")
        broken = result.returncode != 0
        if broken != (kind != "healthy_refactor"):
            raise RuntimeError(f"dbt run of {name}+ after the edit exited {result.returncode}")

    def revert() -> None:
        path.write_text(original)
        if commit:
            cat.p.git("commit", "-qam", f"Revert {name} ({tag})")
        result = cat.p.dbt("run", "--select", f"{name}+")
        if result.returncode != 0:
            raise RuntimeError(f"dbt run of the restored {name}+ failed (exit {result.returncode})")
        cat.p.publish_outside_runs()
        cat.p.clean_outside_runs()

    reader = next((m for m in below if column in (cat.p.project / cat.model_path(m)).read_text()), below[0])
    if kind == "healthy_refactor":
        what, expected = f"{name} refactored (names kept), committed and built", None
    else:
        how = "committed" if commit else "not committed"
        what = f"{name}.{column} renamed in its SQL ({how}); dbt run {name}+ fails below it"
        expected = Expected("code_change", model, column)
    return Scenario(kind, what, cat.start_of(reader), expected, apply, revert)
