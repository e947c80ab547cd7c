"""Nsight Systems unified-memory events -> model tables `um_faults` and `um_migrations`.

Kept apart from parsers/nsys/sqlite.py (which calls `queries()` on its attached export) because the
unified-memory tables are their own small world: two fault tables that exist only when the capture
asked for them (`--cuda-um-cpu-page-faults=true --cuda-um-gpu-page-faults=true`), and migrations that
are memcpy rows with a unified copy kind and a migration cause. Names and enum codes are data in
`mappings/nsys_um.toml`.

A fault table the export lacks is "not captured" (nsys also leaves out a table that would be empty,
so a capture that asked for CPU faults and had none looks the same): nothing is guessed, and the
notes say which fault tables the export had.
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from functools import cache
from importlib import resources
from typing import Any

from advisor.parsers.nsys.export import Export, q

PID = "((({c}) >> 24) & 16777215)"  # globalPid -> pid, as everywhere in the nsys export


@cache
def mapping() -> dict[str, Any]:
    text = resources.files("advisor.parsers").joinpath("mappings/nsys_um.toml").read_text(encoding="utf-8")
    return tomllib.loads(text)


def queries(exp: Export, notes: dict[str, Any]) -> dict[str, str]:
    """SQL (over the attached export `src`) for each unified-memory model table the export captured."""
    out: dict[str, str] = {}
    faults = faults_sql(exp, notes)
    if faults:
        out["um_faults"] = faults
    migrations = migrations_sql(exp)
    if migrations:
        out["um_migrations"] = migrations
    return out


def faults_sql(exp: Export, notes: dict[str, Any]) -> str | None:
    """CPU and GPU fault rows, or None when the export has neither fault table."""
    m = mapping()
    parts = []
    found = []
    cpu = exp.resolve(m["cpu_faults"]["table"])
    if cpu is not None:
        found.append(cpu)
        c = _columns(exp, cpu, m["cpu_faults"], "um_faults (CPU page faults)")
        parts.append(
            f"SELECT 'cpu' AS kind, NULL::INTEGER AS device_id, {_pid(c)} AS pid, NULL::BIGINT AS tid, "
            f"{c['start']} AS start_ns, {c['start']} AS end_ns, {c['address']} AS address, "
            f"1::BIGINT AS fault_count, NULL::VARCHAR AS access FROM src.{q(cpu)}"
        )
    gpu = exp.resolve(m["gpu_faults"]["table"])
    if gpu is not None:
        found.append(gpu)
        c = _columns(exp, gpu, m["gpu_faults"], "um_faults (GPU page faults)")
        count = f"coalesce({c['count']}, 1)" if c["count"] != "NULL" else "1"
        access = _enum_case(exp, m["enums"]["access"], c["access"]) if c["access"] != "NULL" else "NULL"
        parts.append(
            f"SELECT 'gpu' AS kind, {c['device']} AS device_id, {_pid(c)} AS pid, NULL::BIGINT AS tid, "
            f"{c['start']} AS start_ns, {c['end']} AS end_ns, {c['address']} AS address, "
            f"{count} AS fault_count, {access} AS access FROM src.{q(gpu)}"
        )
    notes["um_fault_tables"] = ", ".join(found) or "none"
    return " UNION ALL BY NAME ".join(parts) or None


def migrations_sql(exp: Export) -> str | None:
    """Memcpy rows with a unified copy kind, with direction and cause; None without a memcpy table."""
    spec = mapping()["migrations"]
    table = exp.resolve(spec["table"])
    if table is None:
        return None
    have = exp.columns[table]
    for col in ("deviceId", "start", "end", "copyKind"):
        if col not in have:
            raise exp.missing_column(table, col, "um_migrations")
    kinds = _codes(exp, spec["kind_enum_table"], spec["kinds"], spec["kinds_fallback"])
    if not kinds:
        return None
    direction = " ".join(f"WHEN {code} THEN '{value}'" for code, value in sorted(kinds.items()))
    cause_col = spec["cause_column"]
    cause = _enum_case(exp, mapping()["enums"]["cause"], q(cause_col)) if cause_col in have else "'unknown'"
    address = q(spec["address_column"]) if spec["address_column"] in have else "NULL"
    nbytes = '"bytes"' if "bytes" in have else "NULL"
    codes = ", ".join(str(c) for c in sorted(kinds))
    return (
        f'SELECT "deviceId" AS device_id, "start" AS start_ns, "end" AS end_ns, '
        f"CASE \"copyKind\" {direction} ELSE 'unknown' END AS direction, {cause} AS cause, "
        f'{nbytes} AS bytes, {address} AS address FROM src.{q(table)} WHERE "copyKind" IN ({codes})'
    )


# --------------------------------------------------------------------------------------------- helpers


def _columns(exp: Export, table: str, spec: Mapping[str, Any], purpose: str) -> dict[str, str]:
    """Model name -> quoted raw column (or NULL when an optional one is absent)."""
    have = exp.columns[table]
    out: dict[str, str] = {}
    for name, col in spec.items():
        if not isinstance(col, dict):
            continue
        raw = str(col["from"])
        if raw in have:
            out[name] = q(raw)
        elif col.get("required"):
            raise exp.missing_column(table, raw, purpose)
        else:
            out[name] = "NULL"
    return out


def _pid(c: Mapping[str, str]) -> str:
    return PID.format(c=c["global_pid"]) if c["global_pid"] != "NULL" else "NULL::BIGINT"


def _codes(exp: Export, enum_table: str, names: Mapping[str, str], fallback: Mapping[str, str]) -> dict[int, str]:
    """Raw code -> model value, from the export's enum table when it has one, else the fallback codes."""
    if enum_table in exp.columns and {"id", "name"} <= exp.columns[enum_table]:
        return {int(i): names[n] for i, n in exp.rows(f"SELECT id, name FROM src.{q(enum_table)}") if n in names}
    return {int(k): v for k, v in fallback.items()}


def _enum_case(exp: Export, spec: Mapping[str, Any], raw_sql: str) -> str:
    codes = _codes(exp, spec["table"], spec["names"], spec["fallback"])
    whens = " ".join(f"WHEN {code} THEN '{value}'" for code, value in sorted(codes.items()))
    default = f"'{spec['default']}'"
    return f"CASE {raw_sql} {whens} ELSE {default} END" if whens else default
