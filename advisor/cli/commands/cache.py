"""`advisor cache info|clear`: where parsed runs are cached, how much they take, and emptying or shrinking it.

The cache holds a Parquet copy of every trace read (found again by content, so a re-run is instant).
It is kept under a size limit, `ADVISOR_CACHE_MAX_SIZE` (default 10G, 0 = no limit): after each
command the entries used longest ago are evicted until it fits.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import TYPE_CHECKING

from advisor.cli.output import emit, say

if TYPE_CHECKING:
    from advisor.api import CacheEntry as Entry

NAME = "cache"
HELP = "show the parsed-run cache (info) or empty it (clear)"
EXAMPLES = ["advisor cache info", "advisor cache clear --max-size 2G"]


def register(p: argparse.ArgumentParser) -> None:
    p.add_argument("action", choices=("info", "clear"),
                   help="info: location, entries, size and limit; clear: remove entries")
    p.add_argument("--max-size", metavar="SIZE",
                   help="with clear: evict the least recently used entries until the cache fits in SIZE "
                        "(e.g. 2G) instead of removing every entry")


def run(args: argparse.Namespace) -> int:
    from advisor.api import default_cache_dir, entries, evict, max_bytes, parse_size
    from advisor.errors import InputError
    from advisor.reports.units import fmt_bytes

    root = default_cache_dir()
    if args.action == "info":
        if args.max_size:
            raise InputError("--max-size goes with `advisor cache clear`", "run `advisor cache clear --max-size SIZE`")
        emit(_info(root, entries(root), max_bytes()), None)
        return 0
    limit = parse_size(args.max_size) if args.max_size else 0
    removed = evict(limit, root, keep_recent_s=0)
    left = entries(root)
    say(f"removed {len(removed)} cached run(s), {fmt_bytes(sum(e.bytes for e in removed))}, from {root}; "
        f"{len(left)} left ({fmt_bytes(sum(e.bytes for e in left))})")
    return 0


def _info(root: Path, found: list[Entry], limit: int) -> str:
    from advisor.api import work_bytes
    from advisor.reports.units import fmt_bytes

    total = sum(e.bytes for e in found)
    lines = [f"cache: {root}", f"entries: {len(found)} parsed run(s), {fmt_bytes(total)}",
             f"limit: {fmt_bytes(limit) if limit else 'none'} (ADVISOR_CACHE_MAX_SIZE; least recently used "
             "entries are evicted past it)", f"work areas: {fmt_bytes(work_bytes())}"]
    if found:
        age = time.time() - found[0].used
        lines.append(f"least recently used: {found[0].path.name}, {age / 86400:.1f} days ago")
    return "\n".join(lines) + "\n"
