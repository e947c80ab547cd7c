"""The parsed-run cache as a whole: its size, a size limit, and eviction of the least recently used entries.

Why: every new trace adds a Parquet copy of itself to the cache (often hundreds of MB), and nothing
removed them; a user found gigabytes under ~/.cache/advisor. The limit is `ADVISOR_CACHE_MAX_SIZE`
(bytes, or a size like `20G`; default 10 GiB, `0` turns the limit off). After each command the CLI
evicts the entries used longest ago (last written, or read where the file system records access
times) until the cache fits (`evict`); `advisor cache info|clear` shows
and empties it by hand. An entry is removed by renaming it out of sight first (`workarea.discard`),
so a reader never sees half of one; a process that still has it open re-ingests (CacheDamaged).
"""

from __future__ import annotations

import os
import re
import time
from dataclasses import dataclass
from pathlib import Path

from advisor.errors import InputError
from advisor.model.entry import META, default_cache_dir
from advisor.model.workarea import WORK, discard

DEFAULT_MAX_BYTES = 10 * 1024**3
RECENT_S = 120.0  # an entry written or used this recently is never evicted automatically (it may be in use)
_UNITS = {"": 1, "B": 1, "K": 1024, "M": 1024**2, "G": 1024**3, "T": 1024**4}


@dataclass(frozen=True)
class Entry:
    """One cached run: its folder, its size on disk and when it was last written or opened."""

    path: Path
    bytes: int
    used: float


def parse_size(text: str) -> int:
    """'10G', '512M', '1.5GiB', '1000000' -> bytes; InputError on anything else."""
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([KMGT]?)(?:I?B)?\s*", text.upper())
    if not m:
        raise InputError(f"cannot read the size {text!r}", "give bytes or a size such as 500M or 20G")
    return int(float(m.group(1)) * _UNITS[m.group(2)])


def max_bytes() -> int:
    """The cache's size limit: ADVISOR_CACHE_MAX_SIZE, else 10 GiB; 0 means no limit."""
    raw = os.environ.get("ADVISOR_CACHE_MAX_SIZE")
    return DEFAULT_MAX_BYTES if raw is None or not raw.strip() else parse_size(raw)


def entries(root: Path | None = None) -> list[Entry]:
    """Every published entry (a folder holding meta.json), least recently used first."""
    root = root or default_cache_dir()
    out: list[Entry] = []
    try:
        names = [d for d in os.scandir(root) if not d.name.startswith(".") and d.is_dir(follow_symlinks=False)]
    except OSError:
        return []
    for d in names:
        meta = Path(d.path) / META
        try:
            files = list(os.scandir(d.path))
            used = max(meta.stat().st_mtime, meta.stat().st_atime, d.stat().st_mtime)
        except OSError:
            continue
        size = sum(_tree_bytes(f) for f in files)
        out.append(Entry(Path(d.path), size, used))
    return sorted(out, key=lambda e: e.used)


def _tree_bytes(f: os.DirEntry[str]) -> int:
    try:
        if f.is_dir(follow_symlinks=False):
            return sum(_tree_bytes(g) for g in os.scandir(f.path))
        return f.stat(follow_symlinks=False).st_size
    except OSError:
        return 0


def work_bytes(root: Path | None = None) -> int:
    """Bytes in the work areas of running (or crashed, not yet swept) processes."""
    work = (root or default_cache_dir()) / WORK
    try:
        return sum(_tree_bytes(f) for f in os.scandir(work))
    except OSError:
        return 0


def evict(limit: int, root: Path | None = None, keep_recent_s: float = RECENT_S) -> list[Entry]:
    """Remove the least recently used entries until the rest fit in `limit` bytes; return the removed ones.

    Entries used in the last `keep_recent_s` seconds stay (another process may be reading them)."""
    found = entries(root)
    total = sum(e.bytes for e in found)
    removed: list[Entry] = []
    now = time.time()
    for e in found:
        if total <= limit:
            break
        if now - e.used < keep_recent_s:
            continue
        discard(e.path)
        removed.append(e)
        total -= e.bytes
    return removed
