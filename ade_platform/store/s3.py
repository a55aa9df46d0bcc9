"""The store on S3 and S3-compatible object storage (MinIO, Ceph, R2, moto, ...), through boto3.

Object stores have no rename, so publication is ordered instead of atomic:
1. a version's data files are PUT under an immutable key (`<asset>/versions/<version>/<file>`);
2. its `provenance.json` (the list of files and their sha256) is PUT last, so a reader that finds it finds them;
3. the `LATEST` pointer is PUT with a conditional write (`If-Match` on the ETag read, `If-None-Match: *` when it
   does not exist yet), and never moves to an older version than the one it names: two writers racing cannot
   move it backwards, and a lost race is retried against the new ETag.
Readers poll the pointer with a HEAD (its ETag is the cache key), verify every checksum of what it names, and keep
serving the previous good version when the new one does not verify.

Endpoints that do not implement conditional writes answer 501: the writer then falls back to a plain PUT (last
writer wins) and says so once in the log.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, Literal

from ade_platform.store.layout import PROVENANCE_FILE
from ade_platform.store.model import StoreError
from ade_platform.store.paths import StoreRoot, writer_id

log = logging.getLogger("ade.store")
_PRECONDITION = {"PreconditionFailed", "ConditionalRequestConflict", "412", "409"}
_NOT_FOUND = {"NoSuchKey", "404", "NotFound"}
_WRITER_META = "ade-writer"  # user metadata on a version's objects: "<host>:<pid>" of the writer


@dataclass(frozen=True)
class S3Options:
    """How to reach an S3-compatible endpoint (the `store.s3` section); an unset key falls back to boto3's chain."""

    endpoint_url: str | None = None
    region: str | None = None
    access_key_id: str | None = field(default=None, repr=False)
    secret_access_key: str | None = field(default=None, repr=False)
    addressing_style: Literal["path", "virtual", "auto"] = "path"


class S3Root(StoreRoot):
    """`s3://bucket/prefix`, reached with its own options (endpoint, region, credentials) or boto3's chain."""

    supports_conditional_pointer = True

    def __init__(self, url: str, options: S3Options | None = None, pointer_ttl: float = 0.0):
        rest = url.split("://", 1)[1]
        self.bucket, _, prefix = rest.partition("/")
        self.prefix = prefix.strip("/")
        self.url = url
        self.options = options or S3Options()
        self.pointer_ttl = float(pointer_ttl)
        self._client: Any = None
        self._lock = threading.Lock()
        self._conditional = True

    @property
    def client(self) -> Any:
        # boto3 is imported on first use: a gateway on a local store never pays for it.
        with self._lock:
            if self._client is None:
                import boto3
                from botocore.config import Config

                o = self.options
                self._client = boto3.client(
                    "s3",
                    endpoint_url=o.endpoint_url or None,
                    region_name=o.region or None,
                    aws_access_key_id=o.access_key_id or None,
                    aws_secret_access_key=o.secret_access_key or None,
                    config=Config(
                        connect_timeout=5,
                        read_timeout=30,
                        retries={"max_attempts": 5, "mode": "standard"},
                        s3={"addressing_style": o.addressing_style or "path"},
                    ),
                )
            return self._client

    def describe(self) -> str:
        return self.url

    @contextlib.contextmanager
    def _errors(self) -> Iterator[None]:
        from botocore.exceptions import BotoCoreError, ClientError

        try:
            yield
        except (BotoCoreError, ClientError) as exc:
            raise self._failure(exc) from None

    def _failure(self, exc: Exception) -> StoreError:
        """A store error an agent may see: the URL and the error code, never credentials or a traceback."""
        code = self._code(exc) or type(exc).__name__
        return StoreError(f"object store {self.url}: {code}")

    def _key(self, rel: str) -> str:
        rel = rel.strip("/")
        return f"{self.prefix}/{rel}" if self.prefix and rel else (self.prefix or rel)

    @staticmethod
    def _code(exc: Exception) -> str:
        response = getattr(exc, "response", None) or {}
        err = response.get("Error") or {}
        return str(err.get("Code") or response.get("ResponseMetadata", {}).get("HTTPStatusCode") or "")

    def read_bytes(self, rel: str) -> bytes:
        return self.read_with_etag(rel)[0]

    def read_with_etag(self, rel: str) -> tuple[bytes, str]:
        with self._errors():
            return self._read_with_etag(rel)

    def _read_with_etag(self, rel: str) -> tuple[bytes, str]:
        from botocore.exceptions import ClientError

        try:
            obj = self.client.get_object(Bucket=self.bucket, Key=self._key(rel))
        except ClientError as exc:
            if self._code(exc) in _NOT_FOUND:
                raise FileNotFoundError(rel) from None
            raise
        return obj["Body"].read(), obj["ETag"]

    def write_bytes_atomic(self, rel: str, data: bytes) -> None:
        with self._errors():
            return self._write_bytes_atomic(rel, data)

    def _write_bytes_atomic(self, rel: str, data: bytes) -> None:
        # One PUT of one object is atomic on S3: readers see the old object or the new one. Every object names
        # its writer, so the next writer can tell the leftovers of a killed one (its pid gone on this host)
        # from a publication in flight.
        meta = {_WRITER_META: writer_id()}
        self.client.put_object(Bucket=self.bucket, Key=self._key(rel), Body=data, Metadata=meta)

    def write_dir_atomic(self, rel: str, files: dict[str, bytes]) -> None:
        # provenance.json last: it is the version's commit marker (readers list only versions that have it)
        ordered = sorted(files, key=lambda name: name == PROVENANCE_FILE)
        for name in ordered:
            self.write_bytes_atomic(f"{rel}/{name}", files[name])

    def version_entries(self, rel: str) -> dict[str, bool]:
        with self._errors():
            return self._version_entries(rel)

    def _version_entries(self, rel: str) -> dict[str, bool]:
        # One listing of every object under versions/ (a few per version, retention bounds them) instead of a
        # HEAD per version.
        prefix = self._key(rel).rstrip("/") + "/"
        found: dict[str, bool] = {}
        paginator = self.client.get_paginator("list_objects_v2")
        for page in paginator.paginate(Bucket=self.bucket, Prefix=prefix):
            for obj in page.get("Contents") or []:
                version, _, name = obj["Key"][len(prefix) :].partition("/")
                if version:
                    found[version] = found.get(version, False) or name == PROVENANCE_FILE
        return dict(sorted(found.items()))

    def writer_of(self, rel: str) -> str | None:
        with self._errors():
            prefix = self._key(rel).rstrip("/") + "/"
            listed = self.client.list_objects_v2(Bucket=self.bucket, Prefix=prefix, MaxKeys=1)
            contents = listed.get("Contents") or []
            if not contents:
                return None
            head = self.client.head_object(Bucket=self.bucket, Key=contents[0]["Key"])
            return (head.get("Metadata") or {}).get(_WRITER_META)

    def mtime(self, rel: str) -> float | None:
        with self._errors():
            prefix = self._key(rel).rstrip("/") + "/"
            listed = self.client.list_objects_v2(Bucket=self.bucket, Prefix=prefix, MaxKeys=1)
            contents = listed.get("Contents") or []
            return contents[0]["LastModified"].timestamp() if contents else None

    def put_if(self, rel: str, data: bytes, etag: str | None) -> bool:
        with self._errors():
            return self._put_if(rel, data, etag)

    def _put_if(self, rel: str, data: bytes, etag: str | None) -> bool:
        """PUT only if the object still has `etag` (or still does not exist); False when someone else won."""
        from botocore.exceptions import ClientError

        if not self._conditional:
            self.write_bytes_atomic(rel, data)
            return True
        kwargs: dict[str, Any] = {"IfMatch": etag} if etag else {"IfNoneMatch": "*"}
        try:
            self.client.put_object(Bucket=self.bucket, Key=self._key(rel), Body=data, **kwargs)
            return True
        except ClientError as exc:
            code = self._code(exc)
            if code in _PRECONDITION:
                return False
            if code in {"NotImplemented", "501"}:
                log.warning(
                    "store %s: the endpoint has no conditional writes; the pointer is last-writer-wins",
                    self.url,
                )
                self._conditional = False
                self.write_bytes_atomic(rel, data)
                return True
            raise

    def list_dir(self, rel: str) -> list[str]:
        with self._errors():
            return self._list_dir(rel)

    def _list_dir(self, rel: str) -> list[str]:
        prefix = self._key(rel)
        prefix = f"{prefix}/" if prefix else ""
        names: set[str] = set()
        paginator = self.client.get_paginator("list_objects_v2")
        for page in paginator.paginate(Bucket=self.bucket, Prefix=prefix, Delimiter="/"):
            for common in page.get("CommonPrefixes") or []:
                names.add(common["Prefix"][len(prefix) :].rstrip("/"))
            for obj in page.get("Contents") or []:
                names.add(obj["Key"][len(prefix) :])
        return sorted(n for n in names if n)

    def remove_tree(self, rel: str) -> None:
        with self._errors():
            return self._remove_tree(rel)

    def _remove_tree(self, rel: str) -> None:
        prefix = self._key(rel).rstrip("/") + "/"
        paginator = self.client.get_paginator("list_objects_v2")
        keys = [
            obj["Key"]
            for page in paginator.paginate(Bucket=self.bucket, Prefix=prefix)
            for obj in page.get("Contents") or []
        ]
        # provenance.json first, in its own request: a reader never finds a version whose files are half deleted
        first = [k for k in keys if k.endswith("/provenance.json")]
        rest = [k for k in keys if not k.endswith("/provenance.json")]
        for batch in (first, rest):
            for start in range(0, len(batch), 1000):
                objects = [{"Key": k} for k in batch[start : start + 1000]]
                self.client.delete_objects(Bucket=self.bucket, Delete={"Objects": objects})

    def signature(self, rel: str) -> Any:
        with self._errors():
            return self._signature(rel)

    def _signature(self, rel: str) -> Any:
        """The pointer's ETag (one HEAD): it changes whenever the object is replaced."""
        from botocore.exceptions import ClientError

        try:
            return self.client.head_object(Bucket=self.bucket, Key=self._key(rel))["ETag"]
        except ClientError as exc:
            if self._code(exc) in _NOT_FOUND:
                return None
            raise
