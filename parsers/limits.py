"""Size limits on what advisor inflates: the decompression-bomb guard shared by every gzip reader.

Two checks, both documented in docs/limits.md:

* a byte limit on decompressed data (Kineto JSON, a gzip'd SQLite export written to the work
  directory): `ParseOptions.max_json_bytes`, by default `ADVISOR_MAX_BYTES` or 16 GiB. Kineto JSON is
  no longer held in memory (it is decoded in ~16 MB slices into columns, see parsers/kineto), so for
  Kineto the limit now bounds the column memory: peak RSS about 0.8-1.2x the JSON size (1.2 GB for
  1 GB, 8.1 GB for 10.3 GB), not 4.5x;
* a ratio limit: past the first 64 MiB, a stream that has inflated more than 250 times the
  compressed bytes read so far is refused at once. Real traces compress 5-30x; a bomb (gigabytes
  of zeros) inflates about 1000x, so it is refused after 64 MiB instead of after the byte limit.

One more bound keeps a hostile string from slowing everything after ingest: names longer than
MAX_STRING_CHARS (1 Mi characters) are cut to that length in the `strings` table.
"""

from __future__ import annotations

import gzip
import os
import zlib
from collections.abc import Iterator
from pathlib import Path

from advisor.errors import InputError, LimitExceeded
from advisor.model.limits import parse_size

MAX_BYTES_ENV = "ADVISOR_MAX_BYTES"
MAX_STRING_CHARS = 1 << 20  # longer names (kernel, NVTX, op) are cut to this many characters
DEFAULT_MAX_BYTES = 16 << 30
MAX_RATIO = 250
RATIO_GRACE_BYTES = 64 << 20
CHUNK = 1 << 22


def max_bytes() -> int:
    """The decompressed-size limit: $ADVISOR_MAX_BYTES when set, else DEFAULT_MAX_BYTES."""
    env = os.environ.get(MAX_BYTES_ENV)
    return parse_size(env, MAX_BYTES_ENV) if env else DEFAULT_MAX_BYTES


def human(n: int) -> str:
    for unit, k in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= k:
            return f"{n / k:g} {unit}"
    return f"{n} bytes"


def too_big(path: Path, what: str, limit: int) -> LimitExceeded:
    return LimitExceeded(
        f"{path}: {what} more than the {human(limit)} limit",
        f"if the trace is genuine, raise the limit with {MAX_BYTES_ENV} (e.g. {MAX_BYTES_ENV}=32G; see docs/limits.md)",
    )


def inflate(path: Path, limit: int) -> Iterator[bytes]:
    """Decompress a gzip file in chunks, refusing a stream over `limit` bytes or one that looks like a bomb.

    Raises InputError for a damaged or truncated stream, LimitExceeded for the limits. Nothing is
    kept: the caller decides what to do with each chunk.
    """
    total = 0
    try:
        with path.open("rb") as raw, gzip.GzipFile(fileobj=raw, mode="rb") as gz:
            while chunk := gz.read(CHUNK):
                total += len(chunk)
                if total > limit:
                    raise too_big(path, "decompresses to", limit)
                if total > RATIO_GRACE_BYTES and total > MAX_RATIO * max(raw.tell(), 1):
                    raise LimitExceeded(
                        f"{path}: inflates more than {MAX_RATIO}x ({human(total)} from {human(raw.tell())} read): "
                        "refused as a likely decompression bomb",
                        "if the trace is genuine, decompress it yourself and pass the uncompressed file",
                    )
                yield chunk
    except (EOFError, gzip.BadGzipFile, zlib.error) as e:
        raise InputError(f"{path}: corrupt or truncated gzip ({e})", "re-copy or re-compress the trace file") from None
