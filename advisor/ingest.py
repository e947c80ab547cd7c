"""Open a trace: detect its format (advisor.parsers.registry), parse it once, cache the model tables, hand back a `Run`.

Inputs are only ever opened for reading. How the cache stays both fast and correct:

* The entry's *name* is a sampled fingerprint of the content (size plus 16 blocks of 64 KiB) with
  the schema and parser versions, so finding it costs one 1 MiB read even for a 10 GB trace, and
  a copy of the same bytes under another name finds it too.
* The entry's *identity* is the full sha256 of the input, computed while parsing (in a thread)
  and kept in `meta.json` (and `runs.source_sha256`). Next to it, `meta.json` keeps the stat
  fingerprints (device, inode, size, mtime_ns, ctime_ns; per member file for a directory) of
  inputs known to hold those bytes. A re-open whose stat fingerprint is among them is served at
  once; any other (the file was edited, touched, copied, or the entry was found by a sampled-key
  collision) hashes the whole input first: a different sha256 rebuilds the entry, an equal one
  adds the fingerprint to `meta.json` (atomically) and serves it. ctime cannot be set back by
  tools that restore mtime, and a fingerprint is only kept when its times are at least
  RACY_NS older than the moment it was taken, so an edit within the file system's timestamp
  granularity cannot hide behind an unchanged stat (git's "racily clean" rule).
* Every open checks the entry's files against the crc32 values written at publish
  (advisor.model.entry.verify_entry); damage found later by a query is CacheDamaged, and
  `drop_entry` removes the entry so the caller can ingest again.
* Concurrent cold opens of one input: each process parses in its own work area and the first to
  hold the entry's ingest lock publishes; the rest open that entry (advisor.model.workarea).
"""

from __future__ import annotations

import hashlib
import json
import lzma
import os
import stat
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import duckdb

from advisor.errors import AdvisorError, InputError, LimitExceeded, SchemaError
from advisor.model.entry import (
    KEPT_STATS,
    default_cache_dir,
    entry_name,
    input_files,
    known_stats,
    read_entry_meta,
    replace_entry_meta,
    stat_fingerprint,
    trusted,
    verify_entry,
    write_entry,
)
from advisor.model.limits import check_cardinality
from advisor.model.schema import TABLES
from advisor.model.store import Run, entry_connection, scratch, sql_string
from advisor.model.validate import FileCheck, check_file, check_time_order, conform
from advisor.model.workarea import CacheUnwritable, discard, ingest_lock, work_dir
from advisor.parsers import registry
from advisor.parsers.base import ParsedRun, ParseOptions, ProgressFn, no_progress
from advisor.parsers.limits import CHUNK, MAX_RATIO, RATIO_GRACE_BYTES, human, inflate, too_big
from advisor.redact import redact_parquet, redact_table, redact_values

if TYPE_CHECKING:  # Arrow loads with a parse (or a damaged entry's re-parse), not to open a cached run
    import pyarrow as pa

XZ_MAGIC = b"\xfd7zXZ\x00"


def _gunzip_to(path: Path, target: Path, limit: int) -> Path:
    """Decompress a gzip'd input into the work dir (never next to the input), bounded by `limit`.

    `inflate` refuses more than `limit` bytes and bomb-like ratios before much is written.
    """
    with target.open("wb") as dst:
        for block in inflate(path, limit):
            dst.write(block)
    return target


def _decompress_to(path: Path, target: Path, limit: int) -> Path:
    """Decompress an .xz or .gz input (a gzip'd SQLite export, a packed Nsight Compute report) into the work dir.

    xz reports compress 10-20x (ncu 2025 on H100), far under the MAX_RATIO bomb guard.
    """
    if registry.head(path, 6).startswith(XZ_MAGIC):
        total = 0
        try:
            with path.open("rb") as raw, lzma.LZMAFile(raw, "rb") as src, target.open("wb") as dst:
                while chunk := src.read(CHUNK):
                    total += len(chunk)
                    if total > limit:
                        raise too_big(path, "decompresses to", limit)
                    if total > RATIO_GRACE_BYTES and total > MAX_RATIO * max(raw.tell(), 1):
                        raise LimitExceeded(
                            f"{path}: inflates more than {MAX_RATIO}x ({human(total)}): refused as a likely"
                            " decompression bomb",
                            "if the report is genuine, decompress it yourself and pass the .ncu-rep",
                        )
                    dst.write(chunk)
        except (lzma.LZMAError, EOFError) as e:
            raise InputError(f"{path}: corrupt or truncated xz ({e})", "re-copy or re-compress the report") from None
        return target
    return _gunzip_to(path, target, limit)


def full_sha256(path: Path, progress: ProgressFn = no_progress) -> str:
    """sha256 of the file (of the members' names and sha256 values for a directory); `progress` in bytes."""
    h = hashlib.sha256()
    files = input_files(path)
    total, done = sum(f.stat().st_size for f in files), 0
    for f in files:
        fh_hash = hashlib.sha256()
        with f.open("rb") as fh:
            for block in iter(lambda: fh.read(1 << 22), b""):
                fh_hash.update(block)
                done += len(block)
                progress(done, total, f"checking {path.name} against the cache")
        if path.is_dir():
            _add_member(h, f.name, fh_hash.hexdigest())
        else:
            return fh_hash.hexdigest()
    return h.hexdigest()


def members_sha256(path: Path, known: Mapping[str, str]) -> str:
    """full_sha256 of a directory whose members' sha256 values are partly known (name -> hex, from each rank
    file's own open: advisor.distributed); the others are hashed here."""
    h = hashlib.sha256()
    for f in input_files(path):
        digest = known.get(f.name)
        if digest is None:
            digest = full_sha256(f)
        _add_member(h, f.name, digest)
    return h.hexdigest()


def _add_member(h: Any, name: str, digest: str) -> None:
    """A directory's sha256 takes each member's name and sha256 in turn (full_sha256 and members_sha256 alike)."""
    h.update(name.encode() + b"\0" + digest.encode())


def source_bytes(path: Path) -> int:
    """The input's size: the file's, or the sum of a directory's files (runs.source_bytes)."""
    if path.is_dir():
        return sum(p.stat().st_size for p in path.iterdir() if p.is_file())
    return path.stat().st_size


def _holds_cached_bytes(
    path: Path, entry: Path, meta: dict[str, Any], stats: tuple[list[list[Any]], bool], progress: ProgressFn
) -> tuple[bool, str | None]:
    """Whether `path` still holds the bytes the entry was built from, and the sha256 if it was computed.

    A known stat fingerprint answers at once; otherwise the whole input is hashed (once: an equal
    sha256 keeps the new fingerprint in meta.json, so the next open is instant again).
    """
    current, settled = stats
    if trusted(meta, current):
        return True, None
    sha = full_sha256(path, progress)
    if sha != meta.get("source_sha256"):  # an entry of older code (no sha256) is rebuilt too
        return False, sha
    if settled:
        latest = read_entry_meta(entry)  # another process may have changed it meanwhile
        if latest is not None and latest.get("source_sha256") == sha:
            known = [s for s in known_stats(latest) if s != current]
            replace_entry_meta(entry, dict(latest, source_stats=[*known, current][-KEPT_STATS:]))
    return True, sha


def parse(path: Path, fmt: str, options: ParseOptions) -> ParsedRun:
    """Parse with the format's parser; a compressed input is first decompressed into the work dir."""
    form = registry.get(fmt)
    inner = form.unpacked_name(path) if options.work_dir is not None else None
    if inner is None or options.work_dir is None:
        return form.parse(path, options)
    try:
        source = _decompress_to(path, options.work_dir / inner, options.max_json_bytes)
    except (OSError, EOFError) as e:
        raise InputError(f"{path}: compressed input is damaged ({e})", "re-copy or re-export it") from None
    try:
        return form.parse(source, options)
    except AdvisorError as e:  # name the user's file, not our decompressed copy of it
        _renamed(e, str(source), str(path))
        raise


def _renamed(e: AdvisorError, old: str, new: str) -> None:
    e.message = e.message.replace(old, new)
    e.args = (e.message,)


def _naming_input(e: AdvisorError, path: Path) -> None:
    """The error with the input named and a hint, whatever layer raised it (the one-line contract)."""
    if str(path) not in e.message:
        e.message = f"{path}: {e.message}"
        e.args = (e.message,)
    if not e.hint:
        e.hint = "the trace looks damaged or was written by an exporter version advisor does not know; re-export it"


def _conform(name: str, table: pa.Table, path: Path) -> pa.Table:
    """conform(), with a value that does not fit the model's column type (damaged input) as a clean error."""
    import pyarrow as pa

    try:
        return conform(name, table, str(path))
    except (pa.ArrowInvalid, pa.ArrowTypeError) as e:
        raise SchemaError(f"{path}: a {name} value does not fit the model ({str(e).splitlines()[0][:160]})",
                          "the trace holds out-of-range values; re-export it", path=str(path)) from None


def _check_file(name: str, file: Path, path: Path, con: duckdb.DuckDBPyConnection | None) -> FileCheck:
    """check_file(), with a damaged or unreadable file as a clean error naming the input."""
    try:
        return check_file(name, file, str(path), con)
    except duckdb.Error as e:
        raise SchemaError(f"{path}: the {name} table written while parsing is unreadable ({_first(e)})",
                          "the trace looks damaged; re-export it", path=str(path)) from None


def _first(e: BaseException) -> str:
    return (str(e).strip().splitlines() or [type(e).__name__])[0][:160]


def _check_files(
    parsed: ParsedRun, tables: dict[str, pa.Table], path: Path, con: duckdb.DuckDBPyConnection | None
) -> dict[str, FileCheck]:
    """Every file the parser wrote checked against the schema, and the id counts, all on one DuckDB: `con`, else
    one of their own (a new DuckDB costs ~20 ms to make and slows the process after it, so the cold path lends
    its run's). A parse that wrote no file needs none."""
    if parsed.files and con is None:
        with scratch() as own:
            return _check_files(parsed, tables, path, own)
    checks = {name: _check_file(name, f, path, con) for name, f in parsed.files.items() if name != "runs"}
    _check_ids(path, tables, parsed.files, con)
    return checks


def _check_ids(
    path: Path, tables: dict[str, pa.Table], files: dict[str, Path], con: duckdb.DuckDBPyConnection | None
) -> None:
    """Distinct device ids and (device, stream) pairs of kernels and copies against the caps in
    advisor/model/limits.py: absurd counts are refused, not analyzed. Exact counts: a real trace has few
    groups, so the hash aggregates are cheap (DuckDB's HyperLogLog was 9% off at 20k). Written files are
    grouped by DuckDB (`con`), tables in memory by Arrow, so a parse that wrote none opens no DuckDB."""
    import pyarrow as pa
    import pyarrow.compute as pc

    cols = ["device_id", "stream_id"]
    parts = [tables[n].select(cols).group_by(cols).aggregate([])
             for n in ("kernels", "memops") if n not in files and n in tables]
    written = [f"SELECT DISTINCT device_id, stream_id FROM read_parquet({sql_string(files[n])})"
               for n in ("kernels", "memops") if n in files]
    if written:  # 10M rows of 8 devices x 32 streams: 0.26-0.35 s; _check_files lends a DuckDB for written files
        assert con is not None
        parts.append(con.execute(" UNION ".join(written)).to_arrow_table())
    if parts:  # the distinct pairs of each source (a few rows), then of all of them
        pairs = pa.concat_tables(parts, promote_options="permissive").group_by(cols).aggregate([])
        check_cardinality(str(path), pc.count_distinct(pairs["device_id"]).as_py(), pairs.num_rows)


def to_model_tables(
    parsed: ParsedRun, path: Path, fmt: str, sha: str, con: duckdb.DuckDBPyConnection | None = None
) -> tuple[dict[str, pa.Table], dict[str, tuple[Path, int]]]:
    """Conform every table to the schema (check every written file, on `con` when given) and build the `runs` row.

    Returns the Arrow tables and the checked Parquet files with their row counts.
    """
    # Redact once, here, before anything is cached or shown (advisor/redact.py): every string of the model.
    tables = {name: redact_table(_conform(name, t, path)) for name, t in parsed.tables.items() if name != "runs"}
    redact_parquet(parsed.files.values(), con)
    checks = _check_files(parsed, tables, path, con)
    notes = redact_values(dict(parsed.notes))
    for name in ("kernels", "memops", "api_calls", "ranges", "cpu_ops"):
        bad = check_time_order(name, tables[name]) if name in tables else 0
        bad = checks[name].end_before_start if name in checks else bad
        if bad:
            notes[f"{name}_end_before_start"] = bad
    starts, ends = [], []
    for name in ("kernels", "memops", "api_calls", "ranges", "cpu_ops", "sync"):
        t = tables.get(name)
        if t is not None and t.num_rows:
            import pyarrow.compute as pc

            starts.append(pc.min(t["start_ns"]).as_py())
            ends.append(pc.max(t["end_ns"]).as_py())
        c = checks.get(name)
        if c is not None and c.rows:
            starts.append(c.min_start_ns)
            ends.append(c.max_end_ns)
    run = redact_values(dict(parsed.run))
    run.update(
        source_path=str(path).encode("utf-8", "surrogateescape").decode("utf-8", "replace"),  # a non-UTF-8 name
        source_sha256=sha,
        source_bytes=source_bytes(path),
        format=run.get("format", fmt),
        trace_start_ns=min(starts) if starts else None,
        trace_end_ns=max(ends) if ends else None,
        captured=",".join(sorted(parsed.captured & set(TABLES))),
        notes=json.dumps(notes, sort_keys=True, default=str),
    )
    import pyarrow as pa

    tables["runs"] = conform("runs", pa.Table.from_pylist([run]), str(path))
    return tables, {name: (parsed.files[name], c.rows) for name, c in checks.items()}


class _Sha256:
    """The input's full sha256, computed in a thread while the parse runs (hashlib releases the GIL)."""

    def __init__(self, path: Path, known: str | None = None) -> None:
        self._path = path
        self._digest: str | None = known  # already hashed while checking a cache entry: not read twice
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="advisor-sha256", daemon=True)
        if known is None:
            self._thread.start()

    def _run(self) -> None:
        try:
            self._digest = full_sha256(self._path)
        except BaseException as e:  # noqa: BLE001 - re-raised in the caller's thread by result()
            self._error = e

    def result(self) -> str:
        if self._thread.ident is not None:  # started: not given a known digest
            self._thread.join()
        if self._error is not None:
            raise self._error
        assert self._digest is not None
        return self._digest


def open_run(
    path: str | os.PathLike[str],
    options: ParseOptions | None = None,
    cache_dir: Path | None = None,
    use_cache: bool = True,
) -> Run:
    """Ingest (or re-open from cache) one trace and return the Run to query; with `options.gpu` (--gpu NAME),
    the run names its unnamed GPUs so (`Run.with_gpu_name`), leaving the cache entry as the trace made it."""
    run = _open_run(path, options, cache_dir, use_cache)
    return run.with_gpu_name(options.gpu) if options is not None and options.gpu else run


def _open_run(
    path: str | os.PathLike[str],
    options: ParseOptions | None = None,
    cache_dir: Path | None = None,
    use_cache: bool = True,
) -> Run:
    """Ingest (or re-open from cache) one trace and return the Run to query.

    The cache rules (sampled name, sha256 identity, stat fingerprints) are in the module docstring.
    Concurrent cold opens of one input take turns on the entry's ingest lock: the first parses and
    publishes, the others open what it published (advisor.model.workarea). With `use_cache` False,
    or a cache directory that cannot be written, nothing is written to the cache directory.
    """
    options = options or ParseOptions()
    p = Path(path)
    if not p.exists():
        raise InputError(f"{p}: no such file or directory", "check the path")
    if not p.is_dir() and not stat.S_ISREG(p.stat().st_mode):  # a FIFO would block the read forever
        raise InputError(f"{p}: not a regular file (a pipe, socket or device)", "save the trace to a file first")
    form = registry.detect(p)
    fmt = form.name
    root = cache_dir or default_cache_dir()
    stats = stat_fingerprint(p)  # before reading: a change while we read shows as a different stat next time
    key = entry_name(p, form.version)
    if not use_cache:
        return _ingest_uncached(p, fmt, options, key, None, {})
    cached, known_sha = _from_cache(p, root / key, stats, options)
    if cached is not None:
        return cached
    try:
        with ingest_lock(root, key, lambda: options.progress(0, 1, "waiting for another advisor ingesting this trace")):
            cached, known = _from_cache(p, root / key, stats, options)  # published while we waited?
            if cached is not None:
                return cached
            return _ingest(p, fmt, options, root, key, stats, known or known_sha)
    except CacheUnwritable as e:
        return _ingest_uncached(p, fmt, options, key, known_sha, {"cache_not_written": _unwritable_note(root, e)})


def _unwritable_note(root: Path, e: OSError) -> str:
    return f"the cache directory {root} cannot be written ({e.strerror or e}): this run was parsed without caching"


def _from_cache(p: Path, entry: Path, stats: tuple[list[list[Any]], bool],
                options: ParseOptions) -> tuple[Run | None, str | None]:
    """The cached run when the entry is valid, intact and holds these bytes; else (None, sha256 if hashed).

    An entry that fails any check (other bytes, damaged files, a regular file in its place) is discarded.
    """
    meta = read_entry_meta(entry)
    if meta is None:
        if entry.exists() or entry.is_symlink():
            discard(entry)  # a broken entry or something else in its place: rebuilt by the caller
        return None, None
    same, known_sha = _holds_cached_bytes(p, entry, meta, stats, options.progress)
    cached = _open_cached(entry, meta) if same else None
    if cached is not None:
        cached.info["source_path"] = str(p)  # same bytes may have been cached under another name
        return cached, known_sha
    discard(entry)  # other bytes, or a corrupted entry: rebuild it
    return None, known_sha


def _parse_tables(
    p: Path, fmt: str, options: ParseOptions, work: Path, known_sha: str | None,
    con: duckdb.DuckDBPyConnection | None = None,
) -> tuple[str, dict[str, pa.Table], dict[str, tuple[Path, int]], float]:
    """Parse into `work` and conform (checks on `con` when given): (sha256, tables, checked files, seconds)."""
    t0 = time.perf_counter()
    options.work_dir = work
    sha_job = _Sha256(p, known_sha)
    try:
        parsed = parse(p, fmt, options)
        sha = sha_job.result()
        tables, files = to_model_tables(parsed, p, fmt, sha, con)
    except AdvisorError as e:
        _naming_input(e, p)
        raise
    except MemoryError:
        raise out_of_memory(p) from None
    return sha, tables, files, round(time.perf_counter() - t0, 3)


def _ingest_uncached(
    p: Path, fmt: str, options: ParseOptions, key: str, known_sha: str | None, notes: dict[str, Any]
) -> Run:
    """Parse into a private temp folder and serve the run from memory: nothing goes to the cache dir."""
    import pyarrow.parquet as pq

    work = work_dir(None, key)
    try:
        sha, tables, files, seconds = _parse_tables(p, fmt, options, work, known_sha)
        tables.update({n: conform(n, pq.read_table(f), str(p)) for n, (f, _) in files.items()})
    finally:
        _rmtree_quiet(work)
    if notes:
        tables["runs"] = _with_notes(tables["runs"], notes, p)
    rows = {n: {"rows": tables[n].num_rows if n in tables else 0} for n in TABLES}
    return Run.from_tables(tables, {"source": str(p), "format": fmt, "parse_seconds": seconds, "files": rows})


def _with_notes(runs: pa.Table, extra: dict[str, Any], p: Path) -> pa.Table:
    """The runs row with `extra` added to its notes (facts found outside the parser, e.g. an unwritable cache)."""
    row = runs.to_pylist()[0]
    notes = json.loads(row.get("notes") or "{}") | extra
    row["notes"] = json.dumps(notes, sort_keys=True, default=str)
    import pyarrow as pa

    return conform("runs", pa.Table.from_pylist([row]), str(p))


def _ingest(
    p: Path,
    fmt: str,
    options: ParseOptions,
    root: Path,
    key: str,
    stats: tuple[list[list[Any]], bool],
    known_sha: str | None,
) -> Run:
    """The cold path: parse in this process's own work dir, publish the entry atomically, open it. The run's
    DuckDB is made first and checks the parse's files (one DuckDB for the whole command)."""
    con = entry_connection(root)
    try:
        work = work_dir(root, key)
        try:
            sha, tables, files, seconds = _parse_tables(p, fmt, options, work, known_sha, con)
            current, settled = stats
            meta = {"source": str(p), "format": fmt, "parse_seconds": seconds,
                    "source_sha256": sha, "source_stats": [current] if settled else []}
            try:  # moves the files out of the work dir
                written = write_entry(root, key, tables, meta, files, staging=work.parent)
            except OSError as e:  # the cache filled up or turned read-only mid-way
                raise CacheUnwritable(e.errno or 0, str(e)) from None
        finally:
            _rmtree_quiet(work)
        final_meta = read_entry_meta(written)
        if final_meta is None or final_meta.get("source_sha256") != sha:
            # Another process cached other bytes under the same sampled name at the same moment and its
            # entry won the rename. Ours are gone with the work dir: serve this input uncached, correctly.
            con.close()
            return _ingest_uncached(p, fmt, options, key, sha, {})
        return Run.from_entry(written, final_meta, con)
    except BaseException:
        con.close()
        raise


def out_of_memory(p: Path) -> InputError:
    """Running out of memory while parsing, as one line that names the limit and what to do."""
    return LimitExceeded(f"{p}: ran out of memory while parsing",
                         "free memory or raise the process's memory limit (ulimit -v); see docs/limits.md")


def drop_entry(entry: Path) -> None:
    """Remove a damaged cache entry (advisor.model.store.CacheDamaged) so the next open ingests again."""
    discard(entry)


def _open_cached(entry: Path, meta: dict[str, Any]) -> Run | None:
    """The cached run, or None when its files are damaged (then the caller rebuilds it)."""
    if not verify_entry(entry, meta):
        return None
    try:
        run = Run.from_entry(entry, meta)
    except Exception:  # noqa: BLE001 - unreadable cache entry, never the user's problem
        return None
    if run.footers_match():
        return run
    run.close()
    return None


def _rmtree_quiet(p: Path) -> None:
    import shutil

    shutil.rmtree(p, ignore_errors=True)
