"""A cache entry on disk, and the input whose model it holds; nothing here opens DuckDB or Arrow.

An entry is a directory `<cache>/<name>/`: one Parquet file per model table and `meta.json` (schema
version, per-file sha256, crc32 and row counts, the input's sha256 and the stat fingerprints of inputs
known to hold its bytes). Its name is the input's sampled fingerprint with the schema and parser
versions (`entry_name`). Why a module of its own: a command that finds everything it needs already
kept (advisor.engine.kept) checks an entry and its input without paying for DuckDB's import.
How the cache stays fast and correct is in advisor.ingest's docstring; how a run reads an entry is
advisor.model.store.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
import time
import zlib
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from advisor.model.schema import SCHEMA_VERSION, TABLES, empty

if TYPE_CHECKING:
    import pyarrow as pa

META = "meta.json"

# How every cache file is written: the model's tables (by pyarrow here, by DuckDB's COPY in the nsys parser) and the
# metric results kept beside them (advisor.metrics.derived). Integers delta-encoded (Parquet v2 pages): model
# times, ids and durations are sorted or nearly so, and DuckDB's v1 writer stored them plain or in dictionaries.
# Writers' default row groups (~120K rows in DuckDB): a 1M-row group is written on one thread. Measured on a
# 0.9 GB nsys export's 7.4M ranges: 3.4 -> 2.1 s to write, 0.46 -> 0.28 s to scan, 50 -> 32 MB; its parse
# 32 -> 26 s. Old entries (v1 pages) read as before.
PARQUET_COPY = "FORMAT parquet, COMPRESSION zstd, PARQUET_VERSION v2"


def default_cache_dir() -> Path:
    env = os.environ.get("ADVISOR_CACHE_DIR")
    if env:
        return Path(env)
    from platformdirs import user_cache_dir

    return Path(user_cache_dir("advisor"))


def _file_sha256(path: Path) -> str:
    return str(_file_sums(path)["sha256"])


def _file_sums(path: Path) -> dict[str, Any]:
    """sha256 (the entry's identity, checked after an error) and crc32 (checked on every open) of a file."""
    h, crc = hashlib.sha256(), 0
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
            crc = zlib.crc32(block, crc)
    return {"sha256": h.hexdigest(), "crc32": crc}


def file_crc32(path: Path) -> int:
    """crc32 of a file's bytes: ~1.2 GB/s here, twice sha256's (zlib releases the GIL, so files hash in parallel)."""
    crc = 0
    with path.open("rb", buffering=0) as f:
        # a buffer no larger than the file: a kept table is often a few KB, and zeroing 4 MiB for it took 0.8 ms
        buf = bytearray(min(max(os.fstat(f.fileno()).st_size, 1), 1 << 22))
        view = memoryview(buf)
        while n := f.readinto(buf):
            crc = zlib.crc32(view[:n], crc)
    return crc


def write_entry(
    cache_root: Path,
    key: str,
    tables: Mapping[str, pa.Table],
    meta: dict[str, Any],
    files: Mapping[str, tuple[Path, int]] | None = None,
    staging: Path | None = None,
) -> Path:
    """Atomically publish a cache entry; return its directory. An existing valid entry wins.

    `files` maps table names to (Parquet file, row count) already written and checked against the
    schema (`advisor.model.validate.check_file`); they are moved into the entry, not rewritten.
    The entry is assembled in a temporary folder (in `staging`, the process's work area, when given,
    so a killed writer's leftovers are swept with it) and renamed into place: readers see all of it
    or nothing. A second writer that finds a valid entry published discards its own; anything else
    in the way (a damaged entry, a regular file) is discarded and replaced.
    """
    final = cache_root / key
    if read_entry_meta(final) is not None:
        return final
    cache_root.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{key}.", dir=staging or cache_root))
    given = files or {}
    try:
        written: dict[str, dict[str, Any]] = {}
        for name in TABLES:
            target = tmp / f"{name}.parquet"
            if name in given:
                source, rows = given[name]
                shutil.move(source, target)  # same file system when the work dir is in the cache (a rename)
            else:
                table = tables.get(name, empty(name))
                write_parquet(table, target)
                rows = table.num_rows
            written[name] = {"rows": rows, "bytes": target.stat().st_size, **_file_sums(target)}
        full_meta = dict(meta, schema_version=SCHEMA_VERSION, files=written)
        (tmp / META).write_text(json.dumps(full_meta, sort_keys=True))
        _publish(tmp, final)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    return final


def write_parquet(table: pa.Table, target: Path) -> None:
    """Write `table` as a cache file does (PARQUET_COPY's encodings, by pyarrow): integer columns delta-encoded,
    other columns in dictionaries. A 2M-row cpu_ops table: 0.98 -> 0.35 s, 18 -> 8 MB."""
    import pyarrow as pa
    import pyarrow.parquet as pq  # cold path only: a warm re-open never pays for it

    ints = [f.name for f in table.schema if pa.types.is_integer(f.type)]
    pq.write_table(table, target, compression="zstd",
                   use_dictionary=[f.name for f in table.schema if f.name not in ints],
                   column_encoding=dict.fromkeys(ints, "DELTA_BINARY_PACKED"))


def _publish(tmp: Path, final: Path) -> None:
    """rename(tmp, final); when something is in the way, keep it if it is a valid entry, else replace it."""
    from advisor.model.workarea import discard

    for _ in range(5):
        try:
            os.rename(tmp, final)
            return
        except OSError:
            if read_entry_meta(final) is not None:
                return  # another process published first: ours is dropped by the caller's cleanup
            discard(final)  # a damaged entry or a regular file: moved aside, then removed
    os.rename(tmp, final)


def replace_entry_meta(entry: Path, meta: Mapping[str, Any]) -> bool:
    """Replace the entry's meta.json atomically (temp file + rename); False when the cache is not writable."""
    try:
        fd, name = tempfile.mkstemp(prefix=f".{META}.", suffix=".tmp", dir=entry)
    except OSError:
        return False
    try:
        with os.fdopen(fd, "w") as f:
            f.write(json.dumps(meta, sort_keys=True))
        os.replace(name, entry / META)
    except OSError:
        Path(name).unlink(missing_ok=True)
        return False
    return True


def read_entry_meta(entry: Path, verify: bool = False) -> dict[str, Any] | None:
    """The entry's meta if it is complete and of this schema version (and, with verify, intact)."""
    try:
        meta: dict[str, Any] = json.loads((entry / META).read_text())
    except (OSError, ValueError):
        return None
    if meta.get("schema_version") != SCHEMA_VERSION or set(meta.get("files", {})) != set(TABLES):
        return None
    for name, info in meta["files"].items():
        f = entry / f"{name}.parquet"
        if not f.is_file() or f.stat().st_size != info.get("bytes"):
            return None
        if verify and _file_sha256(f) != info["sha256"]:
            return None
    return meta


VERIFY_PARALLEL_BYTES = 16 << 20  # above this, the entry's files are checked on every core


def verify_entry(entry: Path, meta: dict[str, Any]) -> bool:
    """Whether every file of the entry still has the crc32 written at publish (checked on every open).

    Why every open: damage that still decodes (one digit changed in a page) would otherwise give a
    wrong answer in silence. crc32 runs at ~1.2 GB/s per core on the machine we measure on, and
    files are checked in parallel, so a warm open of a 1 GB trace's entry pays tens of ms. An entry
    written before crc32 was recorded is checked against its sha256 once and gets crc32 added.
    """
    files = meta.get("files", {})
    if any("crc32" not in info for info in files.values()):
        return _add_crc32(entry, meta)
    paths = [(entry / f"{name}.parquet", info["crc32"]) for name, info in files.items()]
    total = sum(int(info.get("bytes", 0)) for info in files.values())
    try:
        if total < VERIFY_PARALLEL_BYTES:
            return all(file_crc32(f) == crc for f, crc in paths)
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(max_workers=max(1, min(len(paths), os.cpu_count() or 1))) as pool:
            got = list(pool.map(file_crc32, [f for f, _ in paths]))
    except OSError:
        return False
    return got == [crc for _, crc in paths]


def _add_crc32(entry: Path, meta: dict[str, Any]) -> bool:
    """An older entry: check it by sha256 once, then keep crc32 values in its meta.json."""
    files = dict(meta["files"])
    try:
        for name, info in files.items():
            sums = _file_sums(entry / f"{name}.parquet")
            if sums["sha256"] != info.get("sha256"):
                return False
            files[name] = dict(info, crc32=sums["crc32"])
    except OSError:
        return False
    meta["files"] = files
    replace_entry_meta(entry, meta)
    return True


# A stat fingerprint whose mtime or ctime is this close to the moment it was taken is not kept: an
# edit in the same timestamp tick (1-2 s on some file systems) would leave it unchanged.
RACY_NS = 2_000_000_000
KEPT_STATS = 8  # stat fingerprints kept per entry (the same bytes under several names or copies)


def input_files(path: Path) -> list[Path]:
    """The files whose bytes make the input: the file itself, or a directory's files (sorted by name)."""
    return sorted(p for p in path.iterdir() if p.is_file()) if path.is_dir() else [path]


def fingerprint(path: Path) -> str:
    """Sampled content fingerprint, the cache entry's name: size + 16 blocks of 64 KiB spread over the
    file (+ members for dirs). Cheap but not a content hash: see the module docstring."""
    h = hashlib.blake2b(digest_size=16)
    for f in input_files(path):
        size = f.stat().st_size
        h.update(f.name.encode() if path.is_dir() else b"")
        h.update(size.to_bytes(8, "little"))
        with f.open("rb") as fh:
            blocks = 16
            for i in range(blocks):
                fh.seek(max(0, (size - 65536) * i // (blocks - 1)) if size > 65536 else 0)
                h.update(fh.read(65536))
                if size <= 65536:
                    break
    return h.hexdigest()


def stat_fingerprint(path: Path) -> tuple[list[list[Any]], bool]:
    """[name, device, inode, size, mtime_ns, ctime_ns] of each file of the input, and whether it may be
    kept (every time at least RACY_NS old now). JSON-shaped, so it compares equal after a round trip."""
    now = time.time_ns()
    stats, settled = [], True
    for f in input_files(path):
        st = f.stat()
        stats.append([f.name if f != path else "", st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns])
        settled = settled and now - max(st.st_mtime_ns, st.st_ctime_ns) >= RACY_NS
    return stats, settled


def known_stats(meta: dict[str, Any]) -> list[Any]:
    known = meta.get("source_stats")
    return known if isinstance(known, list) else []


def trusted(meta: dict[str, Any], current: list[list[Any]]) -> bool:
    """Whether the entry knows an input with the stat fingerprint `current` to hold its bytes (served without
    hashing the input: see advisor.ingest)."""
    return current in known_stats(meta)


def entry_name(path: Path, parser_version: str) -> str:
    """The cache entry's name for the input at `path` read by a parser of `parser_version`."""
    return f"{fingerprint(path)}-s{SCHEMA_VERSION}-p{parser_version}"
