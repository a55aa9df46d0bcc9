"""The dbt project's git history: which commits touched which files, read with `git log` (bounded in count and
time). Only what a change timeline needs: hash, author name, time, subject, files."""

from __future__ import annotations

import subprocess
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

_SEP = "\x1f"
_FORMAT = "%x1e%H%x1f%an%x1f%aI%x1f%s"


class GitError(Exception):
    """`code`: not_a_repository, git_unavailable, git_failed or timeout; `detail` is safe to show."""

    def __init__(self, code: str, detail: str):
        super().__init__(detail)
        self.code = code
        self.detail = detail


def commits(
    repo_dir: Path, paths: Sequence[str], since: datetime, *, limit: int = 200, timeout: float = 5.0
) -> list[dict[str, Any]]:
    """Commits since `since` that touched any of `paths` (relative to repo_dir), newest first."""
    if not paths:
        return []
    args = [
        "git",
        "--no-pager",
        "-c",
        "core.quotepath=off",
        "log",
        f"--since={since.isoformat()}",
        f"--max-count={int(limit)}",
        f"--format={_FORMAT}",
        "--name-only",
        "--no-renames",
        "--",
        *paths,
    ]
    return parse_log(_run(repo_dir, args, timeout, "git log"))


def parse_log(text: str) -> list[dict[str, Any]]:
    out = []
    for record in text.split("\x1e"):
        if not record.strip():
            continue
        head, _, rest = record.partition("\n")
        fields = head.split(_SEP)
        if len(fields) < 4:
            continue
        sha, author, at, subject = fields[0], fields[1], fields[2], _SEP.join(fields[3:])
        files = [line.strip() for line in rest.splitlines() if line.strip()]
        out.append({"sha": sha, "author": author, "at": at, "message": subject[:300], "files": files})
    return out


def _run(repo_dir: Path, args: list[str], timeout: float, what: str) -> str:
    try:
        proc = subprocess.run(
            args, cwd=repo_dir, capture_output=True, text=True, timeout=timeout, check=False
        )
    except FileNotFoundError:
        raise GitError("git_unavailable", "git is not installed on this machine") from None
    except subprocess.TimeoutExpired:
        raise GitError("timeout", f"{what} did not finish within {timeout:g} s") from None
    if proc.returncode != 0:
        if "not a git repository" in proc.stderr.lower():
            raise GitError("not_a_repository", "the dbt project is not in a git repository")
        raise GitError("git_failed", f"{what} exited with {proc.returncode}")
    return proc.stdout


def uncommitted(repo_dir: Path, paths: Sequence[str], *, timeout: float = 5.0) -> list[str]:
    """Which of `paths` (relative to repo_dir) differ in the working tree from the last commit (staged or not),
    or are new and untracked: the edits a build from a terminal may have run that no commit records.

    Two fixed argument lists, the paths after `--` (never an option); output paths relative to repo_dir."""
    if not paths:
        return []
    base = ["git", "--no-pager", "-c", "core.quotepath=off"]
    try:
        changed = _run(
            repo_dir, [*base, "diff", "--name-only", "--relative", "HEAD", "--", *paths], timeout, "git diff"
        )
    except GitError as exc:
        if exc.code != "git_failed":
            raise
        changed = ""  # no commit yet (no HEAD): every file is untracked, which the next command lists
    untracked = _run(
        repo_dir, [*base, "ls-files", "--others", "--exclude-standard", "--", *paths], timeout, "git ls-files"
    )
    found = {line.strip() for line in (changed + "\n" + untracked).splitlines() if line.strip()}
    return sorted(found)
