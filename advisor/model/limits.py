"""DuckDB's memory cap, shared by the nsys parse and every cached run's analysis connection.

Without a cap DuckDB takes up to 80% of RAM: the first analysis of a 0.9 GB nsys export peaked at
4.6 GB. With it, DuckDB spills to a directory inside advisor's cache (never the current directory)
and the same analysis peaks at 1.6 GB for ~15% more CPU. `ADVISOR_DUCKDB_MEMORY` sets it (docs/limits.md).
"""

from __future__ import annotations

import os
import re

from advisor.errors import InputError

DUCKDB_MEMORY_ENV = "ADVISOR_DUCKDB_MEMORY"
DEFAULT_DUCKDB_MEMORY = 1 << 30
_SIZE_RE = re.compile(r"\s*(\d+)\s*([kmgt]?)i?b?\s*", re.IGNORECASE)
_UNITS = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}


def parse_size(text: str, env: str) -> int:
    """'8G', '512MiB', '1000000' -> bytes; InputError (naming the variable `env`) for anything else."""
    m = _SIZE_RE.fullmatch(text)
    if m is None or int(m.group(1)) <= 0:
        raise InputError(f"{env}={text!r} is not a size", "give bytes or a K/M/G/T suffix, e.g. 16G")
    return int(m.group(1)) * _UNITS[m.group(2).lower()]


def duckdb_memory() -> int:
    """DuckDB's memory cap: $ADVISOR_DUCKDB_MEMORY when set, else DEFAULT_DUCKDB_MEMORY."""
    env = os.environ.get(DUCKDB_MEMORY_ENV)
    return parse_size(env, DUCKDB_MEMORY_ENV) if env else DEFAULT_DUCKDB_MEMORY


def memory_sql() -> str:
    """The SET statement that applies the cap to a connection."""
    return f"SET memory_limit = '{max(1, duckdb_memory() >> 20)}MiB'"
