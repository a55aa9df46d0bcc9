"""Discovery catalogues: what a recipe can call, read from the installed Faker and Snowfakery.

- `faker_providers()`: every Faker provider method of the default locale (plus the names Snowfakery adds or
  redefines), with its `fake:` spelling and one example value (seeded, truncated);
- `plugins(policy)`: Snowfakery's standard plugins, read from their source with `ast` (nothing is imported or
  run), each with its `- plugin:` declaration and its functions; those the policy refuses are listed apart,
  with the reason;
- `output_formats(policy, graphviz)`: each format, what it writes and what it needs.

Each answer is bounded (examples and docstrings truncated, a cap on the whole catalogue) and computed once per
process: they depend only on installed packages and the settings.
"""

from __future__ import annotations

import ast
import importlib.util
import warnings
from functools import cache
from pathlib import Path
from typing import Any

from ade_platform.lib.snowfakery.policy import BINARY_FORMATS, GRAPHVIZ_FORMATS, OUTPUT_FORMATS, RunPolicy

# The catalogues' resource URIs (named by list_capabilities too)
DISCOVERY = {
    "providers": "snowfakery://providers/list",
    "plugins": "snowfakery://plugins/list",
    "formats": "snowfakery://formats/info",
}
LOCALE = "en_US"
MAX_EXAMPLE = 80
MAX_DOC = 160
MAX_METHODS = 600
# Methods whose example would be large or slow (files, archives, images, whole documents): listed, not called.
_NOT_CALLED = frozenset(
    {"binary", "zip", "tar", "image", "json", "json_bytes", "xml", "csv", "tsv", "psv", "dsv", "fixed_width"}
    | {
        "pyiterable",
        "pylist",
        "pyset",
        "pytuple",
        "pydict",
        "pystruct",
        "pyobject",
        "profile",
        "simple_profile",
    }
    | {"paragraphs", "texts", "sentences", "words", "get_words_list", "enum", "seed_instance", "seed_locale"}
)


def _example(value: Any) -> str:
    text = value if isinstance(value, str) else repr(value)
    return text if len(text) <= MAX_EXAMPLE else text[: MAX_EXAMPLE - 1] + "…"


def _first_line(doc: str | None) -> str:
    line = (doc or "").strip().split("\n", 1)[0].strip()
    return line if len(line) <= MAX_DOC else line[: MAX_DOC - 1] + "…"


@cache
def faker_providers() -> dict[str, Any]:
    """Faker's provider methods by provider (`fake: <method>`), and the names Snowfakery adds."""
    from faker import VERSION as faker_version
    from faker import Faker

    fake = Faker(LOCALE)
    fake.seed_instance(0)  # the same examples every time, without touching Faker's shared random state
    reserved = set(dir(Faker)) | {"random", "generator_attrs"}
    providers: list[dict[str, Any]] = []
    seen: set[str] = set()
    for provider in fake.providers:
        category = type(provider).__module__.removeprefix("faker.providers.").split(".")[0]
        methods = []
        for name in sorted(dir(provider)):
            if (
                name.startswith("_")
                or name in reserved
                or name in seen
                or not callable(getattr(provider, name))
            ):
                continue
            seen.add(name)
            methods.append({"name": name, "fake": f"fake: {name}", "example": _try(fake, name)})
        if methods:
            providers.append({"provider": category, "methods": methods})
    count = sum(len(p["methods"]) for p in providers)
    return {
        "faker_version": faker_version,
        "locale": LOCALE,
        "usage": "A field `name: {fake: first_name}`, or inside a formula `${{fake.first_name}}`; names are "
        "case- and underscore-insensitive (FirstName works too). Methods that take arguments: "
        "`fake.date_between: {start_date: -1y, end_date: today}`.",
        "providers": providers,
        "snowfakery_names": _snowfakery_names(),
        "count": count,
    }


def _try(fake: Any, name: str) -> str | None:
    """One example value of a provider method called without arguments (None when it needs some)."""
    if name in _NOT_CALLED:
        return None
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return _example(getattr(fake, name)())
    except Exception:  # needs arguments, or an optional package (e.g. images): listed without an example
        return None


def _snowfakery_names() -> list[dict[str, str]]:
    """What Snowfakery's FakeNames adds to (or redefines in) Faker, read from its source (importing Snowfakery
    would cost the gateway seconds; recipes run in the sandbox, which has it imported)."""
    folder = _snowfakery_dir()
    source = folder / "fakedata" / "fake_data_generator.py" if folder else None
    if source is None or not source.is_file():
        return []
    tree = ast.parse(source.read_text(encoding="utf-8"))
    names = next((n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "FakeNames"), None)
    if names is None:
        return []
    return [
        {"name": item.name, "fake": f"fake: {item.name}", "doc": _first_line(ast.get_docstring(item))}
        for item in names.body
        if isinstance(item, ast.FunctionDef) and not item.name.startswith("_")
    ]


def _snowfakery_dir() -> Path | None:
    spec = importlib.util.find_spec("snowfakery")  # finds the package without importing it
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


def _standard_plugins_dir() -> Path | None:
    folder = _snowfakery_dir()
    return folder / "standard_plugins" if folder and (folder / "standard_plugins").is_dir() else None


def _declaration(module: str, cls: str) -> str:
    """How a recipe names the plugin: the short form where Snowfakery resolves it (module named like its class,
    or re-exported by the package)."""
    if module == cls or (module == "_math" and cls == "Math"):
        return f"snowfakery.standard_plugins.{cls}"
    return f"snowfakery.standard_plugins.{module}.{cls}"


def _functions(node: ast.ClassDef) -> list[dict[str, str]] | None:
    """The public methods of a plugin class's inner `Functions` class (None when it has none)."""
    inner = next((n for n in node.body if isinstance(n, ast.ClassDef) and n.name == "Functions"), None)
    if inner is None:
        return None
    out = []
    for item in inner.body:
        if isinstance(item, ast.FunctionDef) and not item.name.startswith("_"):
            out.append(
                {
                    "name": item.name,
                    "signature": _signature(item),
                    "doc": _first_line(ast.get_docstring(item)),
                }
            )
    return out


def _signature(fn: ast.FunctionDef) -> str:
    """`name(arg, key=default, ...)` without `self` and the `_` context placeholder plugins take."""
    args = fn.args
    positional = args.posonlyargs + args.args
    defaults = [None] * (len(positional) - len(args.defaults)) + list(args.defaults)
    parts = [
        a.arg if d is None else f"{a.arg}={ast.unparse(d)}"
        for a, d in zip(positional, defaults, strict=True)
        if a.arg not in ("self", "_")
    ]
    if args.vararg:
        parts.append(f"*{args.vararg.arg}")
    parts += [
        a.arg if d is None else f"{a.arg}={ast.unparse(d)}"
        for a, d in zip(args.kwonlyargs, args.kw_defaults, strict=True)
    ]
    if args.kwarg:
        parts.append(f"**{args.kwarg.arg}")
    return f"{fn.name}({', '.join(parts)})"


@cache
def _plugin_classes() -> tuple[
    tuple[str, str, tuple[str, ...], tuple[tuple[str, str, str], ...] | None], ...
]:
    """(module, class, base names, functions) of every class in the standard plugins' source."""
    folder = _standard_plugins_dir()
    if folder is None:
        return ()
    found = []
    for path in sorted(folder.glob("*.py")):
        if path.name == "__init__.py":
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in tree.body:
            if isinstance(node, ast.ClassDef):
                bases = tuple(b.id if isinstance(b, ast.Name) else getattr(b, "attr", "") for b in node.bases)
                functions = _functions(node)
                frozen = (
                    tuple((f["name"], f["signature"], f["doc"]) for f in functions) if functions else None
                )
                found.append((path.stem, node.name, bases, frozen))
    return tuple(found)


def plugins(policy: RunPolicy) -> dict[str, Any]:
    """The standard plugins a recipe may declare here, with their functions; the ones refused, and why."""
    classes = {name: (module, bases, functions) for module, name, bases, functions in _plugin_classes()}

    def is_plugin(name: str, depth: int = 0) -> bool:
        if name in ("SnowfakeryPlugin", "ParserMacroPlugin"):
            return True
        entry = classes.get(name)
        return depth < 5 and entry is not None and any(is_plugin(b, depth + 1) for b in entry[1])

    def functions_of(name: str, depth: int = 0) -> tuple[tuple[str, str, str], ...]:
        entry = classes.get(name)
        if entry is None or depth > 5:
            return ()
        if entry[2] is not None:
            return entry[2]
        return next((f for b in entry[1] if (f := functions_of(b, depth + 1))), ())

    allowed, refused = [], []
    for name, (module, _, _) in sorted(classes.items(), key=lambda kv: (kv[1][0], kv[0])):
        if (module.startswith("_") and name != "Math") or name.endswith("Base") or not is_plugin(name):
            continue
        declaration = _declaration(module, name)
        problem = policy.plugin_problem(declaration)
        if problem:
            refused.append({"plugin": declaration, "kind": problem[0], "reason": problem[1]})
            continue
        allowed.append(
            {
                "plugin": declaration,
                "declare": f"- plugin: {declaration}",
                "functions": [
                    {
                        "name": fn,
                        "call": f"${{{{{name}.{signature}}}}}",
                        "doc": doc,
                        **(
                            {"refused": problem[1]}
                            if (problem := policy.function_problem(f"{name}.{fn}"))
                            else {}
                        ),
                    }
                    for fn, signature, doc in functions_of(name)
                ],
            }
        )
    return {
        "usage": "Declare a plugin once at the top of a recipe (`- plugin: <name>`), then call its functions in "
        "a formula (`${{Counters.NumberCounter(start=1)}}`) or as a field value (`Counters.NumberCounter: "
        "{start: 1}`).",
        "allowed_plugins": list(policy.allowed_plugins),
        "plugins": allowed,
        "refused": refused,
        "count": len(allowed),
    }


_FORMAT_NOTES = {
    "txt": "A readable listing of every row (the default); returned inline, capped, and as resource stdout.",
    "json": "Every row as JSON; resource output.json.",
    "csv": "One CSV file per table in a folder; resource csv/ lists them with row counts "
    "(output_folder_path copies them into the workspace).",
    "sql": "CREATE TABLE and INSERT statements; resource output.sql.",
    "dot": "A Graphviz diagram of the rows and their references, as dot text (no Graphviz needed).",
}


def output_formats(policy: RunPolicy, graphviz: bool) -> dict[str, Any]:
    """Each output format of run_recipe and render_diagram: what it writes, what it needs, and whether it is
    available on this server."""
    formats = []
    for name in OUTPUT_FORMATS:
        needs = ["Graphviz's dot on the server"] if name in GRAPHVIZ_FORMATS else []
        formats.append(
            {
                "format": name,
                "writes": _FORMAT_NOTES.get(
                    name, f"A diagram rendered by Graphviz ({name}); resource diagram.{name}."
                ),
                "binary": name in BINARY_FORMATS,
                "needs": needs,
                "available": graphviz or name not in GRAPHVIZ_FORMATS,
                "tools": ["run_recipe", "render_diagram"]
                if name == "dot" or name in GRAPHVIZ_FORMATS
                else ["run_recipe"],
            }
        )
    return {
        "formats": formats,
        "database_url": {
            "allowed": policy.allow_dburl,
            "note": "run_recipe(dburl=...) writes rows to a database instead of a file; disabled unless the server "
            "sets snowfakery.allow_dburl.",
        },
        "limits": {"max_output_bytes": policy.max_output_bytes, "max_inline_chars": policy.max_inline_chars},
    }
