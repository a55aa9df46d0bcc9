"""Prompts of the snowfakery toolset (spec section 9): operator playbooks naming resources and tools."""

from __future__ import annotations

from typing import Annotated

from fastmcp import FastMCP
from pydantic import Field

SCHEMA = "snowfakery://schema/recipe-jsonschema"
GUIDE = "snowfakery://docs/index"


def _recipe(recipe_text: str | None, recipe_path: str | None) -> str:
    if recipe_text:
        return f"The recipe:\n\n```yaml\n{recipe_text}\n```\n"
    if recipe_path:
        return f"The recipe is `{recipe_path}` (pass it as recipe_path to the tools).\n"
    return "Ask the user for the recipe (text or a workspace path) if it is not in the conversation.\n"


def register(server: FastMCP) -> None:
    @server.prompt(
        name="author_recipe", description="Write a new Snowfakery recipe for a data-generation goal."
    )
    def author_recipe(
        goal: Annotated[str, Field(description="Objects, relationships and constraints wanted.")],
        volume: Annotated[str | None, Field(description="Rough volume, e.g. '1000 accounts'.")] = None,
    ) -> str:
        size = f"\nTarget volume: {volume}." if volume else ""
        return f"""Write a Snowfakery recipe for this goal:

{goal}{size}

Work in this order:
1. Read the resource {SCHEMA} and the language guide {GUIDE}.
2. Call snowfakery.list_examples and read at least one similar example (snowfakery.get_example or
   snowfakery://examples/<name>); use snowfakery.search_docs for any feature you are unsure about.
3. Draft the recipe:
   - start with `- snowfakery_version: 3`;
   - declare an `option` (with a default) for every tunable number or name, and use int(...) on counts;
   - model one-to-many with `friends` + `reference`, many-to-one with `random_reference`;
   - use `just_once` for reference data, hidden `__` fields for intermediate values;
   - suggest `macro`s for repeated field groups and `include_file` for a shared library.
4. Call snowfakery.validate_recipe with recipe_text. Fix every error (each has a file and line) and
   validate again until valid is true.
5. Call snowfakery.analyze_recipe to confirm tables, relationships and risk flags, then
   snowfakery.run_recipe with reps: 1 and look at stdout_text.
6. For the target volume use target_number (or reps) within the limits from
   snowfakery.list_capabilities.
Finish with the recipe, the options it takes and the command or tool call that generates the volume."""

    @server.prompt(name="debug_recipe", description="Find and fix the construct that makes a recipe fail.")
    def debug_recipe(
        error_output: Annotated[str, Field(description="The validation or run error output.")],
        recipe_text: Annotated[str | None, Field(description="The recipe YAML.")] = None,
        recipe_path: Annotated[str | None, Field(description="Or its workspace path.")] = None,
    ) -> str:
        return f"""Debug a failing Snowfakery recipe.

{_recipe(recipe_text, recipe_path)}
The error output:

```
{error_output}
```

1. Locate the exact failing construct: call snowfakery.explain_errors with the recipe and the error; it
   returns the construct, its filename and line, the rule it breaks and a suggested edit (or call
   snowfakery.validate_recipe for the structured errors).
2. Look the construct up with snowfakery.search_docs and compare with an example
   (snowfakery.list_examples / snowfakery://examples/<name>) and {SCHEMA}.
3. Propose the smallest change that fixes it; do not restructure the recipe.
4. Re-validate with snowfakery.validate_recipe, then run a sample with snowfakery.run_recipe (reps: 1).
   Some errors only appear at run time (dataset values, counters), so do both.
Report the cause, the change (as a small diff) and the validation result."""

    @server.prompt(name="explain_recipe", description="Explain what a recipe generates.")
    def explain_recipe(
        recipe_text: Annotated[str | None, Field(description="The recipe YAML.")] = None,
        recipe_path: Annotated[str | None, Field(description="Or its workspace path.")] = None,
    ) -> str:
        return f"""Explain what this Snowfakery recipe generates.

{_recipe(recipe_text, recipe_path)}
1. Call snowfakery.analyze_recipe for tables, fields, relationships, options, plugins and risk flags.
2. Read {GUIDE} (or snowfakery.search_docs) for any construct you need to explain.
3. Call snowfakery.run_recipe with reps: 1 (and output_format json if structure matters) to show real
   rows; quote a few of them.
Explain: each table and what a row looks like; how tables relate (friends, reference,
random_reference, nicknames); how many rows one repetition creates and what scales it (count
formulas, options, for_each); singletons (just_once); and any risk flags."""

    @server.prompt(
        name="refactor_recipe_for_reuse",
        description="Refactor a recipe into macros and include_file libraries.",
    )
    def refactor_recipe_for_reuse(
        recipe_text: Annotated[str | None, Field(description="The recipe YAML.")] = None,
        recipe_path: Annotated[str | None, Field(description="Or its workspace path.")] = None,
    ) -> str:
        return f"""Refactor this Snowfakery recipe for reuse, without changing what it generates.

{_recipe(recipe_text, recipe_path)}
1. Call snowfakery.analyze_recipe and run it once with snowfakery.run_recipe (reps: 1, seed: 1,
   output_format json) to record the current tables and fields.
2. Read the examples `macro` and `include_file` (snowfakery://examples/macro,
   snowfakery://examples/include_file) and the Macros / Include files sections of {GUIDE}.
3. Move repeated field groups into `macro`s used with `include:`; move macros and shared options into a
   library file used with `include_file`; replace magic numbers with `option`s that have defaults.
4. Validate every file with snowfakery.validate_recipe, run again with the same seed, and check that
   snowfakery.analyze_recipe reports the same tables and fields.
5. Finish with snowfakery.format_recipe on each file.
Return the library file(s) and the new recipe."""

    @server.prompt(
        name="build_plugin_stub", description="Draft a Snowfakery plugin class and a recipe using it."
    )
    def build_plugin_stub(
        plugin_name: Annotated[str, Field(description="Class name of the plugin, e.g. PartNumbers.")],
        purpose: Annotated[str, Field(description="What the plugin's functions should do.")],
    ) -> str:
        return f"""Write a Snowfakery plugin named {plugin_name}: {purpose}

1. Read snowfakery://docs/extending (and snowfakery.search_docs "plugin Functions" for details).
2. Write a Python module with `class {plugin_name}(SnowfakeryPlugin)` (from snowfakery import
   SnowfakeryPlugin) and an inner `class Functions` whose methods are the recipe functions; keep
   per-run state on self; add an inner `Validators` class with validate_<function>(sv, context) for
   argument checks; declare `allowed_options` with PluginOption if it takes plugin options.
3. Write an example recipe: `- snowfakery_version: 3`, `- plugin: <module>.{plugin_name}`, and an object
   that calls each function both in a formula (${{{{ {plugin_name}.fn(...) }}}}) and as a function block.
4. Check the recipe's YAML with snowfakery.validate_recipe (strict_mode: false parses only). The
   server loads only allow-listed plugins (snowfakery.list_capabilities -> allowed_plugins), so a new
   plugin is reported as PluginNotAllowed until an operator adds it: say so.
Return the module, the recipe, and how to install the plugin (a plugins/ folder next to the recipe,
or a package on the Python path)."""
