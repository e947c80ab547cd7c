"""The Dask path's summary quantiles (advisor.distributed.summary.quantile_cont over durations counted per exact
value) equal DuckDB's quantile_cont over every value, the function the single-process summary SQL uses."""

from __future__ import annotations

import random

import duckdb

from advisor.distributed.summary import quantile_cont


def test_quantile_from_counts_equals_duckdb() -> None:
    rng = random.Random(7)
    con = duckdb.connect()
    for trial in range(300):
        n = rng.randint(1, 60)
        spread = rng.choice([3, 1000, 10**9])  # many ties, few ties, ns durations of seconds
        values = [rng.randint(0, spread) for _ in range(n)]
        counts: dict[int, int] = {}
        for v in values:
            counts[v] = counts.get(v, 0) + 1
        con.execute("CREATE OR REPLACE TABLE t AS SELECT unnest(?::BIGINT[]) AS d", [values])
        want = con.execute("SELECT quantile_cont(d, 0.5), quantile_cont(d, 0.95) FROM t").fetchone()
        assert want is not None
        assert (quantile_cont(counts, 0.5), quantile_cont(counts, 0.95)) == want, (trial, values)
