"""Resources of the snowfakery toolset (spec section 7).

Static: the recipe JSON schema, the docs pages, the examples list and each example, and the discovery
catalogues (Faker providers, allowed plugins, output formats: lib/snowfakery/catalog.py). Dynamic: the
artifacts of each kept run under snowfakery://runs/<run_id>/ (recipe, stdout, output.json, output.sql,
csv/ and its files, diagram.<format>, continuation.yml, mapping.yml).
"""

from __future__ import annotations

import json
from typing import Any

from fastmcp import FastMCP
from fastmcp.exceptions import ResourceError
from fastmcp.resources import ResourceContent, ResourceResult

from ade_platform.lib.snowfakery.catalog import DISCOVERY
from ade_platform.lib.snowfakery.errors import SnowfakeryError
from mcp_bridge.toolsets.snowfakery.service import ServiceHolder, example_item

MARKDOWN = "text/markdown"


def register(server: FastMCP, services: ServiceHolder) -> None:
    def service() -> Any:
        return services.get()

    def doc(name: str) -> str:
        text = service().content.doc(name)
        if text is None:
            raise ResourceError(f"no doc page {name!r}; see snowfakery://docs/index")
        return text

    @server.resource(
        "snowfakery://schema/recipe-jsonschema",
        name="recipe-jsonschema",
        description="JSON Schema of Snowfakery recipes.",
        mime_type="application/schema+json",
    )
    def schema() -> str:
        return json.dumps(service().content.schema, indent=2)

    pages = {
        "index": "The Snowfakery recipe language: statements, objects, fields, friends, references, macros, options.",
        "extending": "Writing plugins and Faker providers.",
        "salesforce": "Salesforce concepts for recipes (read-only guidance; no org access here).",
        "architecture": "How Snowfakery's interpreter works, and how this server runs recipes.",
    }
    for page, description in pages.items():
        server.resource(
            f"snowfakery://docs/{page}", name=f"docs-{page}", description=description, mime_type=MARKDOWN
        )(_bind(doc, page))

    @server.resource(
        "snowfakery://docs/{page*}",
        name="docs-page",
        description="Any page of the docs folder by its path without .md (e.g. arch/RowHistory).",
        mime_type=MARKDOWN,
    )
    def docs_page(page: str) -> str:
        return doc(page)

    @server.resource(
        "snowfakery://examples/list",
        name="examples-list",
        description="Example recipes: name, description and URI.",
        mime_type="application/json",
    )
    def examples_list() -> str:
        return json.dumps([example_item(e) for e in service().content.examples()], indent=2)

    @server.resource(
        "snowfakery://examples/{name*}",
        name="example",
        description="One example recipe (YAML).",
        mime_type="application/yaml",
    )
    def example(name: str) -> str:
        found = service().content.example(name)
        if found is None:
            raise ResourceError(f"no example {name!r}; see snowfakery://examples/list")
        return found.path.read_text(encoding="utf-8")

    catalogues = {
        "providers": "Every Faker provider method (default locale) with its `fake:` spelling and an example "
        "value, plus the names Snowfakery adds.",
        "plugins": "The plugins recipes may declare on this server (allow-listed) with their functions and how "
        "to call them; the standard ones refused here, and why.",
        "formats": "Output formats of run_recipe/render_diagram: what each writes, what it needs, whether it is "
        "available here.",
    }
    for part, description in catalogues.items():
        server.resource(
            DISCOVERY[part], name=f"catalog-{part}", description=description, mime_type="application/json"
        )(_catalog_reader(services, part))

    artifacts = {
        "recipe": ("The recipe text of a run.", "application/yaml"),
        "stdout": ("The text (txt) output of a run.", "text/plain"),
        "output.json": ("The JSON output of a run.", "application/json"),
        "output.sql": ("The SQL output of a run.", "application/sql"),
        "csv/": ("The CSV files of a run: a JSON listing with row counts and URIs.", "application/json"),
        "continuation.yml": (
            "The continuation file of a run (pass it to continue the ids).",
            "application/yaml",
        ),
        "mapping.yml": ("The CumulusCI mapping file of a run.", "application/yaml"),
    }
    for name, (description, mime) in artifacts.items():
        slug = name.replace(".", "-").strip("/") or "csv"
        server.resource(
            f"snowfakery://runs/{{run_id}}/{name}",
            name=f"run-{slug}",
            description=description,
            mime_type=mime,
        )(_artifact_reader(services, name))

    @server.resource(
        "snowfakery://runs/{run_id}/csv/{file}",
        name="run-csv-file",
        description="One CSV file of a run.",
        mime_type="text/csv",
    )
    def csv_file(run_id: str, file: str) -> Any:
        return _read(services, run_id, f"csv/{file}")

    @server.resource(
        "snowfakery://runs/{run_id}/diagram.{format}",
        name="run-diagram",
        description="The diagram of a run (dot, svg, png, ...).",
    )
    def diagram(run_id: str, format: str) -> Any:
        return _read(services, run_id, f"diagram.{format}")


def _bind(reader: Any, page: str) -> Any:
    def read() -> str:
        return reader(page)

    read.__name__ = f"docs_{page}"
    return read


def _catalog_reader(services: ServiceHolder, part: str) -> Any:
    def read() -> str:
        return json.dumps(services.get().catalog(part), indent=1)

    read.__name__ = f"catalog_{part}"
    return read


def _artifact_reader(services: ServiceHolder, name: str) -> Any:
    def read(run_id: str) -> Any:
        return _read(services, run_id, name)

    read.__name__ = "run_" + "".join(c if c.isalnum() else "_" for c in name).strip("_")
    return read


def _read(services: ServiceHolder, run_id: str, name: str) -> Any:
    from ade_platform.lib.snowfakery.runs import run_artifact

    try:
        content, mime = run_artifact(services.get(), run_id, name)
    except SnowfakeryError as exc:
        raise ResourceError(exc.detail) from None
    # each artifact carries its own type (a diagram may be dot text or png bytes)
    return ResourceResult([ResourceContent(content, mime_type=mime)])
