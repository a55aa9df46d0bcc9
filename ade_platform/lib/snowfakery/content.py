"""The knowledge the server shows: language docs, example recipes and the recipe JSON schema.

The package ships its own (`docs/`, `examples/`, `schema/` next to this module). A configured docs
directory with the same layout (for instance a checkout of Snowfakery's upstream docs, schema and
examples) replaces each part it provides. Search is a small BM25 over markdown sections.
"""

from __future__ import annotations

import json
import math
import re
from collections import Counter
from dataclasses import dataclass
from functools import cache, cached_property
from pathlib import Path
from typing import Any

import yaml

BUNDLED = Path(__file__).resolve().parent
SCHEMA_NAMES = ("recipe.schema.json", "snowfakery_recipe.jsonschema.json")
# the spec's fixed doc pages -> candidate files (first that exists wins)
DOC_ALIASES = {
    "index": ("index",),
    "extending": ("extending",),
    "salesforce": ("salesforce",),
    "architecture": ("architecture", "arch/ArchIndex"),
}
_HEADING = re.compile(r"^(#{1,6})\s+(.+?)\s*#*\s*$")
_FENCE = re.compile(r"^\s*(```|~~~)")
_WORD = re.compile(r"[a-z0-9_]+")
_STOP = frozenset(
    {"a", "an", "and", "are", "as", "at", "be", "by", "for", "from", "how", "i", "in", "is", "it", "of"}
    | {"on", "or", "the", "to", "what", "with"}
)


@dataclass(frozen=True)
class Example:
    name: str
    path: Path
    relative: str
    description: str


@dataclass(frozen=True)
class Section:
    doc: str
    headings: tuple[str, ...]
    line: int
    text: str


class ContentLibrary:
    def __init__(self, docs_dir: Path | None = None) -> None:
        self.docs_dir = docs_dir

    def _part(self, name: str) -> tuple[Path, str]:
        if self.docs_dir is not None and (self.docs_dir / name).is_dir():
            return self.docs_dir / name, "docs_dir"
        return BUNDLED / name, "bundled"

    # -- docs ----------------------------------------------------------------------------------------
    @property
    def docs_root(self) -> Path:
        return self._part("docs")[0]

    def source(self, part: str) -> str:
        return self._part(part)[1]

    def doc_pages(self) -> list[str]:
        root = self.docs_root
        return sorted(p.relative_to(root).with_suffix("").as_posix() for p in root.rglob("*.md"))

    def doc_path(self, name: str) -> Path | None:
        pages = set(self.doc_pages())
        for candidate in DOC_ALIASES.get(name, (name,)):
            if candidate in pages:
                return self.docs_root / f"{candidate}.md"
        return None

    def doc(self, name: str) -> str | None:
        path = self.doc_path(name)
        return path.read_text(encoding="utf-8") if path else None

    @cached_property
    def _sections(self) -> list[Section]:
        sections: list[Section] = []
        for page in self.doc_pages():
            sections.extend(split_sections(page, (self.docs_root / f"{page}.md").read_text(encoding="utf-8")))
        return sections

    def search(self, query: str, limit: int = 5) -> list[dict[str, Any]]:
        terms = [t for t in _WORD.findall(query.lower()) if t not in _STOP] or _WORD.findall(query.lower())
        if not terms:
            return []
        sections = self._sections
        docs = [Counter(_WORD.findall(s.text.lower())) for s in sections]
        titles = [Counter(_WORD.findall(" ".join(s.headings).lower())) for s in sections]
        avg = sum(sum(d.values()) for d in docs) / max(len(docs), 1)
        scored = []
        for i, words in enumerate(docs):
            length = sum(words.values()) or 1
            score = 0.0
            for term in set(terms):
                n = sum(1 for d in docs if term in d)
                if not n:
                    continue
                idf = math.log(1 + (len(docs) - n + 0.5) / (n + 0.5))
                tf = words[term]
                score += idf * (tf * 2.2) / (tf + 1.2 * (0.25 + 0.75 * length / avg))
                score += idf * 1.5 * min(titles[i][term], 1)
            if score > 0:
                scored.append((score, i))
        scored.sort(key=lambda item: (-item[0], item[1]))
        return [self._hit(sections[i], terms, score) for score, i in scored[:limit]]

    def _hit(self, section: Section, terms: list[str], score: float) -> dict[str, Any]:
        lines = section.text.splitlines()
        best = max(range(len(lines)), key=lambda j: sum(t in lines[j].lower() for t in terms), default=0)
        start = max(best - 2, 0)
        snippet = "\n".join(lines[start : best + 4]).strip()
        page = section.doc
        return {
            "doc": f"docs/{page}.md",
            "uri": f"snowfakery://docs/{page}",
            "heading": section.headings[-1] if section.headings else page,
            "headings": list(section.headings),
            "line": section.line + start,
            "score": round(score, 3),
            "snippet": snippet[:600],
        }

    # -- examples --------------------------------------------------------------------------------------
    @property
    def examples_root(self) -> Path:
        return self._part("examples")[0]

    @cached_property
    def _examples(self) -> dict[str, Example]:
        root = self.examples_root
        files = sorted(p for p in root.rglob("*") if p.suffix in (".yml", ".yaml") and p.is_file())
        names: dict[str, list[Path]] = {}
        for path in files:
            rel = path.relative_to(root).as_posix()
            short = re.sub(r"(\.recipe)?\.ya?ml$", "", rel)
            names.setdefault(short, []).append(path)
        found: dict[str, Example] = {}
        for short, paths in names.items():
            for path in paths:
                rel = path.relative_to(root).as_posix()
                name = short if len(paths) == 1 else rel
                found[name] = Example(name, path, rel, describe_recipe(path.read_text(encoding="utf-8")))
        return dict(sorted(found.items()))

    def examples(self, prefix: str | None = None) -> list[Example]:
        return [e for name, e in self._examples.items() if not prefix or name.startswith(prefix)]

    def example(self, name: str) -> Example | None:
        found = self._examples.get(name)
        if found is None:
            found = next((e for e in self._examples.values() if e.relative == name), None)
        return found

    # -- schema --------------------------------------------------------------------------------------------
    @cached_property
    def schema(self) -> dict[str, Any]:
        folder, _ = self._part("schema")
        for name in SCHEMA_NAMES:
            if (folder / name).is_file():
                return _read_schema(folder / name)
        for path in sorted(folder.glob("*.json")):
            return _read_schema(path)
        return _read_schema(BUNDLED / "schema" / SCHEMA_NAMES[0])


@cache
def _read_schema(path: Path) -> dict[str, Any]:
    """One object per schema file in a process (read-only by convention): its checker is built once for it
    (schemacheck), whichever library instance asks first (the server's warm-up or its service)."""
    return json.loads(path.read_text(encoding="utf-8"))


def split_sections(page: str, text: str) -> list[Section]:
    """Markdown -> sections under each heading (headings inside fenced code are not headings)."""
    sections: list[Section] = []
    stack: list[tuple[int, str]] = []
    buffer: list[str] = []
    start = 1
    fenced = False

    def flush() -> None:
        body = "\n".join(buffer).strip()
        if body or stack:
            sections.append(Section(page, tuple(h for _, h in stack), start, "\n".join(buffer)))

    for number, line in enumerate(text.splitlines(), start=1):
        if _FENCE.match(line):
            fenced = not fenced
        match = None if fenced else _HEADING.match(line)
        if match:
            flush()
            level = len(match.group(1))
            stack = [(lv, h) for lv, h in stack if lv < level] + [(level, match.group(2).strip("` "))]
            buffer = [line]
            start = number
        else:
            buffer.append(line)
    flush()
    return sections


def describe_recipe(text: str) -> str:
    """The first comment block of a recipe, or the objects it creates."""
    comments: list[str] = []
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith("#"):
            body = stripped.lstrip("#").strip()
            if not body.startswith("yaml-language-server"):
                comments.append(body)
        elif stripped or comments:
            break
    summary = " ".join(c for c in comments if c).strip()
    if summary:
        return summary[:300]
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError:
        return "Recipe (not valid YAML)"
    objects = [d["object"] for d in data or [] if isinstance(d, dict) and isinstance(d.get("object"), str)]
    return f"Creates {', '.join(objects)}" if objects else "Recipe"
