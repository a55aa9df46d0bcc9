"""The workspace (user recipes and outputs) and the server-managed run folders.

Every path an agent gives is relative to the workspace root and must stay inside it once symlinks are
resolved. Runs live in their own folders under `runs_dir`; a run folder is created by the server, filled
by the sandboxed child, and pruned when more than `keep` runs exist.
"""

from __future__ import annotations

import json
import os
import queue
import re
import secrets
import shutil
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ade_platform.lib.snowfakery.errors import SnowfakeryError, path_not_allowed

RUN_ID = re.compile(r"^[0-9]{8}T[0-9]{6}-[0-9a-f]{6}$")
MANIFEST = "run.json"
SCRATCH = "_scratch"
_DISCARDED: queue.Queue[Path] = queue.Queue()
_DELETER: list[threading.Thread] = []
_DELETER_LOCK = threading.Lock()


def _delete_forever() -> None:
    while True:
        shutil.rmtree(_DISCARDED.get(), ignore_errors=True)


def is_within(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


@dataclass(frozen=True)
class Workspace:
    root: Path
    runs_dir: Path

    @classmethod
    def create(cls, root: Path, runs_dir: Path) -> Workspace:
        root.mkdir(parents=True, exist_ok=True)
        runs_dir.mkdir(parents=True, exist_ok=True)
        return cls(root.resolve(), runs_dir.resolve())

    # -- paths given by agents -------------------------------------------------------------------
    def resolve(self, value: str, *, must_exist: bool = False) -> Path:
        """A workspace path from an agent's string: relative (or absolute inside the root), no escape."""
        if not value or "\x00" in value or value.startswith("~"):
            raise path_not_allowed(value)
        raw = Path(value)
        candidate = raw if raw.is_absolute() else self.root / raw
        resolved = Path(os.path.realpath(candidate))
        if not is_within(resolved, self.root):
            raise path_not_allowed(value)
        if must_exist and not resolved.exists():
            raise SnowfakeryError("recipe_not_found", f"{value!r} does not exist in the workspace")
        return resolved

    def display(self, path: Path) -> str:
        path = Path(os.path.realpath(path))
        if is_within(path, self.root):
            return path.relative_to(self.root).as_posix() or "."
        return path.name

    # -- run folders -------------------------------------------------------------------------------
    def new_run(self) -> tuple[str, Path]:
        run_id = time.strftime("%Y%m%dT%H%M%S", time.gmtime()) + "-" + secrets.token_hex(3)
        folder = self.runs_dir / run_id
        folder.mkdir(parents=True)
        return run_id, folder

    def scratch(self) -> Path:
        """A fresh folder for a job whose files are not kept (a validation); give it back with `discard`."""
        return Path(tempfile.mkdtemp(prefix="v-", dir=self._scratch_root()))

    def discard(self, folder: Path) -> None:
        """Delete a folder after the answer (a scratch folder, or a pruned run): on a busy disk an rmtree takes
        ~6 ms, a sixth of a validation. A background thread deletes it (and, on its first use, the scratch
        folders a stopped server left)."""
        _DISCARDED.put(folder)
        with _DELETER_LOCK:
            if not _DELETER:
                for leftover in self._scratch_root().iterdir():
                    if leftover != folder:
                        _DISCARDED.put(leftover)
                _DELETER.append(
                    threading.Thread(target=_delete_forever, name="snowfakery-scratch", daemon=True)
                )
                _DELETER[0].start()

    def _scratch_root(self) -> Path:
        # beside the run folders, under a name that is no run id: never listed, served or pruned as a run
        root = self.runs_dir / SCRATCH
        root.mkdir(mode=0o700, exist_ok=True)
        return root

    def run_dir(self, run_id: str) -> Path:
        if not RUN_ID.match(run_id or ""):
            raise SnowfakeryError("run_not_found", f"{run_id!r} is not a run id")
        folder = self.runs_dir / run_id
        if not (folder / MANIFEST).is_file():
            raise SnowfakeryError("run_not_found", f"no run {run_id!r} (runs are pruned after a while)")
        return folder

    def run_file(self, run_id: str, relative: str) -> Path:
        folder = self.run_dir(run_id)
        target = Path(os.path.realpath(folder / relative))
        if not is_within(target, folder) or target.name.startswith("_") or target.name == MANIFEST:
            raise SnowfakeryError("run_not_found", f"run {run_id} has no {relative!r}")
        if not target.exists():
            raise SnowfakeryError("run_not_found", f"run {run_id} has no {relative!r}")
        return target

    def manifest(self, run_id: str) -> dict[str, Any]:
        return json.loads((self.run_dir(run_id) / MANIFEST).read_text())

    def prune(self, keep: int, abandoned_after: float = 86_400, *, later: bool = False) -> list[str]:
        """Delete the oldest finished runs beyond `keep`, and unfinished folders older than a day
        (left by a server that stopped mid-run); returns the deleted run ids. `later`: delete them after the
        answer (`discard`), as a run does once more than `keep` runs exist."""
        runs = sorted(p for p in self.runs_dir.iterdir() if p.is_dir() and RUN_ID.match(p.name))
        # oldest first: by the second in the run id, then by when the run finished (its manifest's mtime). Within
        # a second the id's random suffix says nothing, and the run just made could be the one deleted.
        stamped = [(p.name[:15], at, p.name, p) for p in runs if (at := _finished_at(p)) is not None]
        finished = [p for *_, p in sorted(stamped)]
        doomed = finished[: max(len(finished) - keep, 0)]
        cutoff = time.time() - abandoned_after
        doomed += [p for p in runs if p not in finished and p.stat().st_mtime < cutoff]
        for folder in doomed:
            if later:
                self.discard(folder)
            else:
                shutil.rmtree(folder, ignore_errors=True)
        return [p.name for p in doomed]


def _finished_at(folder: Path) -> int | None:
    """When a run wrote its manifest (ns), or None for a run not finished (or deleted meanwhile)."""
    try:
        return (folder / MANIFEST).stat().st_mtime_ns
    except OSError:
        return None
