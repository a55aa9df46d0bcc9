"""Snowfakery recipes as a safe service: authoring help, validation, analysis and sandboxed runs.

No Dagster or MCP import here: the snowfakery MCP toolset and the datasets assets both build on it.

- `content`: the language guide, examples and recipe JSON schema shipped in `docs/`, `examples/`,
  `schema/` (or a configured docs folder with the same layout), with a small docs search;
- `analysis`, `schemacheck`, `formatting`: static work on recipe YAML (nothing runs);
- `service`: recipes from a workspace path, an example URI or inline text; validation; analysis;
- `runs`: runs with limits, run folders and artifacts (`snowfakery://runs/<id>/...`);
- `sandbox`, `zygote`, `worker`, `guard`: the killable child processes recipes run in;
- `workspace`, `policy`, `scrub`, `errors`: confinement, limits, redaction, stable error codes.
"""
