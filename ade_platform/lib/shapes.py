"""The one pydantic setting the typed answer shapes share, and the base class that carries it.

A TypedDict a tool returns is serialized by its declared fields only: a key the shape does not list would be
dropped from the answer without a word. Every shape is therefore open (`extra="allow"`): its schema says
`additionalProperties: true` and serializing keeps every key the code put in. A shape says so by deriving from
`OpenShape` (pydantic reads `__pydantic_config__` through a TypedDict's bases); a functional TypedDict (one
with a key that is a Python keyword, such as `from`) takes `with_config(OPEN)`.
"""

from pydantic import ConfigDict
from typing_extensions import TypedDict

OPEN = ConfigDict(extra="allow")


class OpenShape(TypedDict):
    """The base of every answer shape: a TypedDict open to keys it does not list."""

    __pydantic_config__ = OPEN  # type: ignore[misc]
