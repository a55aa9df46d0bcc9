"""`ade store fsck`: what is wrong in a store (local folder or object storage), and with --repair what a killed
writer left removed. Also the one question `ade status` asks of every asset: does its latest snapshot read back
intact? No Dagster import.
"""

from __future__ import annotations

import contextlib
import os
import time
from dataclasses import asdict, dataclass

from ade_platform.store.heal import GRACE_SECONDS, leftovers
from ade_platform.store.layout import POINTER_FILE, VERSIONS_DIR
from ade_platform.store.location import StoreLocation, open_root
from ade_platform.store.model import CorruptSnapshot, SnapshotNotFound, StoreError
from ade_platform.store.paths import LocalRoot, StoreRoot
from ade_platform.store.reader import StoreReader

OBSERVATIONS_DIR = ".observations"  # ade_platform/store/observations.py (importing it would load its locks)


@dataclass(frozen=True)
class Finding:
    asset: str
    problem: str  # leftover | in_flight | corrupt_latest | no_pointer | temp_file
    entry: str | None
    detail: str
    repaired: bool = False

    def to_dict(self) -> dict[str, object]:
        return asdict(self)


def latest_problem(reader: StoreReader, asset: str) -> str | None:
    """Why the latest snapshot of an asset does not read back intact (unreadable pointer, missing file,
    unparseable data, checksum mismatch); None when it does or when the asset has none."""
    try:
        raw = reader.root.read_bytes(f"{asset}/{POINTER_FILE}")
    except FileNotFoundError:
        return None
    except StoreError as exc:
        return exc.detail
    try:
        import orjson

        version = orjson.loads(raw)["version"]
        snapshot = reader.get(asset, version)
        _ = snapshot.data if "data.json" in snapshot.provenance.files else None
    except (ValueError, KeyError, TypeError):
        return "the LATEST pointer is not valid"
    except SnapshotNotFound:
        return f"the LATEST pointer names version {version}, which does not exist"
    except CorruptSnapshot as exc:
        return f"version {exc.version}: {exc.reason}"
    return None


def fsck(
    root: str | os.PathLike[str] | StoreLocation | StoreRoot,
    *,
    repair: bool = False,
    grace: float = GRACE_SECONDS,
) -> list[Finding]:
    """Every problem of the store's assets; with `repair`, the abandoned leftovers are removed (a corrupt
    snapshot is reported, not changed: re-materialize the asset; readers meanwhile serve the version before)."""
    store = root if isinstance(root, StoreRoot) else open_root(root)
    reader = StoreReader(store)
    findings: list[Finding] = []
    for asset in reader.assets():
        for lo in leftovers(store, asset, grace=grace):
            repaired = False
            if lo.abandoned and repair:
                store.remove_tree(f"{asset}/{VERSIONS_DIR}/{lo.entry}")
                repaired = True
            problem = "leftover" if lo.abandoned else "in_flight"
            findings.append(Finding(asset, problem, f"{VERSIONS_DIR}/{lo.entry}", lo.why, repaired))
        if store.signature(f"{asset}/{POINTER_FILE}") is None:
            if reader.committed(asset):
                detail = "committed versions but no LATEST pointer (a first publish that never finished)"
                findings.append(Finding(asset, "no_pointer", None, detail))
        else:
            why = latest_problem(reader, asset)
            if why:
                findings.append(Finding(asset, "corrupt_latest", POINTER_FILE, why))
        findings += _temp_files(store, asset, asset, grace, repair)
    for kind in store.list_dir(OBSERVATIONS_DIR):
        for key in store.list_dir(f"{OBSERVATIONS_DIR}/{kind}"):
            folder = f"{OBSERVATIONS_DIR}/{kind}/{key}"
            findings += _temp_files(store, folder, f"observations {kind}", grace, repair)
    return findings


def _temp_files(store: StoreRoot, folder: str, label: str, grace: float, repair: bool) -> list[Finding]:
    """A pointer's or an observation's temp file left by a killed writer (local stores: renamed into place)."""
    found = []
    now = time.time()
    for name in store.list_dir(folder):
        if not (name.startswith(".") and name.endswith(".tmp")):
            continue
        born = store.mtime(f"{folder}/{name}")
        if born is None or now - born <= grace:
            continue
        if repair:
            _unlink(store, f"{folder}/{name}")
        detail = f"temp file unfinished for longer than the grace period ({grace:g} s)"
        found.append(Finding(label, "temp_file", f"{folder}/{name}", detail, repair))
    return found


def _unlink(store: StoreRoot, rel: str) -> None:
    # only local roots have temp files (object stores write each object whole)
    if isinstance(store, LocalRoot):
        with contextlib.suppress(FileNotFoundError, IsADirectoryError):
            (store.path / rel).unlink()


def render(findings: list[Finding], *, repair: bool) -> str:
    if not findings:
        return "store: no problems found"
    lines = [f"{'ASSET':<32} {'PROBLEM':<15} {'ENTRY':<44} DETAIL"]
    for f in findings:
        state = " [removed]" if f.repaired else ""
        lines.append(f"{f.asset:<32} {f.problem:<15} {(f.entry or '-'):<44} {f.detail}{state}")
    abandoned = sum(1 for f in findings if f.problem in ("leftover", "temp_file") and not f.repaired)
    if abandoned and not repair:
        lines.append(
            f"{abandoned} leftover(s) of killed writers: run `ade store fsck --repair` to remove them"
        )
    corrupt = sorted({f.asset for f in findings if f.problem == "corrupt_latest"})
    if corrupt:
        lines.append(
            f"answers use the previous good version of {', '.join(corrupt)} (stale, saying why); "
            f"re-materialize: ade materialize --select {corrupt[0] if len(corrupt) == 1 else '<asset>'}"
        )
    return "\n".join(lines)
