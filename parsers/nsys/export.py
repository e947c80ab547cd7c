"""What an attached nsys export holds (`Export`), and the SQL built from the mapping data.

Everything that differs between nsys versions (table and column names, enum codes, which event
classes to drop) lives in `mappings/nsys.toml`, so supporting a new export schema is a data change;
the functions here turn that data into SELECTs over the attached export.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa

from advisor.errors import InputError, SchemaError
from advisor.model.schema import TABLES
from advisor.model.validate import duck_type
from advisor.parsers.nsys.reader import REEXPORT_HINT, first_line, mapping, sql_str


@dataclass
class Export:
    """What the attached export contains: its tables with their columns, and its versions."""

    path: Path
    con: duckdb.DuckDBPyConnection
    columns: dict[str, set[str]] = field(default_factory=dict)
    meta: dict[str, str] = field(default_factory=dict)
    meta_table: str | None = None
    temps: set[str] = field(default_factory=set)  # temp tables created so far (cheaper than asking DuckDB)
    views: set[str] = field(default_factory=set)  # those of them that are views

    @classmethod
    def inspect(cls, path: Path, con: duckdb.DuckDBPyConnection) -> Export:
        exp = cls(path, con)
        rows = exp.rows("SELECT table_name, column_name FROM duckdb_columns() WHERE database_name = 'src'")
        for table, column in rows:
            exp.columns.setdefault(table, set()).add(column)
        if "StringIds" not in exp.columns:
            raise InputError(
                f"{path}: SQLite file is not an Nsight Systems export (no StringIds table)",
                "pass a file written by `nsys export --type sqlite`",
            )
        exp.meta_table = next((t for t in mapping()["meta_tables"] if t in exp.columns), None)
        if exp.meta_table:
            exp.meta = {str(k): str(v) for k, v in exp.rows(f"SELECT name, value FROM src.{exp.meta_table}")}
        return exp

    @property
    def version(self) -> str:
        keys = mapping()["meta_keys"]
        return self.meta.get(keys["export_schema"]) or "unknown"

    @property
    def tool_version(self) -> str | None:
        return self.meta.get(mapping()["meta_keys"]["tool_version"])

    def describe(self) -> str:
        return f"export schema {self.version}, Nsight Systems {self.tool_version or 'unknown'}"

    def resolve(self, table: str) -> str | None:
        """The table's name in this export (with a version suffix if that is what exists)."""
        suffixes: list[str] = mapping()["table_suffixes"]
        for suffix in suffixes:
            if table + suffix in self.columns:
                return table + suffix
        return None

    def rows(self, sql: str) -> list[tuple[Any, ...]]:
        try:
            return self.con.execute(sql).fetchall()
        except (duckdb.Error, UnicodeDecodeError) as e:
            raise self.read_error(e) from None

    def create(self, name: str, sql: str, view: bool = False) -> None:
        """CREATE TEMP TABLE (or VIEW) name AS sql, remembered for `has()` and `drop()`."""
        self.run(f"CREATE TEMP {'VIEW' if view else 'TABLE'} {name} AS {sql}")
        self.temps.add(name)
        if view:
            self.views.add(name)

    def drop(self, name: str) -> None:
        """Drop a temp table as soon as nothing needs it: its rows leave DuckDB's memory (and spill files)."""
        if name in self.temps:
            self.run(f"DROP {'VIEW' if name in self.views else 'TABLE'} IF EXISTS {name}")
            self.temps.discard(name)
            self.views.discard(name)

    def run(self, sql: str) -> None:
        try:
            self.con.execute(sql)
        except (duckdb.Error, UnicodeDecodeError) as e:
            raise self.read_error(e) from None

    def arrow(self, sql: str) -> pa.Table:
        try:
            return self.con.execute(sql).to_arrow_table()
        except (duckdb.Error, UnicodeDecodeError) as e:  # a TEXT cell holding bytes that are not UTF-8
            raise self.read_error(e) from None

    def read_error(self, e: duckdb.Error | UnicodeDecodeError) -> InputError:
        return InputError(f"{self.path}: cannot read the SQLite export ({first_line(e)})", REEXPORT_HINT)

    def missing_column(self, table: str, column: str, purpose: str) -> SchemaError:
        return SchemaError(
            f"{self.path}: required column {table}.{column} is missing ({self.describe()}); needed for {purpose}",
            REEXPORT_HINT,
            path=str(self.path),
        )


def model_select(exp: Export, name: str, sql: str) -> str:
    """`sql` reshaped to exactly the model columns of `name`, in order, cast to the model types.

    A column the query lacks becomes a typed NULL (a required one then fails the null check); a
    column the model lacks is a parser bug, as in `conform`.
    """
    try:
        have = exp.con.sql(sql).columns  # binds the query, runs nothing
    except (duckdb.Error, UnicodeDecodeError) as e:
        raise exp.read_error(e) from None
    spec = TABLES[name]
    unknown = set(have) - {c.name for c in spec.columns}
    if unknown:
        raise SchemaError(f"parser produced unknown columns {sorted(unknown)} for table {name}", path=str(exp.path))
    cols = [
        f"CAST({q(c.name)} AS {duck_type(c.dtype)}) AS {q(c.name)}" if c.name in have
        else f"NULL::{duck_type(c.dtype)} AS {q(c.name)}"
        for c in spec.columns
    ]
    return f"SELECT {', '.join(cols)} FROM ({sql})"


# --------------------------------------------------------------------------------------------- SQL


def q(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def enum_case(exp: Export, enum_name: str, raw_sql: str) -> str:
    """A CASE expression mapping raw codes to model values: from the ENUM_* table, else the fallback."""
    spec = mapping()["enums"][enum_name]
    codes: dict[int, str] = {int(k): v for k, v in spec["fallback"].items()}
    if spec["table"] in exp.columns:
        names: Mapping[str, str] = spec["names"]
        codes = {int(i): names[n] for i, n in exp.rows(f"SELECT id, name FROM src.{spec['table']}") if n in names}
    whens = " ".join(f"WHEN {code} THEN '{sql_str(value)}'" for code, value in sorted(codes.items()))
    default = f"'{spec['default']}'"
    return f"CASE {raw_sql} {whens} ELSE {default} END" if whens else default


def select_source(exp: Export, source: str, row_key: bool = False) -> str | None:
    """SELECT of one mapped source table with model column names, or None when not captured.

    With `row_key`, also the SQLite rowid as `src_row`: the export's own row order, which then survives
    a scan that does not keep it (see `unordered`).
    """
    spec = mapping()["sources"][source]
    table = exp.resolve(spec["table"])
    if table is None:
        return None
    have = exp.columns[table]
    parts = ["rowid AS src_row"] if row_key else []
    for model_col, col in spec["columns"].items():
        parts.append(f"{column_sql(exp, table, have, model_col, col)} AS {model_col}")
    where = ""
    if spec.get("skip_event_classes") and "eventClass" in have:
        skipped = ", ".join(str(int(c)) for c in spec["skip_event_classes"])
        where = f" WHERE coalesce(eventClass, -1) NOT IN ({skipped})"
    return f"SELECT {', '.join(parts)} FROM src.{q(table)}{where}"


def column_sql(exp: Export, table: str, have: set[str], model_col: str, col: Mapping[str, Any]) -> str:
    """SQL for one mapped column: first present candidate, templated, enum-mapped; NULL if absent."""
    raw = next((c for c in col["from"] if c in have), None)
    if raw is None or any(n not in have for n in col.get("needs", [])):
        if col.get("required"):
            raise exp.missing_column(table, col["from"][0], model_col)
        return "NULL"
    sql = col["expr"].format(c=q(raw)) if "expr" in col else q(raw)
    if "enum" in col:
        sql = enum_case(exp, col["enum"], sql)
    return sql


def in_list(values: list[Any]) -> str:
    return ", ".join(str(int(v)) for v in values) or "NULL"


def load_events(
    exp: Export, notes: dict[str, Any], sources: list[str], view: bool = False, row_key: bool = False
) -> set[str]:
    """Mapped event sources as temp tables `raw_<source>`; return the captured model tables.

    With `view`, a view instead: the export is read once, by the query that writes the model table,
    and nothing is materialized (later steps read that model table's output instead). `row_key`: see
    `select_source`.
    """
    captured: set[str] = set()
    for source in sources:
        spec = mapping()["sources"][source]
        sql = select_source(exp, source, row_key)
        if sql is None:
            continue
        exp.create(f"raw_{source}", sql, view=view)
        captured.update(spec["captures"])
        table = exp.resolve(spec["table"])
        if spec.get("skip_event_classes") and table and "eventClass" in exp.columns[table]:
            skipped = exp.rows(
                f"SELECT count(*) FROM src.{q(table)} WHERE eventClass IN ({in_list(spec['skip_event_classes'])})"
            )[0][0]
            if skipped:
                notes[f"{table}_rows_skipped_by_event_class"] = int(skipped)
    return captured


@contextmanager
def unordered(exp: Export) -> Iterator[None]:
    """Let a CREATE TABLE AS read the export on every thread.

    With DuckDB's default insertion order, a scan of the SQLite scanner (which has no batch order) is
    inserted by one thread. Whoever needs the export order reads it from `src_row` (`row_key`).
    """
    exp.run("SET preserve_insertion_order = false")
    try:
        yield
    finally:
        exp.run("RESET preserve_insertion_order")


def has(exp: Export, temp: str) -> bool:
    return temp in exp.temps
