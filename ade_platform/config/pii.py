"""`pii:` what marks a column as personal data: name patterns, names never flagged, tags."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator

from ade_platform.config.base import _Model, check_regex


class PiiPatternSettings(_Model):
    name: str = Field(description="Reported as pii_pattern_matched, e.g. 'national_id'.")
    regex: str = Field(description="Matched (case-insensitive) against the snake_case column name.")
    risk_level: Literal["high", "medium", "low"] = "medium"

    @field_validator("regex")
    @classmethod
    def _compiles(cls, value: str) -> str:
        return check_regex(value)


class PiiSettings(_Model):
    patterns: list[PiiPatternSettings] = Field(
        default_factory=list, description="Column-name patterns checked before the built-in ones."
    )
    ignore: list[str] = Field(
        default_factory=list,
        description="Column-name regexes never flagged, checked first (e.g. '^contract_address$' on a chain).",
    )

    @field_validator("ignore")
    @classmethod
    def _ignore_compiles(cls, value: list[str]) -> list[str]:
        for regex in value:
            check_regex(regex, name_it=True)
        return value

    tags: list[str] = Field(
        default_factory=lambda: ["pii", "sensitive"],
        description="Tag or meta terms that mark a column as PII.",
    )
