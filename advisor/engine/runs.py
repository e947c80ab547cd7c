"""The one place a run is opened for work and closed again, with the damaged-cache retry.

Opening a cache entry checks sizes, footers and row counts, not hashes (that would cost the warm
path seconds), so damage inside a data page surfaces mid-work as `CacheDamaged`. The work is then
done once more on a fresh ingest: the entry is dropped, the input parsed again. Damage that comes
back is raised (it points at the disk holding the cache).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import TypeVar

from advisor import ingest
from advisor.model.store import CacheDamaged, Run
from advisor.parsers.base import ParseOptions

T = TypeVar("T")


def with_run(path: str | os.PathLike[str], work: Callable[[Run], T], options: ParseOptions | None = None,
             use_cache: bool = True, opener: Callable[[], Run] | None = None) -> T:
    """`work(run)` on the run at `path` (or what `opener` opens), closed afterwards; retried once on damage."""
    def attempt() -> T:
        run = opener() if opener is not None else ingest.open_run(path, options, use_cache=use_cache)
        try:
            return work(run)
        finally:
            run.close()

    return retried(attempt)


def retried(attempt: Callable[[], T]) -> T:
    """`attempt()`, once more after dropping the cache entry it found damaged (the only such retry)."""
    try:
        return attempt()
    except CacheDamaged as e:
        ingest.drop_entry(e.entry)  # looked up here: a test can keep the entry to see damage come back
    return attempt()
