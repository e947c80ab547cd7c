"""Check and conform parser output to the model schema."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc

from advisor.errors import SchemaError
from advisor.model.schema import TABLES


def conform(name: str, table: pa.Table, source: str = "") -> pa.Table:
    """Return `table` with exactly the model columns of `name`, in order and cast to model types.

    Missing optional columns become nulls; unknown columns are an error (a parser bug, not user
    input); required columns must be present and non-null.
    """
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
    bad = pc.less(table.column("end_ns"), table.column("start_ns"))
    return int(pc.sum(bad).as_py() or 0)
