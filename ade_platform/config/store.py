"""`store:` where the asset store lives, how many versions it keeps, and how an s3:// root is reached."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import Field, SecretStr, field_validator

from ade_platform.config.base import _Model, empty_is_none
from ade_platform.store.location import StoreLocation
from ade_platform.store.s3 import S3Options


class S3StoreSettings(_Model):
    """Where an s3:// store lives: any S3-compatible endpoint; unset keys fall back to boto3's own chain."""

    endpoint_url: str | None = Field(None, description="e.g. https://minio.internal:9000; unset: AWS S3.")
    region: str | None = None
    access_key_id: SecretStr | None = Field(None, description="${ENV} reference, never a literal.")
    secret_access_key: SecretStr | None = Field(None, description="${ENV} reference, never a literal.")
    addressing_style: Literal["path", "virtual", "auto"] = "path"

    @field_validator("endpoint_url", "region", "access_key_id", "secret_access_key", mode="before")
    @classmethod
    def _empty_is_none(cls, value: Any) -> Any:
        return empty_is_none(value)

    def options(self) -> S3Options:
        return S3Options(
            endpoint_url=self.endpoint_url,
            region=self.region,
            access_key_id=self.access_key_id.get_secret_value() if self.access_key_id else None,
            secret_access_key=self.secret_access_key.get_secret_value() if self.secret_access_key else None,
            addressing_style=self.addressing_style,
        )


class StoreSettings(_Model):
    root: str | None = Field(None, description="Store root: a folder or an fsspec URL (s3://...).")
    retention: int = Field(20, ge=1, le=10_000, description="Versions kept per asset.")
    s3: S3StoreSettings | None = None
    pointer_ttl_seconds: float = Field(
        0,
        ge=0,
        le=60,
        description="Seconds a reader trusts its cached LATEST pointer before polling it again (object stores: "
        "one HEAD per poll). 0 polls on every read: an answer is never behind a published version.",
    )

    def location(self, home: Path) -> StoreLocation:
        """The store root with its options; default <home>/store."""
        return StoreLocation(
            url=self.root or str(home / "store"),
            s3=(self.s3 or S3StoreSettings()).options(),
            pointer_ttl_seconds=self.pointer_ttl_seconds,
        )
