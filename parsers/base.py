"""The contract between parsers and the store."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # a parse imports Arrow; opening a cached run does not
    import pyarrow as pa

from advisor.parsers.limits import MAX_STRING_CHARS, max_bytes

# progress(done_units, total_units, label); parsers call it now and then, never per event
ProgressFn = Callable[[float, float, str], None]


def no_progress(done: float, total: float, label: str) -> None:
    return None


@dataclass
class ParseOptions:
    """Knobs a user can turn at ingest time."""

    nsys: str | None = None  # path to the nsys executable for .nsys-rep
    work_dir: Path | None = None  # where a parser may write intermediates (inside the cache, never near input)
    progress: ProgressFn = no_progress
    # decompressed-size limit (Kineto JSON, gzip'd SQLite): $ADVISOR_MAX_BYTES or 16 GiB; see parsers/limits.py
    max_json_bytes: int = field(default_factory=max_bytes)
    # --gpu NAME: the GPU to assume where the trace names none (applied by ingest.open_run after parsing, never
    # cached: the same bytes open without it next time)
    gpu: str | None = None


@dataclass
class ParsedRun:
    """What a parser returns.

    `tables` maps model table names to Arrow tables (any subset; absent = empty). `run` holds the
    `runs` row fields the parser knows (format, tool, tool_version, ...; ingest adds source_*).
    `captured` names the model tables this capture recorded at all, even when empty.
    `notes` are format facts worth keeping (quirks, dropped rows), serialized to runs.notes.
    `files` maps model table names to Parquet files the parser already wrote into its work dir (a
    table is in `tables` or in `files`, never both): large tables go to disk without passing through
    Python, and ingest checks each file against the schema (`advisor.model.validate.check_file`,
    the same guarantees as `conform`) before moving it into the cache entry.
    """

    tables: dict[str, pa.Table]
    run: dict[str, Any]
    captured: set[str] = field(default_factory=set)
    notes: dict[str, Any] = field(default_factory=dict)
    files: dict[str, Path] = field(default_factory=dict)


class Interner:
    """Assigns stable int ids to strings; `table()` returns the `strings` model table."""

    def __init__(self) -> None:
        self._ids: dict[str, int] = {}

    def id(self, value: str | None) -> int | None:
        if value is None:
            return None
        if len(value) > MAX_STRING_CHARS:  # see parsers/limits.py: names are cut, never refused
            value = value[:MAX_STRING_CHARS]
        got = self._ids.get(value)
        if got is None:
            got = self._ids[value] = len(self._ids)
        return got

    def ids(self, values: Iterable[str | None]) -> list[int | None]:
        return [self.id(v) for v in values]

    def table(self) -> pa.Table:
        import pyarrow as pa

        return pa.table(
            {
                "string_id": pa.array(list(self._ids.values()), pa.int64()),
                "value": pa.array(list(self._ids.keys()), pa.string()),
            }
        )
