"""The file operations of a store root: a local folder, or any fsspec URL (gs://, memory://, ...) through UPath.

Which one a location opens is decided in ade_platform/store/location.py (s3:// has a root of its own, with
conditional pointer writes: ade_platform/store/s3.py).

Atomicity differs by backend. Locally we rely on POSIX rename (os.replace), which is atomic for both
files and directories on the same filesystem. On object storage a single PUT of a small object is atomic,
and a version folder is only reachable through the pointer, which is written last.
"""

from __future__ import annotations

import contextlib
import os
import socket
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ade_platform.store.layout import PROVENANCE_FILE

WRITER_FILE = ".writer"  # fsspec roots: who writes a version ("<host>:<pid>"), written first

if TYPE_CHECKING:
    from upath import UPath


class StoreRoot:
    """Minimal file operations the store needs, with atomic publication semantics."""

    # True when put_if/read_with_etag give compare-and-swap on the pointer (object stores with conditional writes)
    supports_conditional_pointer = False
    # Seconds a reader may trust its cached pointer before polling it again (0: poll on every read).
    pointer_ttl = 0.0

    def read_bytes(self, rel: str) -> bytes:
        raise NotImplementedError

    def write_bytes_atomic(self, rel: str, data: bytes) -> None:
        raise NotImplementedError

    def write_dir_atomic(self, rel: str, files: dict[str, bytes]) -> None:
        raise NotImplementedError

    def list_dir(self, rel: str) -> list[str]:
        raise NotImplementedError

    def remove_tree(self, rel: str) -> None:
        raise NotImplementedError

    def signature(self, rel: str) -> Any:
        """A cheap token that changes when the file at rel is replaced (None when absent)."""
        raise NotImplementedError

    def describe(self) -> str:
        raise NotImplementedError

    def version_entries(self, rel: str) -> dict[str, bool]:
        """Every entry of a versions folder -> whether it is committed (its provenance.json, written last,
        is there). Uncommitted entries are a publication in flight or what a killed writer left."""
        return {
            entry: not entry.startswith(".")
            and self.signature(f"{rel}/{entry}/{PROVENANCE_FILE}") is not None
            for entry in self.list_dir(rel)
        }

    def writer_of(self, rel: str) -> str | None:
        """ "<host>:<pid>" of the process that wrote an uncommitted version, when the backend recorded it."""
        return None

    def mtime(self, rel: str) -> float | None:
        """When an entry was last written (epoch seconds), when the backend can tell cheaply."""
        return None


class _PathRoot(StoreRoot):
    """A root whose files are reached through a path object: a local Path or a UPath."""

    def __init__(self, path: Path | UPath):
        self.path = path

    def describe(self) -> str:
        return str(self.path)

    def read_bytes(self, rel: str) -> bytes:
        return (self.path / rel).read_bytes()


class LocalRoot(_PathRoot):
    path: Path

    def write_bytes_atomic(self, rel: str, data: bytes) -> None:
        target = self.path / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(tmp, target)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise

    def write_dir_atomic(self, rel: str, files: dict[str, bytes]) -> None:
        target = self.path / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        # Build the whole version folder under a temporary name, then rename it into place: a writer
        # killed half-way leaves only a ".tmp" folder that readers never look at. The name says who writes
        # it (host and pid), so the next writer can tell a dead writer's folder from one still being written.
        prefix = f".{target.name}.{writer_id().replace(':', '.')}."
        tmp = Path(tempfile.mkdtemp(prefix=prefix, suffix=".tmp", dir=target.parent))
        try:
            for name, data in files.items():
                with open(tmp / name, "wb") as fh:
                    fh.write(data)
                    fh.flush()
                    os.fsync(fh.fileno())
            os.replace(tmp, target)
        except BaseException:
            self._rmtree(tmp)
            raise

    def list_dir(self, rel: str) -> list[str]:
        folder = self.path / rel
        try:
            return sorted(entry.name for entry in os.scandir(folder))
        except FileNotFoundError:
            return []

    def remove_tree(self, rel: str) -> None:
        self._rmtree(self.path / rel)

    def version_entries(self, rel: str) -> dict[str, bool]:
        folder = self.path / rel
        try:
            names = [entry.name for entry in os.scandir(folder)]
        except FileNotFoundError:
            return {}
        return {
            name: not name.startswith(".") and os.path.exists(folder / name / PROVENANCE_FILE)
            for name in sorted(names)
        }

    def writer_of(self, rel: str) -> str | None:
        # ".<version>.<host>.<pid>.<random>.tmp" (host: its first label); older temp names carry no writer.
        parts = rel.rsplit("/", 1)[-1].split(".")
        if len(parts) >= 6 and parts[-1] == "tmp" and parts[-3].isdigit():
            return f"{parts[-4]}:{parts[-3]}"
        try:  # a version folder an fsspec writer (file://) wrote in place names its writer inside
            return (self.path / rel / WRITER_FILE).read_text() or None
        except (OSError, UnicodeDecodeError):
            return None

    def mtime(self, rel: str) -> float | None:
        try:
            return os.stat(self.path / rel).st_mtime
        except FileNotFoundError:
            return None

    @staticmethod
    def _rmtree(path: Path) -> None:
        import shutil

        shutil.rmtree(path, ignore_errors=True)

    def signature(self, rel: str) -> Any:
        try:
            st = os.stat(self.path / rel)
        except FileNotFoundError:
            return None
        return (st.st_ino, st.st_mtime_ns, st.st_size)


def remove_file(root: StoreRoot, rel: str) -> None:
    """Remove one file (gone already is fine): unlink locally, delete the object elsewhere."""
    if isinstance(root, LocalRoot):
        with contextlib.suppress(FileNotFoundError):
            os.unlink(root.path / rel)
    else:
        root.remove_tree(rel)


def writer_id() -> str:
    """This process as the writer of a version: "<host>:<pid>" (the host's first label, no dots)."""
    host = socket.gethostname().split(".", 1)[0] or "localhost"
    return f"{host}:{os.getpid()}"


class RemoteRoot(_PathRoot):
    path: UPath

    def write_bytes_atomic(self, rel: str, data: bytes) -> None:
        # One PUT of one object: atomic on S3/GCS/Azure.
        (self.path / rel).write_bytes(data)

    def write_dir_atomic(self, rel: str, files: dict[str, bytes]) -> None:
        # Object stores have no directories to rename: the writer is named first (so the next writer can tell a
        # dead one's leftovers from a publication in flight), provenance.json, the commit marker, last.
        with contextlib.suppress(OSError, NotImplementedError):  # a local fsspec root needs its folders
            (self.path / rel).mkdir(parents=True, exist_ok=True)
        (self.path / rel / WRITER_FILE).write_bytes(writer_id().encode())
        for name in sorted(files, key=lambda name: name == PROVENANCE_FILE):
            (self.path / rel / name).write_bytes(files[name])

    def version_entries(self, rel: str) -> dict[str, bool]:
        return {
            entry: not entry.startswith(".") and (self.path / rel / entry / PROVENANCE_FILE).exists()
            for entry in self.list_dir(rel)
        }

    def writer_of(self, rel: str) -> str | None:
        try:
            return (self.path / rel / WRITER_FILE).read_bytes().decode() or None
        except (FileNotFoundError, UnicodeDecodeError):
            return None

    def list_dir(self, rel: str) -> list[str]:
        folder = self.path / rel
        try:
            return sorted(p.name for p in folder.iterdir())
        except FileNotFoundError:
            return []

    def remove_tree(self, rel: str) -> None:
        target = self.path / rel
        with contextlib.suppress(FileNotFoundError):
            target.fs.rm(target.path, recursive=True)

    def signature(self, rel: str) -> Any:
        # No cheap inode on object storage: the pointer's content is the signature.
        try:
            return (self.path / rel).read_bytes()
        except FileNotFoundError:
            return None
