"""Where a process writes inside the cache: its own work area, the per-entry ingest lock, removal by rename.

Why: every process that ingested the same bytes used to share `<cache>/.work/<key>` and deleted it
under the others, so N cold runs of one trace at once (CI matrices, notebooks, `analyze` beside
`report`) failed with misleading errors. Now:

* each process has its own area `<cache>/.work/p<pid>-<random>/` (per-ingest work dirs, DuckDB spill
  folders, the staging copy of an entry before it is published). The process holds an exclusive
  `flock` on `.owner` inside it while it lives; `sweep` removes areas whose lock is free (their
  process died, even by SIGKILL), so nothing piles up;
* ingesting one cache key is serialized by `ingest_lock` (`<cache>/.work/<key>.lock`): the first
  process parses and publishes, the others wait and then open the published entry (one parse, one
  entry). Where locks do not work the publish is still atomic and first-writer-wins
  (advisor.model.entry.write_entry);
* a cache that cannot be written (read-only, full, a file in the way) gives `CacheUnwritable`;
  `--no-cache` and that fallback use `temp_area()`, a private folder in the system temp dir, so
  nothing is ever written to the cache directory.

Anything removed is first renamed out of its visible name (`discard`), so no reader sees half of it.
"""

from __future__ import annotations

import atexit
import contextlib
import errno
import fcntl
import itertools
import os
import secrets
import shutil
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

WORK = ".work"
OWNER = ".owner"
AREA_PREFIX = "p"
STALE_UNLOCKED_S = 60.0  # an area without its .owner lock yet (just created) is left alone this long
LOCK_POLL_S = 0.05

_lock = threading.Lock()
_areas: dict[tuple[int, str], Path] = {}  # (pid, cache root or "") -> this process's area (fork-safe by pid)
_owners: list[int] = []  # open .owner descriptors: closing one would release the area's lock
_key_locks: dict[str, threading.Lock] = {}  # threads of one process take turns before the file lock
_names = itertools.count()
_made: list[tuple[int, Path]] = []  # (pid, area) this process made or was about to make: removed at its exit


def _remove_made() -> None:
    for pid, path in _made:
        if pid == os.getpid():  # a forked child does not remove its parent's areas
            shutil.rmtree(path, ignore_errors=True)


atexit.register(_remove_made)


class CacheUnwritable(OSError):
    """The cache directory cannot be written: the caller falls back to an uncached run with a note."""


def process_area(root: Path | None) -> Path:
    """This process's own folder under `<root>/.work` (None: a private folder in the system temp dir).

    Created once per process and cache root, locked while the process lives, removed at exit.
    Raises CacheUnwritable when `root` cannot be written.
    """
    key = (os.getpid(), str(root) if root is not None else "")
    with _lock:
        got = _areas.get(key)
        if got is not None and got.is_dir():
            return got
        area = _make_area(root)
        _areas[key] = area
        return area


def temp_area() -> Path:
    """A private folder in the system temp dir (uncached runs: nothing goes to the cache directory)."""
    return process_area(None)


def _make_area(root: Path | None) -> Path:
    try:
        if root is None:
            area = _new_dir(Path(tempfile.gettempdir()), "advisor-")
        else:
            base = root / WORK
            base.mkdir(parents=True, exist_ok=True)
            sweep(base)
            area = _new_dir(base, f"{AREA_PREFIX}{os.getpid()}-")
        fd = os.open(area / OWNER, os.O_CREAT | os.O_RDWR, 0o600)
    except OSError as e:
        raise CacheUnwritable(e.errno or errno.EACCES, f"cannot write in {root} ({e.strerror or e})") from None
    with contextlib.suppress(OSError):
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    _owners.append(fd)
    return area


def _new_dir(parent: Path, prefix: str) -> Path:
    """A new private folder `<parent>/<prefix><random>`, listed for removal at exit before it is made: an interrupt
    between making it and listing it (mkdtemp, then atexit.register) left the folder and its .owner behind."""
    for _ in range(100):
        path = parent / f"{prefix}{secrets.token_hex(4)}"
        _made.append((os.getpid(), path))
        try:
            path.mkdir(mode=0o700)
            return path
        except FileExistsError:
            continue
    raise FileExistsError(errno.EEXIST, f"no free folder name under {parent}")


def work_dir(root: Path | None, key: str) -> Path:
    """A fresh folder for one ingest of `key`, inside this process's area."""
    area = process_area(root)
    try:
        return Path(tempfile.mkdtemp(prefix=f"{key}-{next(_names)}-", dir=area))
    except OSError as e:
        raise CacheUnwritable(e.errno or errno.EACCES, f"cannot write in {area} ({e.strerror or e})") from None


def sweep(base: Path) -> int:
    """Remove what processes that are gone left in the work folder; return how many.

    Their areas (the .owner lock is free) and ingest locks nobody holds (a killed ingest leaves its
    lock file; removing one is safe because `_acquire` checks the inode it locked is still the file).
    """
    try:
        found = list(base.iterdir())
    except OSError:
        return 0
    mine = set(_areas.values())
    removed = 0
    for path in found:
        if path.name.startswith(AREA_PREFIX) and path.is_dir() and path not in mine and _abandoned(path / OWNER):
            discard(path)
            removed += 1
        elif path.name.endswith(".lock") and _abandoned(path, unlink=True):
            removed += 1
    return removed


def _abandoned(lock: Path, unlink: bool = False) -> bool:
    """Whether nobody holds `lock` (then, with `unlink`, it is removed while we hold it)."""
    try:
        fd = os.open(lock, os.O_RDWR)
    except FileNotFoundError:
        try:  # an area without its lock file: being created right now, or its process died in that instant
            return not unlink and time.time() - lock.parent.stat().st_mtime > STALE_UNLOCKED_S
        except OSError:
            return False
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        if unlink:
            lock.unlink()
    except OSError:
        return False  # held: its process is alive
    finally:
        os.close(fd)
    return True


def discard(path: Path) -> None:
    """Remove a file, link or folder; a folder is first renamed to a hidden name beside it, so a reader
    never finds half of it under its real name. Never raises."""
    try:
        if path.is_symlink() or (path.exists() and not path.is_dir()):
            path.unlink()
            return
        if not path.exists():
            return
        trash = path.with_name(f".trash-{path.name}-{os.getpid()}-{next(_names)}")
        os.rename(path, trash)
    except OSError:
        trash = path
    shutil.rmtree(trash, ignore_errors=True)


@contextlib.contextmanager
def ingest_lock(root: Path, key: str, waiting: Callable[[], None] = lambda: None) -> Iterator[bool]:
    """Hold the ingest lock of `key`: one process (and one thread) at a time parses and publishes it.

    Yields True when locked; False when the file system refuses locks (then the atomic publish alone
    keeps the entry consistent). `waiting` is called once if another process holds the lock.
    Raises CacheUnwritable when the lock file cannot be created.
    """
    with _lock:
        tlock = _key_locks.setdefault(f"{root}\0{key}", threading.Lock())
    with tlock:
        fd = _acquire(root / WORK / f"{key}.lock", waiting)
        try:
            yield fd is not None
        finally:
            if fd is not None:
                with contextlib.suppress(OSError):
                    os.unlink(root / WORK / f"{key}.lock")
                os.close(fd)


def _acquire(path: Path, waiting: Callable[[], None]) -> int | None:
    """Lock `path` (creating it); retry when the holder removed it meanwhile (its inode changed)."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise CacheUnwritable(e.errno or errno.EACCES, f"cannot write in {path.parent} ({e.strerror or e})") from None
    told = False
    while True:
        try:
            fd = os.open(path, os.O_CREAT | os.O_RDWR, 0o600)
        except OSError as e:
            raise CacheUnwritable(e.errno or errno.EACCES, f"cannot create {path} ({e.strerror or e})") from None
        try:
            if not _flock(fd, waiting, told):
                os.close(fd)
                return None
            told = True
            if os.fstat(fd).st_ino == os.stat(path).st_ino:
                return fd
        except FileNotFoundError:
            pass  # unlinked by the holder after we opened it: lock the new file
        os.close(fd)


def _flock(fd: int, waiting: Callable[[], None], told: bool) -> bool:
    """Exclusive lock on fd, polling (so Ctrl-C stays prompt); False where locks are not supported."""
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except BlockingIOError:
            if not told:
                waiting()
                told = True
            time.sleep(LOCK_POLL_S)
        except OSError as e:
            if e.errno in (errno.ENOLCK, errno.EOPNOTSUPP, errno.ENOSYS, errno.EINVAL):
                return False
            raise
