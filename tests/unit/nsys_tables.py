"""Hand-made nsys SQLite exports for unit tests: the tables the nsys parser reads, nothing more."""

from __future__ import annotations

import sqlite3

NvtxEvent = tuple[int, int | None, int, str, int]  # start, end (None = never closed), eventType, text, globalTid


def write_nvtx(db: sqlite3.Connection, events: list[NvtxEvent]) -> None:
    """StringIds and NVTX_EVENTS (inline texts, default domain) with `events`."""
    db.execute("CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT)")
    db.execute(
        "CREATE TABLE NVTX_EVENTS (start INTEGER NOT NULL, end INTEGER, eventType INTEGER NOT NULL,"
        " text TEXT, textId INTEGER, globalTid INTEGER, domainId INTEGER)"
    )
    db.executemany(
        "INSERT INTO NVTX_EVENTS VALUES (?, ?, ?, ?, NULL, ?, 0)",
        [(s, e, t, text, g) for s, e, t, text, g in events],
    )
