"""Query parameters bound as literals (advisor.model.store.execute): same values and types as DuckDB's own
binding, and a warm `advisor analyze` never loads pandas (DuckDB's binding and pyarrow.compute would)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import duckdb
import pytest

from advisor.model.store import execute
from tests.conftest import real_path

VALUES: list[Any] = [[1, 2, 3], [1, 2**40], ["a", "b'c", ""], (5, 6), [-(2**31), 2**31 - 1], 7, 1.5, "x'y", None]


@pytest.mark.parametrize("value", VALUES, ids=[repr(v)[:20] for v in VALUES])
def test_literal_parameters_equal_duckdb_binding(value: Any) -> None:
    query = "SELECT $v AS v, typeof($v) AS t"
    bound = duckdb.connect().execute(query, {"v": list(value) if isinstance(value, tuple) else value}).fetchall()
    assert execute(duckdb.connect(), query, {"v": value}).fetchall() == bound


def test_list_parameter_filters_like_bound_one() -> None:
    con = duckdb.connect()
    con.execute("CREATE TABLE t AS SELECT range AS id, 'n' || range AS name FROM range(100)")
    q = "SELECT count(*), sum(id) FROM t WHERE id IN (SELECT unnest($ids)) OR name IN (SELECT unnest($names))"
    params = {"ids": [3, 5, 99, 1000], "names": ["n7", "n'8", "zz"]}
    assert execute(con, q, params).fetchall() == con.execute(q, params).fetchall() == [(4, 3 + 5 + 99 + 7)]


@pytest.mark.parametrize(
    "rel", ["hta/with_gpu_user_annotation__step_based_trace_2543932.json.gz", "nsys-ai/mfu_2gpu_before.sqlite"]
)
def test_warm_analyze_loads_no_pandas_and_no_arrow(rel: str, tmp_path: Path) -> None:
    """A warm analyze reads the cached model through DuckDB alone: neither pandas nor pyarrow (with numpy, about a
    tenth of a second of imports) is loaded. The cold run parses with Arrow. Nor does a run without an Nsight
    Compute report load the ncu join, its sections or the figures, nor does `analyze` of a file load `diff`."""
    trace = real_path(rel)
    env = dict(os.environ, ADVISOR_CACHE_DIR=str(tmp_path / "cache"))
    unused = ("advisor.diff", "advisor.engine.ncu", "advisor.engine.ncu_profile", "advisor.perf.figure")
    code = (
        "import sys, io, contextlib; from advisor.cli.main import main\n"
        "with contextlib.redirect_stdout(io.StringIO()): rc = main(['analyze', sys.argv[1], '--format', 'json'])\n"
        "print(rc, sorted(m for m in sys.modules if m.split('.')[0] in ('pandas', 'pyarrow')\n"
        f"                 or m.startswith({unused!r}))[:3])"
    )
    cold = subprocess.run([sys.executable, "-c", code, str(trace)], env=env, capture_output=True, text=True)
    assert cold.returncode == 0, cold.stderr[-2000:]
    warm = subprocess.run([sys.executable, "-c", code, str(trace)], env=env, capture_output=True, text=True)
    assert warm.stdout.strip() == "0 []", warm.stdout + warm.stderr[-2000:]
