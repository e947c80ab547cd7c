"""Check and conform parser output to the model schema.

Two ways in, one set of guarantees: Arrow tables go through `conform`; Parquet files a parser wrote
itself (nsys, straight from DuckDB) go through `check_file`. Either way a model table has exactly
the model's columns in order, with the model's types, and no null in a required column.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from advisor.errors import SchemaError
from advisor.model.schema import TABLES
from advisor.model.store import scratch, sql_string

if TYPE_CHECKING:  # Arrow loads with the tables a parse conforms; checking written files needs only DuckDB
    import duckdb
    import pyarrow as pa


def conform(name: str, table: pa.Table, source: str = "") -> pa.Table:
    """Return `table` with exactly the model columns of `name`, in order and cast to model types.

    Missing optional columns become nulls; unknown columns are an error (a parser bug, not user
    input); required columns must be present and non-null.
    """
    import pyarrow as pa

    spec = TABLES[name]
    unknown = set(table.column_names) - {c.name for c in spec.columns}
    if unknown:
        raise SchemaError(f"parser produced unknown columns {sorted(unknown)} for table {name}", path=source)
    arrays = []
    n = table.num_rows
    for col in spec.columns:
        if col.name in table.column_names:
            arr = table.column(col.name)
            if pa.types.is_dictionary(arr.type):
                arr = arr.cast(arr.type.value_type)
            if arr.type != col.dtype:
                arr = arr.cast(col.dtype)
            if col.required and arr.null_count:
                raise SchemaError(
                    f"{arr.null_count} rows of {name}.{col.name} are empty but the column is required",
                    path=source,
                )
        else:
            if col.required and n:
                raise SchemaError(f"parser did not fill required column {name}.{col.name}", path=source)
            arr = pa.nulls(n, col.dtype)
        arrays.append(arr)
    return pa.Table.from_arrays(arrays, schema=spec.arrow_schema)


def check_time_order(name: str, table: pa.Table) -> int:
    """Number of rows whose end precedes their start (kept, but reported in run notes)."""
    if table.num_rows == 0 or "end_ns" not in table.column_names:
        return 0
    import pyarrow.compute as pc  # ~0.1 s of import a warm open never needs: only parses check times

    bad = pc.less(table.column("end_ns"), table.column("start_ns"))
    return int(pc.sum(bad).as_py() or 0)


# model Arrow type (its name in the schema, or as Arrow prints it) -> the DuckDB type it is stored and read back
# as (the schema uses only these)
DUCK_TYPES: dict[str, str] = {
    "int32": "INTEGER",
    "int64": "BIGINT",
    "float64": "DOUBLE",
    "double": "DOUBLE",
    "string": "VARCHAR",
}


def duck_type(dtype: pa.DataType | str) -> str:
    return DUCK_TYPES[str(dtype)]


@dataclass(frozen=True)
class FileCheck:
    """What `check_file` learnt while checking: row count and the time facts ingest needs."""

    rows: int
    end_before_start: int  # as check_time_order
    min_start_ns: int | None
    max_end_ns: int | None


def check_file(name: str, path: Path, source: str = "", con: duckdb.DuckDBPyConnection | None = None) -> FileCheck:
    """Check a parser-written Parquet file of model table `name`; the guarantees of `conform`.

    Columns: exactly the model's, in order, each with the model's type (as DuckDB reads it back,
    which is how every analysis reads the cache). Required columns: no nulls. One scan of the
    required and time columns, so it costs a fraction of writing the file. `con`: a DuckDB connection to
    use (ingest checks all of a parse's files on one: a new DuckDB database costs ~20 ms to create, more
    than checking a small file); without it, one is opened for this file.
    """
    if con is None:
        with scratch() as own:
            return check_file(name, path, source, own)
    spec = TABLES[name]
    lit = sql_string(path)
    got = [(r[0], r[1]) for r in con.execute(f"DESCRIBE SELECT * FROM read_parquet({lit})").fetchall()]
    want = [(c.name, duck_type(c.type_name)) for c in spec.columns]
    if got != want:
        raise SchemaError(f"parser wrote table {name} with columns {got}, the model has {want}", path=source)
    have = {c.name for c in spec.columns}
    times = "start_ns" in have and "end_ns" in have
    aggs = ["count(*)"]
    aggs += [f'count(*) FILTER (WHERE "{c.name}" IS NULL)' for c in spec.columns if c.required]
    aggs += ["count(*) FILTER (WHERE end_ns < start_ns)", "min(start_ns)", "max(end_ns)"] if times else []
    row = con.execute(f"SELECT {', '.join(aggs)} FROM read_parquet({lit})").fetchone()
    assert row is not None
    rows, rest = int(row[0]), list(row[1:])
    for col in (c for c in spec.columns if c.required):
        nulls = int(rest.pop(0))
        if nulls:
            raise SchemaError(f"{nulls} rows of {name}.{col.name} are empty but the column is required", path=source)
    if not times:
        return FileCheck(rows, 0, None, None)
    return FileCheck(rows, int(rest[0]), rest[1], rest[2])
