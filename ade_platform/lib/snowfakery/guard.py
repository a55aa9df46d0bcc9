"""What a sandboxed run may touch, enforced from inside the child with a Python audit hook.

The hook is installed in the forked child just before the recipe runs, and cannot be removed. It
refuses network access (unless allowed), subprocesses other than Graphviz's `dot`, signals to other
processes, reads outside the workspace/run folder/Python installation/shared system data, and any write
outside the run folder. It is defence in depth: the child also runs in its own session with resource
limits and an empty environment, and the parent kills it when the timeout expires.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable

NETWORK_EVENTS = frozenset(
    {
        "socket.connect",
        "socket.bind",
        "socket.getaddrinfo",
        "socket.gethostbyname",
        "socket.gethostbyaddr",
        "socket.sendto",
        "socket.sendmsg",
        "urllib.Request",
        "http.client.connect",
    }
)
EXEC_EVENTS = frozenset(
    {"subprocess.Popen", "os.exec", "os.posix_spawn", "os.spawn", "os.system", "pty.spawn"}
)
PROCESS_EVENTS = frozenset({"os.fork", "os.forkpty", "os.kill", "os.killpg", "signal.pthread_kill"})
WRITE_EVENTS = frozenset(
    {
        "os.remove",
        "os.rename",
        "os.rmdir",
        "os.mkdir",
        "os.truncate",
        "os.chmod",
        "os.chown",
        "os.symlink",
        "os.link",
        "os.utime",
        "shutil.rmtree",
        "shutil.move",
        "shutil.copyfile",
    }
)
SYSTEM_READ = (
    "/usr/share",
    "/usr/lib",
    "/usr/local/share",
    "/usr/local/lib",
    "/etc/localtime",
    "/etc/timezone",
    "/etc/mime.types",
    "/dev/null",
    "/dev/urandom",
    "/dev/random",
    "/dev/zero",
)
CODE_SUFFIXES = (".py", ".pyc", ".so", ".pth")
_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_TRUNC


class SandboxViolation(PermissionError):
    """Raised by the audit hook; the run fails with kind SandboxViolation."""


# Every refusal, in order: Snowfakery may wrap the exception, the worker still reports the violation.
VIOLATIONS: list[str] = []


def _refuse(message: str) -> SandboxViolation:
    VIOLATIONS.append(message)
    return SandboxViolation(message)


def _real(path: object) -> str | None:
    if isinstance(path, int):
        return None
    try:
        return os.path.realpath(os.fsdecode(path))  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None


def _under(path: str, roots: Iterable[str]) -> bool:
    return any(path == root or path.startswith(root.rstrip(os.sep) + os.sep) for root in roots)


def install(
    *,
    read_roots: Iterable[str],
    write_roots: Iterable[str],
    allow_network: bool,
    allow_exec: Iterable[str] = (),
) -> None:
    writes = tuple(os.path.realpath(r) for r in write_roots)
    reads = tuple(os.path.realpath(r) for r in read_roots) + writes + SYSTEM_READ
    prefixes = {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix}
    python_roots = tuple(os.path.realpath(p) for p in prefixes)
    code_roots = tuple(
        os.path.realpath(p)
        for p in sys.path
        if p and os.path.isdir(p) and not _under(os.path.realpath(p), python_roots)
    )
    executables = frozenset(allow_exec)

    def may_read(path: str) -> bool:
        if _under(path, reads) or _under(path, python_roots):
            return True
        return _under(path, code_roots) and (os.path.isdir(path) or path.endswith(CODE_SUFFIXES))

    def check_open(event: str, args: tuple) -> None:
        path = _real(args[0])
        if path is None:
            return
        mode = args[1] if len(args) > 1 and isinstance(args[1], str) else ""
        flags = args[2] if len(args) > 2 and isinstance(args[2], int) else 0
        writing = any(c in mode for c in "wax+") or bool(flags & _WRITE_FLAGS)
        if (writing and not _under(path, writes)) or (not writing and not may_read(path)):
            raise _refuse(f"file access outside the workspace is not allowed: {args[0]}")

    def check_listing(event: str, args: tuple) -> None:
        path = _real(args[0] if args and args[0] is not None else ".")
        if path is not None and not may_read(path):
            raise _refuse(f"listing a folder outside the workspace is not allowed: {args[0]}")

    def check_write(event: str, args: tuple) -> None:
        for arg in args[:2]:
            path = _real(arg) if isinstance(arg, str | bytes | os.PathLike) else None
            if path is not None and not _under(path, writes):
                raise _refuse(f"changing files outside the run folder is not allowed: {arg}")

    def check_network(event: str, args: tuple) -> None:
        if not allow_network:
            raise _refuse("network access is disabled for recipes (snowfakery.allow_network)")

    def check_exec(event: str, args: tuple) -> None:
        program = args[0] if args else None
        if isinstance(program, list | tuple):
            program = program[0] if program else None
        name = os.path.basename(os.fsdecode(program)) if isinstance(program, str | bytes) else ""
        if name not in executables:
            raise _refuse(f"starting programs is not allowed: {name or program}")

    def check_process(event: str, args: tuple) -> None:
        raise _refuse(f"{event} is not allowed in a recipe run")

    checks = {"open": check_open, "os.listdir": check_listing, "os.scandir": check_listing}
    checks |= dict.fromkeys(WRITE_EVENTS, check_write)
    checks |= dict.fromkeys(NETWORK_EVENTS, check_network)
    checks |= dict.fromkeys(EXEC_EVENTS, check_exec)
    checks |= dict.fromkeys(PROCESS_EVENTS, check_process)
    watched = checks.get

    # A run fires thousands of events no check is about (a 2,100-row run of the benchmark recipe: ~9,000
    # `builtins.id`, ~300 `compile`): each of those costs one dictionary lookup.
    def hook(event: str, args: tuple) -> None:
        check = watched(event)
        if check is not None:
            check(event, args)

    sys.addaudithook(hook)
