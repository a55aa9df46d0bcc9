"""Read one OpenLineage event (spec 2-0-2): a RunEvent, a DatasetEvent or a JobEvent, checked for the fields the
spec requires and bounded, before anything keeps it.

Producers differ in what they add (custom facets, extra keys), so only the spec's required structure is checked:
`eventTime` (an ISO date-time with a time), `producer` and `schemaURL` (strings); a RunEvent's `run.runId` (a
UUID) and `job.namespace`/`job.name`; a DatasetEvent's `dataset`; datasets with `namespace` and `name`; facets
objects. Anything else a producer sends is kept as sent. A refusal says which field, never the field's value.
"""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

import orjson

from ade_platform.lib.errors import CodedError

EVENT_TYPES = ("START", "RUNNING", "COMPLETE", "ABORT", "FAIL", "OTHER")
MAX_DATASETS = 1_000  # inputs + outputs of one event
MAX_NAME = 1_024  # characters of a namespace, a name or a run id


class OpenLineageError(CodedError):
    """An event refused: `openlineage_invalid_event` (malformed, naming the field) or `openlineage_too_large`."""


def _invalid(where: str) -> OpenLineageError:
    return OpenLineageError("openlineage_invalid_event", f"{where} is missing or malformed")


def _name(value: Any, where: str) -> str:
    if not isinstance(value, str) or not value or len(value) > MAX_NAME:
        raise _invalid(where)
    return value


def _facets(value: Any, where: str) -> None:
    if value is None:
        return
    if not isinstance(value, dict) or not all(isinstance(f, dict) for f in value.values()):
        raise _invalid(where)


def _dataset(value: Any, where: str, extra: str | None) -> None:
    if not isinstance(value, dict):
        raise _invalid(where)
    _name(value.get("namespace"), f"{where}.namespace")
    _name(value.get("name"), f"{where}.name")
    _facets(value.get("facets"), f"{where}.facets")
    if extra:
        _facets(value.get(extra), f"{where}.{extra}")


def kind_of(event: dict[str, Any]) -> str:
    """run | dataset | job (what the spec's event types are told apart by)."""
    if "run" in event:
        return "run"
    if "dataset" in event:
        return "dataset"
    if "job" in event:
        return "job"
    raise _invalid("run, job or dataset")


def check_event(event: Any) -> dict[str, Any]:
    """The event, when it has the spec's required structure; else OpenLineageError naming the field."""
    if not isinstance(event, dict):
        raise _invalid("the event object")
    when = event.get("eventTime")
    if not isinstance(when, str) or "t" not in when.lower():
        raise _invalid("eventTime")
    try:
        datetime.fromisoformat(when.replace("Z", "+00:00"))
    except ValueError:
        raise _invalid("eventTime") from None
    for key in ("producer", "schemaURL"):
        _name(event.get(key), key)
    kind = kind_of(event)
    if kind == "dataset":
        _dataset(event.get("dataset"), "dataset", None)
        return event
    job = event.get("job")
    if not isinstance(job, dict):
        raise _invalid("job")
    _name(job.get("namespace"), "job.namespace")
    _name(job.get("name"), "job.name")
    _facets(job.get("facets"), "job.facets")
    if kind == "run":
        run = event.get("run")
        if not isinstance(run, dict):
            raise _invalid("run")
        try:
            uuid.UUID(_name(run.get("runId"), "run.runId"))
        except ValueError:
            raise _invalid("run.runId") from None
        _facets(run.get("facets"), "run.facets")
        if event.get("eventType") is not None and event["eventType"] not in EVENT_TYPES:
            raise _invalid("eventType")
    datasets = 0
    for side, extra in (("inputs", "inputFacets"), ("outputs", "outputFacets")):
        items = event.get(side)
        if items is None:
            continue
        if not isinstance(items, list):
            raise _invalid(side)
        datasets += len(items)
        if datasets > MAX_DATASETS:
            raise OpenLineageError("openlineage_too_large", f"more than {MAX_DATASETS} datasets in one event")
        for i, item in enumerate(items):
            _dataset(item, f"{side}[{i}]", extra)
    return event


def parse_event(body: bytes, max_bytes: int) -> dict[str, Any]:
    """One event from a request body or a line of a file: size-bounded JSON, then `check_event`."""
    if len(body) > max_bytes:
        raise OpenLineageError("openlineage_too_large", f"the event is over {max_bytes} bytes")
    try:
        event = orjson.loads(body)
    except (orjson.JSONDecodeError, RecursionError):
        raise _invalid("the JSON body") from None
    return check_event(event)
