"""Log text made safe and bounded for an agent: capped at a length keeping the tail, then secrets scrubbed.

The cap comes first, so the scrubber's work is bounded by the cap, not by the log (a 50 MB log costs what its
last 50,000 characters cost). The piece scrubbed reaches SCRUB_MARGIN characters further back than the cut:
a secret that straddles the cut is scrubbed whole before the cut drops its head (a secret longer than the
margin is not guaranteed), and the piece itself starts at a line start. Scrubbing is `ade_platform.lib.secrets` (RE2: linear time).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from ade_platform.lib.secrets import REDACTED, SecretScrubber, scrubber_for

__all__ = ["MAX_LOG_CHARS", "REDACTED", "SCRUB_MARGIN", "CappedLog", "cap_log", "scrub_secrets"]
MAX_LOG_CHARS = 50_000
SCRUB_MARGIN = 8_192
_LINE_START_WITHIN = 2_000  # the cut moves forward to the next line start when one is this close


@dataclass(frozen=True)
class CappedLog:
    text: str
    length_chars: int
    truncated: bool


def scrub_secrets(text: str, secrets: Iterable[str] | SecretScrubber = ()) -> str:
    """Replace configured secret values (and their encoded forms) and common credential shapes with ***."""
    return scrubber_for(secrets).scrub(text)


def cap_log(
    text: str, secrets: Iterable[str] | SecretScrubber = (), max_chars: int = MAX_LOG_CHARS
) -> CappedLog:
    """The last max_chars characters (errors are at the end), cut at a line start, scrubbed of secrets.
    `length_chars` is the length of the whole log: of the text returned when it is all there, of the log as
    read when it was cut (the part never scrubbed is never measured scrubbed)."""
    scrubber = scrubber_for(secrets)
    if len(text) <= max_chars:
        clean = scrubber.scrub(text)
        if len(clean) <= max_chars:
            return CappedLog(clean, len(clean), False)
        return CappedLog(_tail(clean, max_chars), len(text), True)
    piece = text[-(max_chars + SCRUB_MARGIN) :]
    # The piece's own first characters may be the end of a secret cut in two: start it at a line start, or
    # (one long line) drop half a margin of its scrubbed text, so that fragment never reaches the answer.
    newline = piece.find("\n", 0, SCRUB_MARGIN)
    clean = scrubber.scrub(piece[newline + 1 :])  # (newline -1: the whole piece)
    if newline < 0:
        clean = clean[SCRUB_MARGIN // 2 :]
    return CappedLog(_tail(clean, max_chars), len(text), True)


def _tail(text: str, max_chars: int) -> str:
    tail = text[-max_chars:]
    newline = tail.find("\n")
    if 0 <= newline < _LINE_START_WITHIN:
        tail = tail[newline + 1 :]
    return tail
