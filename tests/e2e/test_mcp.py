"""`advisor mcp` as an agent meets it: the server is a subprocess, the official SDK's client talks to it
over stdio, every tool runs on real traces, and the answers equal the CLI's JSON (rule timings aside)
and an independent read of the same files (sqlite3 on the nsys export, counting Kineto JSON events).

One conversation per server (a module fixture) carries all the calls, so the module costs two server
starts and the analyses of five small traces (cached across the calls and the CLI comparisons).
"""

from __future__ import annotations

import gzip
import json
import os
import shutil
import sqlite3
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import pytest

from advisor.cli.main import main
from tests.conftest import REAL, ROOT, real_path

NSYS = "nsys-ai/mock_rtx3080_wsl2.sqlite"
KINETO = "tracelens/h100_qwen1.5-0.5b_inference.json.gz"
RANKS = "param/dlrm_8rank"
DIFF = ("nsys-ai/mfu_2gpu_before.sqlite", "nsys-ai/mfu_2gpu_after.sqlite")
PAIR = ("kineto/LA007_item_sync_in_loop_baseline", "kineto/LA007_item_sync_in_loop_optimized")  # repo fixtures


@dataclass(frozen=True)
class Reply:
    error: bool
    doc: dict[str, Any]
    text: str


async def _converse(args: list[str], cache: Path, calls: dict[str, tuple[str, dict[str, Any]]]
                    ) -> tuple[list[Any], dict[str, Reply]]:
    from mcp import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    params = StdioServerParameters(command=sys.executable, args=["-m", "advisor", "mcp", *args],
                                   env={"ADVISOR_CACHE_DIR": str(cache), "PYTHONPATH": str(ROOT)}, cwd=str(ROOT))
    replies = {}
    with open(os.devnull, "w") as quiet:
        async with stdio_client(params, errlog=quiet) as (read, write), ClientSession(read, write) as s:
            await s.initialize()
            tools = (await s.list_tools()).tools
            for key, (tool, arguments) in calls.items():
                res = await s.call_tool(tool, arguments)
                text = res.content[0].text if res.content else ""  # type: ignore[union-attr]
                replies[key] = Reply(bool(res.is_error), res.structured_content or {}, text)
    return tools, replies


@dataclass(frozen=True)
class Session:
    tools: list[Any]
    replies: dict[str, Reply]
    cache: Path
    outside: Path


def _calls(outside: Path, link: Path, planted: Path) -> dict[str, tuple[str, dict[str, Any]]]:
    nsys, kineto, ranks = (str(real_path(p)) for p in (NSYS, KINETO, RANKS))
    q = lambda sql: ("query", {"path": nsys, "sql": sql})  # noqa: E731
    return {
        "secret_analyze": ("analyze", {"path": str(planted)}),
        "secret_query": ("query", {"path": str(planted), "sql": "SELECT * FROM runs"}),
        "secret_strings": ("query", {"path": str(planted), "sql": "SELECT value FROM strings"}),
        "rules": ("rules", {}),
        "explain": ("explain", {"code": "LA002"}),
        "explain_unknown": ("explain", {"code": "ZZ999"}),
        "analyze_nsys": ("analyze", {"path": nsys}),
        "analyze_kineto": ("analyze", {"path": kineto}),
        "analyze_select": ("analyze", {"path": nsys, "select": ["LA"]}),
        "top": ("top_kernels", {"path": nsys, "n": 5}),
        "top_range": ("top_kernels", {"path": kineto, "n": 5, "range": "ProfilerStep"}),
        "gaps": ("idle_gaps", {"path": str(real_path(DIFF[0])), "n": 5}),
        "ranks": ("ranks", {"path": ranks}),
        "diff": ("diff", {"base": str(real_path(DIFF[0])), "new": str(real_path(DIFF[1]))}),
        "pair": ("diff", {"base": str(ROOT / "fixtures" / PAIR[0]), "new": str(ROOT / "fixtures" / PAIR[1])}),
        "q_count": q("SELECT count(*) AS n, sum(end_ns - start_ns) AS ns FROM kernels"),
        "q_metric": ("query", {"path": str(real_path(DIFF[0])),
                               "sql": "SELECT count(*) AS gaps, sum(gap_ns) AS ns FROM idle_claims"}),
        "q_10m": q("SELECT * FROM range(10000000)"),
        "q_bytes": q("SELECT repeat('x', 100000) AS big FROM range(100)"),
        "q_copy": q("COPY kernels TO '/tmp/advisor-mcp-leak.csv'"),
        "q_copy_select": q("COPY (SELECT * FROM kernels) TO '/tmp/advisor-mcp-leak.parquet' (FORMAT parquet)"),
        "q_attach": q("ATTACH '/tmp/advisor-mcp-leak.duckdb' AS x"),
        "q_install": q("INSTALL httpfs"),
        "q_load": q("LOAD httpfs"),
        "q_set": q("SET enable_external_access = true"),
        "q_two": q("SELECT 1; COPY kernels TO '/tmp/advisor-mcp-leak.csv'"),
        "q_read_file": q("SELECT * FROM read_csv('/etc/passwd')"),
        "q_bad": q("SELECT no_such_column FROM kernels"),
        "q_slow": ("query", {"path": nsys, "sql": "SELECT count(*) FROM range(100000) a, range(100000) b, "
                                                   "range(100000) c WHERE a.range + b.range = c.range"}),
        "outside": ("analyze", {"path": str(outside / "trace.sqlite")}),
        "etc": ("analyze", {"path": "/etc/passwd"}),
        "dotdot": ("analyze", {"path": str(real_path(NSYS).parent / ".." / ".." / "x" / "trace.sqlite")}),
        "dotdot_rel": ("top_kernels", {"path": "../outside/trace.sqlite", "n": 3}),
        "symlink": ("analyze", {"path": str(link / "trace.sqlite")}),
        "symlink_query": ("query", {"path": str(link / "trace.sqlite"), "sql": "SELECT 1"}),
        "symlink_in_dir": ("analyze", {"path": str(link.parent / "rankdir")}),
        "symlink_diff": ("diff", {"base": nsys, "new": str(link.parent / "rankdir")}),
        "missing": ("analyze", {"path": str(REAL / "no-such-trace.sqlite")}),
        "not_a_trace": ("analyze", {"path": str(REAL / "LABELS.md")}),
    }


@pytest.fixture(scope="module")
def session(tmp_path_factory: pytest.TempPathFactory) -> Session:
    base = tmp_path_factory.mktemp("mcp")
    cache, root, outside = base / "cache", base / "root", base / "outside"
    root.mkdir()
    outside.mkdir()
    shutil.copy(real_path(NSYS), outside / "trace.sqlite")  # a real trace, readable, but outside the roots
    (root / "escape").symlink_to(outside, target_is_directory=True)
    (root / "rankdir").mkdir()
    (root / "rankdir" / "rank0.sqlite").symlink_to(outside / "trace.sqlite")
    from tests.reliability.test_secrets import planted_kineto

    calls = _calls(outside, root / "escape", planted_kineto(root / "planted"))
    args = ["--root", str(REAL), "--root", str(ROOT / "fixtures"), "--root", str(root), "--timeout", "120",
            "--query-timeout", "3"]
    tools, replies = anyio.run(_converse, args, cache, calls)
    return Session(tools, replies, cache, outside)


def _cli(argv: list[str], capsys: pytest.CaptureFixture[str]) -> Any:
    capsys.readouterr()
    code = main(argv)
    out = capsys.readouterr().out
    assert code in (0, 1), out
    return json.loads(out)


def _no_timings(x: Any) -> Any:
    """Rule outcomes carry their run time (elapsed_s): the one field two analyses of one trace differ in."""
    if isinstance(x, dict):
        return {k: _no_timings(v) for k, v in x.items() if k != "elapsed_s"}
    if isinstance(x, list):
        return [_no_timings(v) for v in x]
    return x


@pytest.fixture
def cli(session: Session, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> Any:
    monkeypatch.setenv("ADVISOR_CACHE_DIR", str(session.cache))  # the server's cache: warm reads
    return lambda *argv: _cli(list(argv), capsys)


def test_tools_listed_with_schemas(session: Session) -> None:
    names = {t.name: t for t in session.tools}
    assert set(names) == {"analyze", "diff", "explain", "rules", "top_kernels", "idle_gaps", "ranks", "query"}
    assert names["query"].input_schema["required"] == ["path", "sql"]
    assert names["top_kernels"].input_schema["properties"]["n"]["maximum"] == 1000
    assert all(t.annotations.read_only_hint for t in session.tools)


def test_analyze_equals_cli(session: Session, cli: Any) -> None:
    for key, rel in (("analyze_nsys", NSYS), ("analyze_kineto", KINETO)):
        r = session.replies[key]
        assert not r.error, r.text
        assert _no_timings(r.doc) == _no_timings(cli("analyze", str(real_path(rel)), "--format", "json"))
        assert json.loads(r.text) == r.doc  # the text block is the same document
    sel = session.replies["analyze_select"].doc
    assert {x["code"][:2] for x in sel["rules"]} == {"LA"}
    assert _no_timings(sel) == _no_timings(cli("analyze", str(real_path(NSYS)), "--select", "LA", "--format", "json"))


def test_analyze_counts_match_sqlite(session: Session) -> None:
    """The kernel count and time the tools report are the export's own (sqlite3, no advisor code)."""
    con = sqlite3.connect(f"file:{real_path(NSYS)}?mode=ro", uri=True)
    n, ns = con.execute("SELECT count(*), sum(end - start) FROM CUPTI_ACTIVITY_KIND_KERNEL").fetchone()
    con.close()
    assert session.replies["analyze_nsys"].doc["counts"]["kernels"] == n
    assert session.replies["q_count"].doc["rows"] == [[n, ns]]
    assert session.replies["top"].doc["total_kernel_ns"] == ns


def test_rules_and_explain_equal_cli(session: Session, cli: Any, capsys: pytest.CaptureFixture[str]) -> None:
    assert session.replies["rules"].doc["rules"] == cli("rules", "--format", "json")
    e = session.replies["explain"].doc
    capsys.readouterr()
    assert main(["explain", "LA002"]) == 0
    assert e["text"] == capsys.readouterr().out
    assert e["rule"]["code"] == "LA002" and "How to fix" in e["sections"]
    bad = session.replies["explain_unknown"]
    assert bad.error and bad.doc["error"]["kind"] == "InputError" and "ZZ999" in bad.doc["error"]["message"]


def test_top_kernels_equal_cli(session: Session, cli: Any) -> None:
    doc = session.replies["top"].doc
    full = cli("analyze", str(real_path(NSYS)), "--top", "5", "--format", "json")
    assert {k: v for k, v in doc.items() if k not in ("schema_version", "range")} == full["top_kernels"]
    con = sqlite3.connect(f"file:{real_path(NSYS)}?mode=ro", uri=True)
    top = con.execute("SELECT s.value, count(*), sum(k.end - k.start) AS t FROM CUPTI_ACTIVITY_KIND_KERNEL k "
                      "JOIN StringIds s ON s.id = k.demangledName GROUP BY 1 ORDER BY t DESC, 1 LIMIT 1").fetchone()
    con.close()
    first = doc["items"][0]
    assert (first["name"], first["count"], first["total"]["ns"]) == top


def _kineto_in_steps(path: Path) -> tuple[int, int]:
    """Kernels launched inside ProfilerStep ranges, read from the JSON: (count, summed duration in ns)."""
    with gzip.open(path) as f:
        ev = json.load(f)["traceEvents"]
    steps = [e for e in ev if str(e.get("name", "")).startswith("ProfilerStep") and e.get("cat") == "user_annotation"]
    gpu_steps = [e for e in ev if str(e.get("name", "")).startswith("ProfilerStep")
                 and e.get("cat") == "gpu_user_annotation"]
    launches = {e["args"]["correlation"] for e in ev if e.get("cat") == "cuda_runtime" and "correlation" in
                e.get("args", {}) and any(s["tid"] == e["tid"] and s["ts"] <= e["ts"] < s["ts"] + s["dur"]
                                          for s in steps)}
    held = [e for e in ev if e.get("cat") == "kernel" and (
        e["args"].get("correlation") in launches
        or any(g["pid"] == e["pid"] and g["ts"] <= e["ts"] < g["ts"] + g["dur"] for g in gpu_steps))]
    return len(held), round(sum(e["dur"] for e in held) * 1000)


def test_top_kernels_in_range_match_json(session: Session) -> None:
    doc = session.replies["top_range"].doc
    n, ns = _kineto_in_steps(real_path(KINETO))
    assert n > 100
    assert doc["range"] == "ProfilerStep" and doc["range_instances"] == 2  # one host step, its GPU annotation
    assert abs(doc["total_kernel_ns"] - ns) <= n  # the JSON's microsecond floats: 1 ns rounding per event
    assert sum(i["count"] for i in doc["items"]) <= n and len(doc["items"]) == 5


def _idle_from_sqlite(path: Path) -> int:
    """Device idle time read from the export: each device's span minus the union of its GPU work."""
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    rows = []
    for t in ("CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_MEMCPY", "CUPTI_ACTIVITY_KIND_MEMSET"):
        if con.execute("SELECT 1 FROM sqlite_master WHERE name = ?", (t,)).fetchone():
            rows += con.execute(f"SELECT deviceId, start, end FROM {t}").fetchall()
    con.close()
    idle = 0
    for dev in {r[0] for r in rows}:
        spans = sorted((s, e) for d, s, e in rows if d == dev)
        busy, cur_s, cur_e = 0, spans[0][0], spans[0][1]
        for s, e in spans[1:]:
            if s > cur_e:
                busy, cur_s = busy + cur_e - cur_s, s
            cur_e = max(cur_e, e)
        busy += cur_e - cur_s
        idle += max(e for _, e in spans) - spans[0][0] - busy
    return idle


def test_idle_gaps_from_idle_claims(session: Session, cli: Any) -> None:
    doc = session.replies["gaps"].doc
    assert doc["metric"] == "idle_claims" and len(doc["items"]) == 5
    assert doc["gaps_total"] > 5 and doc["idle_ns_total"] == _idle_from_sqlite(real_path(DIFF[0]))
    assert [[doc["gaps_total"], doc["idle_ns_total"]]] == session.replies["q_metric"].doc["rows"]
    assert sum(c["ns"] for c in doc["by_cause"]) == doc["idle_ns_total"]
    gaps = [g["gap_ns"] for g in doc["items"]]
    assert gaps == sorted(gaps, reverse=True) and all(g["end_ns"] - g["start_ns"] == g["gap_ns"] for g in doc["items"])
    full = cli("analyze", str(real_path(DIFF[0])), "--format", "json")
    assert doc["idle_ns_total"] == sum(t["idle"]["ns"] for t in full["time"])


def test_ranks_equal_cli(session: Session, cli: Any) -> None:
    doc = session.replies["ranks"].doc
    full = cli("analyze", str(real_path(RANKS)), "--format", "json")
    files = sorted(real_path(RANKS).glob("worker*_step_12*.json.gz"))
    assert [r["rank"] for r in doc["ranks"]] == sorted(int(f.name[6]) for f in files) == list(range(8))
    for r, t in zip(doc["ranks"], full["time"], strict=True):
        assert (r["busy"], r["idle"], r["span_ns"]) == (t["busy"], t["idle"], t["span_ns"])
    for r in doc["ranks"]:
        assert r["findings"] == [{k: f.get(k) for k in ("code", "name", "est_gain_ns", "gain_pct", "fingerprint")}
                                 for f in full["findings"] if f["window"].get("device_id") == r["device_id"]]
    assert sum(len(r["findings"]) for r in doc["ranks"]) > 0
    spans = [t["span_ns"] for t in full["time"]]
    assert doc["spread_ns"] == max(spans) - min(spans)


def test_diff_equals_cli(session: Session, cli: Any) -> None:
    r = session.replies["diff"]
    assert not r.error, r.text
    assert _no_timings(r.doc) == _no_timings(cli("diff", *(str(real_path(p)) for p in DIFF), "--format", "json"))
    assert r.doc["verify"]["fixed"] == [] and r.doc["verify"]["realised"] is None


def test_diff_verifies_the_fix(session: Session, cli: Any) -> None:
    """The reference pair: LA002 (syncs in the loop) fixed; predicted vs measured saving, per finding."""
    doc = session.replies["pair"].doc
    assert doc["verdict"]["verdict"] == "improvement"
    v = doc["verify"]
    la002 = next(f for f in v["fixed"] if f["code"] == "LA002")
    assert la002["how"] == "resolved" and la002["predicted_ns"] > 0
    span = max(d["base"]["span_ns"] for d in doc["devices"])
    assert la002["predicted_pct"] == round(100 * la002["predicted_ns"] / span, 1)
    assert v["measured_pct"] == -doc["metric"]["delta"]["pct"] > 5
    assert v["ratio"] == round(v["measured_pct"] / v["predicted_pct"], 2)
    expect = "realised" if v["ratio"] >= 0.8 else "partly realised"  # an improvement either way
    assert v["realised"] == la002["realised"] == expect
    base, new = (str(ROOT / "fixtures" / p) for p in PAIR)
    assert _no_timings(doc) == _no_timings(cli("diff", base, new, "--format", "json"))


def test_planted_secret_never_shown(session: Session) -> None:
    """A Kineto trace with an HF token planted in its metadata, distributedInfo and event args
    (tests/reliability/test_secrets.py): analyze and raw SQL over runs and strings never show it."""
    from tests.reliability.test_secrets import SECRET

    for key in ("secret_analyze", "secret_query", "secret_strings"):
        r = session.replies[key]
        assert not r.error, r.text
        assert SECRET not in r.text and SECRET not in json.dumps(r.doc)
    assert session.replies["secret_strings"].doc["row_count"] > 10


def test_query_caps(session: Session) -> None:
    big = session.replies["q_10m"]
    assert not big.error and big.doc["truncated"] and big.doc["row_count"] == 1000
    assert big.doc["rows"][-1] == [999] and "row cap" in big.doc["note"]
    wide = session.replies["q_bytes"].doc
    assert wide["truncated"] and "byte" in wide["note"] and 0 < wide["row_count"] < 11
    assert len(json.dumps(wide["rows"])) <= 1 << 20


@pytest.mark.parametrize("key,words", [
    ("q_copy", "COPY statements are not allowed"), ("q_copy_select", "COPY statements are not allowed"),
    ("q_attach", "ATTACH statements are not allowed"), ("q_install", "LOAD statements are not allowed"),
    ("q_load", "LOAD statements are not allowed"), ("q_set", "SET statements are not allowed"),
    ("q_two", "2 statements given"), ("q_read_file", "file system operations are disabled"),
    ("q_bad", "SQL error"), ("q_slow", "query stopped after 3 s"),
])
def test_query_refusals(session: Session, key: str, words: str) -> None:
    r = session.replies[key]
    assert r.error and words in r.doc["error"]["message"], r.text
    assert json.loads(r.text) == r.doc and r.doc["ok"] is False and "Traceback" not in r.text
    assert not any(Path("/tmp").glob("advisor-mcp-leak*"))


@pytest.mark.parametrize("key,words", [
    ("outside", "is outside the server's roots"), ("etc", "is outside the server's roots"),
    ("dotdot", "'..' is not allowed"), ("dotdot_rel", "'..' is not allowed"),
    ("symlink", "resolves through a symlink"), ("symlink_query", "resolves through a symlink"),
    ("symlink_in_dir", "'rank0.sqlite', which resolves through a symlink"),
    ("symlink_diff", "'rank0.sqlite', which resolves through a symlink"),
    ("missing", "no such file or directory"),
])
def test_paths_refused(session: Session, key: str, words: str) -> None:
    r = session.replies[key]
    assert r.error and words in r.doc["error"]["message"], r.text
    assert r.doc["error"]["hint"] and "Traceback" not in r.text


def test_bad_input_is_one_line(session: Session, capsys: pytest.CaptureFixture[str]) -> None:
    """A file that is no trace: the tool error carries the CLI's one line (kind, message, hint)."""
    r = session.replies["not_a_trace"]
    assert r.error and "Traceback" not in r.text
    capsys.readouterr()
    assert main(["analyze", str(REAL / "LABELS.md")]) == 2
    err = capsys.readouterr().err
    e = r.doc["error"]
    assert err == f"advisor: error: {e['message']}; {e['hint']}\n" and e["kind"] in ("UnsupportedFormat", "InputError")


def test_timeout_kills_the_call_and_the_server_goes_on(tmp_path: Path) -> None:
    """A cold analysis of 8 rank files under a 0.5 s limit: a Timeout error, then the next call is answered."""
    calls = {"slow": ("analyze", {"path": str(real_path(RANKS))}), "after": ("explain", {"code": "LA002"})}
    _, replies = anyio.run(_converse, ["--root", str(REAL), "--timeout", "0.5"], tmp_path / "cache", calls)
    slow = replies["slow"]
    assert slow.error and slow.doc["error"]["kind"] == "Timeout" and "0.5 s" in slow.doc["error"]["message"]
    assert not replies["after"].error and replies["after"].doc["rule"]["code"] == "LA002"


def test_bad_roots_exit_2(capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    assert main(["mcp", "--root", str(tmp_path / "absent")]) == 2
    assert capsys.readouterr().err.startswith("advisor: error: --root ")
    assert list(tmp_path.iterdir()) == []  # no work folder left behind
