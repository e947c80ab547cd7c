"""What `advisor analyze` reports about one run before any rule: facts, each with its denominator.

Everything here is computed by DuckDB over the model tables; the result is a plain dict (the
JSON output contract, documented in docs/json-output.md) that the text and Markdown renderers
format without further computation.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

from advisor.engine import timeline
from advisor.engine.timeline import device_time
from advisor.metrics import derived
from advisor.model.schema import TABLES
from advisor.model.store import Run
from advisor.redact import redact

JSON_SCHEMA_VERSION = "1.2"  # docs/json-output.md, "Versions"

COUNT_TABLES = (
    "kernels", "memops", "api_calls", "sync", "ranges", "cpu_ops", "collectives",
    "gpu_metrics", "memory_events", "ncu_kernels", "ncu_metrics", "ncu_rule_results", "devices", "strings",
)


def pct(part: float, whole: float) -> float | None:
    """Percentage rounded to 0.1, or None when the denominator is zero (reported as n/a)."""
    return round(100.0 * part / whole, 1) if whole else None


def share(ns: int, of_ns: int, of: str) -> dict[str, Any]:
    """A time figure with its denominator spelled out, so no percentage stands alone."""
    return {"ns": ns, "pct": pct(ns, of_ns), "of": of, "of_ns": of_ns}


def input_info(run: Run) -> dict[str, Any]:
    i = run.info
    notes = json.loads(i.get("notes") or "{}")
    return {
        "path": i.get("source_path"),
        "format": i.get("format"),
        "tool": i.get("tool"),
        "tool_version": i.get("tool_version"),
        "export_schema": i.get("export_schema"),
        "sha256": i.get("source_sha256"),
        "bytes": i.get("source_bytes"),
        "host": i.get("host"),
        "world_size": i.get("world_size"),
        "ranks": i.get("ranks"),
        "captured": sorted(run.captured),
        "notes": redact(notes),
    }


def counts(run: Run) -> dict[str, int]:
    c = {t: run.count(t) for t in COUNT_TABLES}
    memops = run.sql_rows("SELECT op, count(*) FROM memops GROUP BY op")
    by_op = {op: n for op, n in memops}
    c["memcpy"] = int(by_op.get("memcpy", 0))
    c["memset"] = int(by_op.get("memset", 0))
    return c


def devices(run: Run) -> list[dict[str, Any]]:
    cols = [c.name for c in TABLES["devices"].columns]
    rows = run.sql_dicts(f"SELECT {', '.join(cols)} FROM devices ORDER BY device_id")
    return [{k: v for k, v in r.items() if v is not None} for r in rows]


def capture_span(run: Run) -> dict[str, Any]:
    s, e = run.info.get("trace_start_ns"), run.info.get("trace_end_ns")
    return {"start_ns": s, "end_ns": e, "span_ns": (e - s) if s is not None and e is not None else None}


def time_split(run: Run) -> list[dict[str, Any]]:
    names = {r["device_id"]: r.get("name") for r in devices(run)}
    out = []
    for d in device_time(run):
        span = d["span_ns"]
        of = f"device span, first to last GPU activity on device {d['device_id']}"
        out.append(
            {
                "device_id": d["device_id"],
                "rank": d["rank"],
                "name": names.get(d["device_id"]),
                "span_start_ns": d["span_start_ns"],
                "span_end_ns": d["span_end_ns"],
                "span_ns": span,
                "kernels": share(d["kernel_ns"], span, of),
                "compute_kernels": share(d["compute_ns"], span, of),
                "communication_kernels": share(d["communication_ns"], span, of),
                "communication_exposed": share(d["communication_exposed_ns"], span, of),
                "memcpy": share(d["memcpy_ns"], span, of),
                "memset": share(d["memset_ns"], span, of),
                "busy": share(d["busy_ns"], span, of),
                "idle": share(d["idle_ns"], span, of),
            }
        )
    return out


_TOP_KERNELS_SQL = """
WITH k AS (SELECT name_id, end_ns - start_ns AS d FROM kernels),
tot AS (SELECT sum(d) AS all_ns FROM k)
SELECT s.value AS name, count(*) AS count, sum(d)::BIGINT AS total_ns, avg(d) AS mean_ns,
       quantile_cont(d, 0.5) AS p50_ns, quantile_cont(d, 0.95) AS p95_ns, max(d) AS max_ns,
       any_value(tot.all_ns) AS all_ns
FROM k JOIN strings s ON s.string_id = k.name_id, tot
GROUP BY s.value ORDER BY total_ns DESC, name LIMIT $1
"""


def top_kernels(run: Run, limit: int = 10) -> dict[str, Any]:
    rows = run.sql_dicts(_TOP_KERNELS_SQL, [limit])
    all_ns = int(rows[0]["all_ns"]) if rows else 0
    of = "sum of all kernel durations, all devices"
    items = [
        {
            "name": r["name"],
            "count": int(r["count"]),
            "total": share(int(r["total_ns"]), all_ns, of),
            "mean_ns": round(float(r["mean_ns"])),
            "p50_ns": round(float(r["p50_ns"])),
            "p95_ns": round(float(r["p95_ns"])),
            "max_ns": int(r["max_ns"]),
        }
        for r in rows
    ]
    return {"total_kernel_ns": all_ns, "of": of, "items": items}


# PyTorch's emit_nvtx appends per-call ids ("aten::to, op_id = 999599", "seq = 12"): group by the op.
RANGE_GROUP_SQL = r"regexp_replace(s.value, ',\s*(op_id|seq|sizes)\s*=.*$', '')"


def _covered_sql(name: str, groups: str) -> str:
    """CTEs `name`_o .. `name`: (gk, covered_ns) of the groups listed in CTE `groups` (none of them missing).

    covered = the length of the union of a group's ranges. In (gk, start) order, with m_i the latest end among
    a group's ranges up to the i-th, the union grows by m_i - max(s_i, m_(i-1)) at each range (0 when it lies
    inside what came before). One sort, one running max and one lag, all streaming (an empty OVER keeps the
    order of the sorted subquery: DuckDB's documented order preservation): the group is folded into the
    running max's high bits, so the max never carries over from the group before (ends are taken from the
    earliest start, so they are >= 0 and below 2^64).
    """
    return f"""
{name}_o AS (  -- any order of equal starts will do
  SELECT gk, s - lo AS s, e - lo AS e FROM r JOIN {groups} USING (gk), lo WHERE e > s ORDER BY gk, s
),
{name}_max AS (
  SELECT gk, s, max((gk::HUGEINT << 64) + e) OVER (ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS mx
  FROM {name}_o
),
{name}_prev AS (  -- pm < 0: the previous row belongs to an earlier group (or there is none)
  SELECT gk, s, mx - (gk::HUGEINT << 64) AS m, lag(mx) OVER () - (gk::HUGEINT << 64) AS pm FROM {name}_max
),
{name} AS (  -- groups whose ranges all have zero length cover 0
  SELECT gk, coalesce(c.covered_ns, 0)::BIGINT AS covered_ns
  FROM {groups} LEFT JOIN (
    SELECT gk, sum(m - CASE WHEN pm >= 0 THEN greatest(s, pm) ELSE s END)::BIGINT AS covered_ns
    FROM {name}_prev GROUP BY gk
  ) c USING (gk)
)"""


# The union (the costly part: a sort of the ranges) is computed for as few groups as the ranking needs. A group
# covers at most its bound (the sum of its positive lengths). First the $1 groups with the largest bounds
# (first_in); `last` is the $1-th largest of their covered times, so the final $1-th is at least that. Then every
# other group whose bound reaches `last` (then_in): any group left has bound < last, so it cannot rank. On 7.4M
# NVTX ranges in 176 groups, the union of every group was 80% of this query's time; the 15 groups with the most
# time hold a third of the ranges, and the second stage added one group.
_RANGES_SQL = f"""
WITH g AS (  -- one integer key per (source, group): the regexp runs once per distinct name, not per range, and an
             -- integer sorts several times faster than the (source, name) strings
  SELECT p.source, p.name_id, n.name, dense_rank() OVER (ORDER BY p.source, n.name) AS gk
  FROM (SELECT DISTINCT source, name_id FROM ranges WHERE source <> 'profiler_step') p
  JOIN (SELECT s.string_id, {RANGE_GROUP_SQL} AS name FROM strings s) n ON n.string_id = p.name_id
),
r AS (
  SELECT g.gk, r.start_ns AS s, r.end_ns AS e, r.depth
  FROM ranges r JOIN g ON g.source = r.source AND g.name_id = r.name_id
),
stats AS (
  SELECT gk, count(*) AS count, sum(e - s)::BIGINT AS total_ns, avg(e - s) AS mean_ns,
         quantile_cont(e - s, 0.5) AS p50_ns, quantile_cont(e - s, 0.95) AS p95_ns, min(depth) AS min_depth,
         sum(greatest(e - s, 0))::BIGINT AS bound, min(s) AS first_s
  FROM r GROUP BY gk
),
lo AS (SELECT min(first_s) AS lo FROM stats),
first_in AS (
  SELECT gk FROM stats
  WHERE bound >= coalesce((SELECT bound FROM stats ORDER BY bound DESC LIMIT 1 OFFSET $1 - 1), -1)
),
{_covered_sql("first_cov", "first_in")},
last AS (SELECT coalesce((SELECT covered_ns FROM first_cov ORDER BY covered_ns DESC LIMIT 1 OFFSET $1 - 1), -1) AS c),
then_in AS (SELECT gk FROM stats, last WHERE bound >= last.c AND gk NOT IN (SELECT gk FROM first_in)),
{_covered_sql("then_cov", "then_in")}
SELECT g.source, g.name, st.count, st.total_ns, st.mean_ns, st.p50_ns, st.p95_ns, st.min_depth, c.covered_ns
FROM stats st JOIN (SELECT * FROM first_cov UNION ALL SELECT * FROM then_cov) c USING (gk)
JOIN (SELECT DISTINCT gk, source, name FROM g) g USING (gk)
ORDER BY covered_ns DESC, total_ns DESC, name LIMIT $1
"""

_STEPS_SQL = """
SELECT count(*) AS count, sum(end_ns - start_ns)::BIGINT AS total_ns, avg(end_ns - start_ns) AS mean_ns,
       quantile_cont(end_ns - start_ns, 0.5) AS p50_ns, quantile_cont(end_ns - start_ns, 0.95) AS p95_ns,
       min(end_ns - start_ns) AS min_ns, max(end_ns - start_ns) AS max_ns
FROM ranges WHERE source = 'profiler_step'
"""


def ranges_summary(run: Run, limit: int = 15) -> dict[str, Any]:
    span = capture_span(run)["span_ns"] or 0
    of = "capture span (first to last event of the run)"
    items = [
        {
            "source": r["source"],
            "name": r["name"],
            "count": int(r["count"]),
            "covered": share(int(r["covered_ns"]), span, of),
            "total_ns": int(r["total_ns"]),
            "mean_ns": round(float(r["mean_ns"])),
            "p50_ns": round(float(r["p50_ns"])),
            "p95_ns": round(float(r["p95_ns"])),
            "top_level": r["min_depth"] == 0,
        }
        for r in run.sql_dicts(_RANGES_SQL, [limit])
    ]
    steps_row = run.sql_dicts(_STEPS_SQL)[0]
    steps = None
    if steps_row["count"]:
        steps = {k: (round(float(v)) if v is not None else None) for k, v in steps_row.items()}
    return {"total_ranges": run.count("ranges"), "items": items, "steps": steps}


def summarize(run: Run, top: int = 10) -> dict[str, Any]:
    """The per-run part of the `analyze` JSON (findings and verdict are added by the caller).

    Everything but `input` is a pure function of the cached tables, so it is computed once per cache
    entry and kept there (`metrics.derived`): at 10M rows it costs minutes, reading it back milliseconds.
    `input` names the path the run was opened under, which may differ between opens of the same bytes.
    """
    key = _code_key()
    facts = derived.load_json(run, f"summary-top{top}", key)
    if not isinstance(facts, dict):
        facts = {
            "devices": devices(run),
            "counts": counts(run),
            "capture": capture_span(run),
            "time": time_split(run),
            "top_kernels": top_kernels(run, top),
            "ranges": ranges_summary(run),
        }
        derived.save_json(run, f"summary-top{top}", key, facts)
    return {"input": input_info(run), **facts}


@cache
def _code_key() -> str:
    """Fingerprint of the code the facts come from (this module and the device-time split)."""
    return derived.fingerprint(Path(__file__).read_bytes(), Path(timeline.__file__).read_bytes())
