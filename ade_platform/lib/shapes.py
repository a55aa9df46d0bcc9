"""The one pydantic setting the typed answer shapes share.

A TypedDict a tool returns is serialized by its declared fields only: a key the shape does not list would be
dropped from the answer without a word. Every shape is therefore open (`extra="allow"`): its schema says
`additionalProperties: true` and serializing keeps every key the code put in.
"""

from pydantic import ConfigDict

OPEN = ConfigDict(extra="allow")
