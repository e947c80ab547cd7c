"""The ranks of a directory read number Kineto External ids from the same start (our 2-rank DDP captures: every
kernel's id is also an op id of the other rank's process). Ops and kernels are joined within the launching
process, so an op's kernels in the directory read are the ones its rank file gives it alone."""

from __future__ import annotations

from pathlib import Path

from advisor import metrics
from advisor.ingest import open_run
from advisor.perf.timeline_roofline import TF32_KERNEL_PATTERN
from tests.conftest import ROOT

RUN = ROOT / "fixtures" / "kineto" / "CO002_straggler_rank_baseline"


def _kernel_ns(path: Path, cache: Path) -> tuple[int, int, int]:
    """Summed kernel time of the ops with kernels, kernels whose id is also another process's op id, and all
    kernel time."""
    run = open_run(path, cache_dir=cache)
    try:
        ops = metrics.query(run, "ops_with_kernels", tf32=TF32_KERNEL_PATTERN)
        (shared,), = run.sql_rows(
            "SELECT count(*) FROM kernels k WHERE k.pid IS NOT NULL AND EXISTS "
            "(SELECT 1 FROM cpu_ops c WHERE c.external_id = k.external_id AND c.pid <> k.pid)")
        (total,), = run.sql_rows("SELECT sum(end_ns - start_ns) FROM kernels")
        return sum(int(r["kernel_ns"]) for r in ops), int(shared), int(total)
    finally:
        run.close()


def test_ops_keep_their_own_rank_kernels(tmp_path: Path) -> None:
    together, shared, total = _kernel_ns(RUN, tmp_path)
    alone = [_kernel_ns(f, tmp_path) for f in sorted(RUN.glob("*.rank*.json.gz"))]
    assert shared > 0  # the ids collide across the ranks in the directory read
    assert all(s == 0 for _, s, _ in alone)  # and never inside one rank's file
    assert together == sum(k for k, _, _ in alone) > 0  # joined on the id alone: twice this (235.9 ms)
    assert together <= total == sum(t for _, _, t in alone)


def test_kernel_instances_name_their_own_rank_op(tmp_path: Path) -> None:
    """The op named for a kernel's longest executions is the one its own rank recorded for it."""
    run = open_run(RUN, cache_dir=tmp_path)
    try:
        (name,), = run.sql_rows(
            "SELECT s.value FROM kernels k JOIN strings s ON s.string_id = k.name_id "
            "GROUP BY ALL ORDER BY max(k.end_ns - k.start_ns) DESC, s.value LIMIT 1")
        rows = metrics.query(run, "kernel_instances", name=name, limit=5)
        want = {}
        for r in run.sql_dicts(
                "SELECT k.device_id, k.start_ns, arg_max(s.value, c.depth) AS op FROM kernels k "
                "JOIN strings n ON n.string_id = k.name_id AND n.value = $name "
                "JOIN cpu_ops c ON c.external_id = k.external_id AND c.pid = k.pid "
                "JOIN strings s ON s.string_id = c.name_id GROUP BY ALL", {"name": name}):
            want[(r["device_id"], r["start_ns"])] = r["op"]
    finally:
        run.close()
    assert rows and all(r["op"] == want[(r["device_id"], r["start_ns"])] for r in rows)
