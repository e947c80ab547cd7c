"""Rule cases as data: load tests/rules/cases/<CODE>.yaml, build the run, check the outcome.

A case file:

    rule: IO001
    cases:
      - id: pageable_copy_fires
        expect: fired            # fired | clean | not_applicable
        options: {min_gain_us: 0}
        tables:                  # tiny inline model tables; `name:` is interned into strings
          memops:
            - {device_id: 0, start_ns: 0, end_ns: 1000000, op: memcpy, copy_kind: HtoD, ...}
        captured: [memops]       # optional; default: the tables given
        evidence: {pageable_copies: 1}      # values on the top finding (or the Clean outcome)
        est_gain_ns: 123         # optional, on the top finding
        findings: 1              # optional count
      - id: saxpy_real
        fixture: pipit/saxpy-mpi-cuda_nsys_perlmutter0.sqlite   # relative to the shared real folder
        expect: fired
        evidence: {pageable_copies: 10}
      - id: own_capture
        fixture: repo:fixtures/ncu/ME001_uncoalesced_access_baseline/ME001_uncoalesced_access_baseline.ncu-rep.xz
        expect: fired                                            # repo: = relative to this repository

Numbers compare with a relative tolerance of 1e-3 unless given as {approx: v, rel: r}.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
import yaml

from advisor.model.schema import TABLES
from advisor.model.store import Run

CASES = Path(__file__).parent / "cases"
REPO = Path(__file__).resolve().parents[2]
REPO_PREFIX = "repo:"
NAMED = {"kernels", "api_calls", "cpu_ops", "ranges", "collectives", "ncu_kernels"}


@dataclass(frozen=True)
class Case:
    rule: str
    id: str
    spec: dict[str, Any]

    @property
    def fixture(self) -> str | None:
        return self.spec.get("fixture")


def fixture_path(ref: str) -> Path:
    """A case's fixture: `repo:<path>` inside this repository (our own captures), else the shared real folder."""
    if ref.startswith(REPO_PREFIX):
        p = REPO / ref.removeprefix(REPO_PREFIX)
        if not p.exists():
            pytest.fail(f"repository fixture {p} is missing")
        return p
    from tests.conftest import real_path

    return real_path(ref)


def load_cases() -> list[Case]:
    out: list[Case] = []
    for path in sorted(CASES.glob("*.yaml")):
        doc = yaml.safe_load(path.read_text())
        for spec in doc.get("cases", []):
            out.append(Case(doc["rule"], spec["id"], spec))
    return out


def build_run(tables: dict[str, list[dict[str, Any]]], captured: list[str] | None = None) -> Run:
    """A Run over inline rows; `name` fields become name_id via an interned strings table."""
    strings: dict[str, int] = {}
    arrow: dict[str, pa.Table] = {}
    for table, rows in tables.items():
        fixed = []
        for row in rows:
            row = dict(row)
            if table in NAMED and "name" in row:
                row["name_id"] = strings.setdefault(row.pop("name"), len(strings))
            fixed.append(row)
        arrow[table] = pa.Table.from_pylist(fixed, schema=TABLES[table].arrow_schema)
    if strings:
        arrow["strings"] = pa.Table.from_pylist(
            [{"string_id": i, "value": v} for v, i in strings.items()], schema=TABLES["strings"].arrow_schema
        )
    cap = captured if captured is not None else sorted(tables)
    arrow["runs"] = pa.Table.from_pylist(
        [
            {
                "source_path": "inline",
                "source_sha256": "0",
                "source_bytes": 0,
                "format": "inline",
                "tool": "test",
                "captured": ",".join(cap),
            }
        ],
        schema=TABLES["runs"].arrow_schema,
    )
    return Run.from_tables(arrow)


def close(actual: Any, expected: Any) -> bool:
    if isinstance(expected, dict) and "approx" in expected:
        return bool(actual == pytest.approx(expected["approx"], rel=expected.get("rel", 1e-3)))
    if isinstance(expected, int | float) and not isinstance(expected, bool):
        return bool(actual == pytest.approx(expected, rel=1e-3, abs=1e-9))
    return bool(actual == expected)
