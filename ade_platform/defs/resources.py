"""Dagster resources shared by the domains. Secrets arrive through EnvVar where ade.yaml read them from the
environment, so the Dagster UI shows a variable's name, never its value."""

from __future__ import annotations

import os

from dagster import ConfigurableResource, EnvVar
from pydantic import SecretStr

from ade_platform.config import Settings
from ade_platform.store import S3Options, StoreLocation, StoreReader, StoreWriter


def env_var_for(settings: Settings, key: str, secret: SecretStr | None) -> EnvVar | None:
    """EnvVar(NAME) when the setting at `key` was read from ${NAME} and this process's NAME still holds it
    (Dagster resolves the variable where the resource runs); None for a literal, or settings built in code."""
    name = settings.env_reference(key)
    if secret is None or name is None or os.environ.get(name) != secret.get_secret_value():
        return None
    return EnvVar(name)


class StoreResource(ConfigurableResource):
    """The asset store that the MCP bridge reads: its root and, for s3://, the options to reach it."""

    root: str
    retention: int = 20
    pointer_ttl_seconds: float = 0
    s3_endpoint_url: str | None = None
    s3_region: str | None = None
    s3_access_key_id: str | None = None
    s3_secret_access_key: str | None = None
    s3_addressing_style: str = "path"

    @classmethod
    def from_settings(cls, settings: Settings) -> StoreResource:
        location, s3 = settings.store_root, settings.store.s3
        key_id = env_var_for(settings, "store.s3.access_key_id", s3.access_key_id) if s3 else None
        secret = env_var_for(settings, "store.s3.secret_access_key", s3.secret_access_key) if s3 else None
        # A secret written literally (in ade.yaml, or in settings built in code) is carried as it is: every run
        # needs it, and the resource has nothing else to read it from.
        return cls(
            root=location.url,
            retention=settings.store.retention,
            pointer_ttl_seconds=location.pointer_ttl_seconds,
            s3_endpoint_url=location.s3.endpoint_url,
            s3_region=location.s3.region,
            s3_access_key_id=key_id or location.s3.access_key_id,
            s3_secret_access_key=secret or location.s3.secret_access_key,
            s3_addressing_style=location.s3.addressing_style,
        )

    def location(self) -> StoreLocation:
        options = S3Options(
            endpoint_url=self.s3_endpoint_url,
            region=self.s3_region,
            access_key_id=self.s3_access_key_id,
            secret_access_key=self.s3_secret_access_key,
            addressing_style=self.s3_addressing_style,  # type: ignore[arg-type]
        )
        return StoreLocation(self.root, options, self.pointer_ttl_seconds)

    def writer(self) -> StoreWriter:
        return StoreWriter(self.location(), retention=self.retention)

    def reader(self) -> StoreReader:
        return StoreReader(self.location())
