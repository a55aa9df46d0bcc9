"""Check an event against the OpenLineage standard as the official client models it.

The client (openlineage-python) ships no JSON schema files, and nothing is fetched or vendored here: an event is
rebuilt from its JSON into the client's own attrs classes (generated from the spec's schemas, 2-0-2): the event,
run, job and dataset classes, and for each standard facet the class its key names (`columnLineage` ->
ColumnLineageDatasetFacet, `errorMessage` -> ErrorMessageRunFacet, ...). Every key must be a field of its class
and every value of the field's type; the client's validators run (eventTime, runId); the rebuilt event, written
back with the client's serializer, must equal the JSON (so `schemaURL` and each facet's `_schemaURL` are the ones
the client gives that class). A facet the client does not model must be a custom facet: a prefixed name
(`<prefix>_<name>`) with `_producer` and `_schemaURL`; ADE's own (`ade_rootCause`) is checked against its
published schema (docs/openlineage/) with jsonschema.
"""

from __future__ import annotations

import enum
import functools
import importlib
import json
import pkgutil
import re
import types
import typing
from pathlib import Path
from typing import Any

import attr

ROOT = Path(__file__).resolve().parents[3]
_CUSTOM = re.compile(r"^[A-Za-z][A-Za-z0-9]*_[A-Za-z][A-Za-z0-9]*$")
_SUFFIXES = (
    ("_input_dataset", "inputFacets"),
    ("_output_dataset", "outputFacets"),
    ("_dataset", "dataset"),
    ("_job", "job"),
    ("_run", "run"),
)
# facet keys the spec does not spell as its schema file's camel-cased stem
_IRREGULAR = {
    ("dataset", "datasource"): "dataSource",
    ("dataset", "base_subset"): "subset",
    ("dataset", "dataset_version"): "version",
    ("run", "processing_engine"): "processing_engine",
}


class NotConformant(ValueError):
    """What in an event the client's models refuse: the path and the reason."""


def _camel(snake: str) -> str:
    head, *rest = snake.split("_")
    return head + "".join(p.title() for p in rest)


@functools.cache
def facet_classes() -> dict[tuple[str, str], type]:
    """(where, facet key) -> the client's class for it; where is dataset, job, run, inputFacets, outputFacets."""
    from openlineage.client import generated
    from openlineage.client.generated import base

    bases = (base.DatasetFacet, base.JobFacet, base.RunFacet, base.InputDatasetFacet, base.OutputDatasetFacet)
    out: dict[tuple[str, str], type] = {}
    for info in pkgutil.iter_modules(generated.__path__):
        suffix = next(((s, w) for s, w in _SUFFIXES if info.name.endswith(s)), None)
        if suffix is None:
            continue
        module = importlib.import_module(f"{generated.__name__}.{info.name}")
        stem = info.name.removesuffix(suffix[0])
        for value in vars(module).values():
            if (
                isinstance(value, type)
                and issubclass(value, bases)
                and value not in bases
                and value.__module__ == module.__name__
            ):
                out[(suffix[1], _IRREGULAR.get((suffix[1], stem), _camel(stem)))] = value
    return out


def _field_type(cls: type, f: Any) -> Any:
    """A field's type: its annotation (a string, the modules use postponed annotations) evaluated where the
    class that declares it was defined."""
    if not isinstance(f.type, str):
        return f.type
    owner = next((k for k in cls.__mro__ if f.name in getattr(k, "__annotations__", {})), cls)
    return eval(f.type, vars(importlib.import_module(owner.__module__)))


def _structure(tp: Any, value: Any, where: str) -> Any:
    origin = typing.get_origin(tp)
    if tp is Any:
        return value
    if origin in (typing.Union, types.UnionType):
        options = [a for a in typing.get_args(tp) if a is not type(None)]
        if value is None and len(options) < len(typing.get_args(tp)):
            return None
        errors = []
        for option in options:
            try:
                return _structure(option, value, where)
            except NotConformant as exc:
                errors.append(str(exc))
        raise NotConformant("; ".join(errors))
    if origin is list:
        if not isinstance(value, list):
            raise NotConformant(f"{where}: expected a list")
        (item,) = typing.get_args(tp)
        return [_structure(item, v, f"{where}[{i}]") for i, v in enumerate(value)]
    if origin is dict:
        if not isinstance(value, dict):
            raise NotConformant(f"{where}: expected an object")
        _, item = typing.get_args(tp)
        return {k: _structure(item, v, f"{where}.{k}") for k, v in value.items()}
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        try:
            return tp(value)
        except ValueError:
            raise NotConformant(f"{where}: {value!r} is not one of {[m.value for m in tp]}") from None
    if isinstance(tp, type) and attr.has(tp):
        return _attrs(tp, value, where)
    if tp is float and isinstance(value, int | float) and not isinstance(value, bool):
        return value
    if isinstance(tp, type) and (not isinstance(value, tp) or (tp is int and isinstance(value, bool))):
        raise NotConformant(f"{where}: expected {tp.__name__}")
    return value


def _facets(where_kind: str, value: Any, where: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise NotConformant(f"{where}: expected an object of facets")
    out = {}
    for key, facet in value.items():
        cls = facet_classes().get((where_kind, key))
        out[key] = (
            _attrs(cls, facet, f"{where}.{key}") if cls is not None else _custom(key, facet, f"{where}.{key}")
        )
    return out


def _custom(key: str, facet: Any, where: str) -> Any:
    if not _CUSTOM.match(key):
        raise NotConformant(f"{where}: not a facet the client models, nor a prefixed custom facet name")
    if not isinstance(facet, dict) or not all(
        isinstance(facet.get(k), str) for k in ("_producer", "_schemaURL")
    ):
        raise NotConformant(f"{where}: a custom facet needs _producer and _schemaURL")
    if key == "ade_rootCause":
        import jsonschema

        schema = json.loads((ROOT / "docs/openlineage/ADERootCauseRunFacet.json").read_text())
        definition = {**schema["$defs"]["ADERootCauseRunFacet"]["allOf"][1], "$defs": schema["$defs"]}
        try:
            jsonschema.validate(facet, definition)
        except jsonschema.ValidationError as exc:
            raise NotConformant(f"{where}: {exc.message}") from None
    return facet


_SIDE_FACETS = ("inputFacets", "outputFacets")
_OWNER = {"Run": "run", "Job": "job"}


def _attrs(cls: type, value: Any, where: str) -> Any:
    if not isinstance(value, dict):
        raise NotConformant(f"{where}: expected an object")
    fields = {f.name: f for f in attr.fields(cls)}
    unknown = set(value) - set(fields)
    if unknown:
        raise NotConformant(f"{where}: {sorted(unknown)} are not fields of {cls.__name__}")
    kwargs: dict[str, Any] = {}
    for name, f in fields.items():
        if name not in value:
            if f.default is attr.NOTHING and f.init:
                raise NotConformant(f"{where}.{name}: required by {cls.__name__}")
            continue
        if not f.init:
            continue
        owner = _facet_owner(cls) if name == "facets" else name if name in _SIDE_FACETS else None
        if owner is not None and value[name] is not None:
            kwargs[f.alias] = _facets(owner, value[name], f"{where}.{name}")
        else:
            kwargs[f.alias] = _structure(_field_type(cls, f), value[name], f"{where}.{name}")
    try:
        return cls(**kwargs)
    except (ValueError, TypeError) as exc:
        raise NotConformant(f"{where}: {cls.__name__} refuses it ({exc})") from None


def _facet_owner(cls: type) -> str | None:
    from openlineage.client.generated.base import Dataset

    if cls.__name__ in _OWNER:
        return _OWNER[cls.__name__]
    return "dataset" if isinstance(cls, type) and issubclass(cls, Dataset) else None


def conform(event: dict[str, Any]) -> Any:
    """The client's object for a JSON event, or NotConformant naming where it departs from the standard."""
    from openlineage.client.event_v2 import DatasetEvent, JobEvent, RunEvent
    from openlineage.client.serde import Serde

    cls = RunEvent if "run" in event else DatasetEvent if "dataset" in event else JobEvent
    rebuilt = _attrs(cls, event, cls.__name__)
    back = Serde.to_dict(rebuilt)
    if back != Serde.remove_nulls_and_enums(event):
        raise NotConformant(
            f"{cls.__name__}: written back by the client it differs ({_first_difference(back, event)})"
        )
    return rebuilt


def _first_difference(a: Any, b: Any, where: str = "") -> str:
    if isinstance(a, dict) and isinstance(b, dict):
        for key in sorted(set(a) | set(b)):
            if a.get(key) != b.get(key):
                return _first_difference(a.get(key), b.get(key), f"{where}.{key}")
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            if x != y:
                return _first_difference(x, y, f"{where}[{i}]")
    return f"at {where or 'the top'}"
