"""Where a store lives, as a value: a folder or URL plus the options to reach it, opened into a StoreRoot.

The settings build one (`settings.store_root`) and hand it to every StoreReader and StoreWriter, so two stores on
the same URL with different endpoints or credentials never share options, and nothing is registered globally.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from ade_platform.store.paths import LocalRoot, RemoteRoot, StoreRoot
from ade_platform.store.s3 import S3Options, S3Root

_LOCAL_PROTOCOLS = {"", "file", "local"}
_S3_PROTOCOLS = {"s3", "s3a"}


@dataclass(frozen=True)
class StoreLocation:
    """A store root: a local folder or an fsspec URL (s3://bucket/prefix, gs://, memory://), with its options."""

    url: str
    s3: S3Options = field(default_factory=S3Options)
    # Seconds a reader trusts its cached LATEST pointer before polling it again (object stores: one HEAD per
    # poll); 0 polls on every read.
    pointer_ttl_seconds: float = 0.0

    @property
    def protocol(self) -> str:
        return self.url.split("://", 1)[0] if "://" in self.url else ""

    @property
    def is_local(self) -> bool:
        return self.protocol in _LOCAL_PROTOCOLS

    def __str__(self) -> str:
        return self.url

    def __fspath__(self) -> str:
        """A local store is path-like (`Path(settings.store_root)`); a remote one is not a path."""
        if not self.is_local:
            raise TypeError(f"the store {self.url} is not a local folder")
        return str(self._local_path())

    def _local_path(self) -> Path:
        return Path(self.url.removeprefix("file://")).expanduser().resolve()

    def open(self) -> StoreRoot:
        """The file operations of this root (no connection is made until the first read or write)."""
        if self.protocol in _S3_PROTOCOLS:
            # Only S3 roots honour the pointer TTL (it saves a HEAD per read); a local stat is cheap to repeat.
            return S3Root(self.url, self.s3, self.pointer_ttl_seconds)
        if not self.is_local:
            from upath import UPath  # fsspec and its filesystems: loaded only for a remote root

            return RemoteRoot(UPath(self.url))
        return LocalRoot(self._local_path())


def open_root(root: str | os.PathLike[str] | StoreLocation) -> StoreRoot:
    """The StoreRoot of a location, or of a bare folder/URL (an s3:// URL then uses boto3's own chain)."""
    location = root if isinstance(root, StoreLocation) else StoreLocation(os.fspath(root))
    return location.open()
