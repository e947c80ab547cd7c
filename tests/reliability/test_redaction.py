"""Secrets inside trace text are redacted at ingest: no output and no cache file holds them, and no
legitimate name changes; escape codes from trace text or file names never reach a terminal.

The planted traces are copies of real ones with secret-shaped text written where users and tools
put text (kernel names, NVTX text, annotations, op and thread names, GPU name, host, tool
version), one form per place: bare `password=`, `token=`, `secret:`, and the token shapes `hf_`,
`ghp_`, `sk-`, AKIA..., a JWT. Every surface (analyze text/json/md and -o, report, diff in all
formats, the TUI's screens) runs over them, then every cache file is read back (Parquet decoded,
since zstd pages would hide a secret from a byte search) and searched.
"""

from __future__ import annotations

import gzip
import json
import shutil
import sqlite3
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from advisor.ingest import open_run
from advisor.redact import REDACTED, redact_text
from tests.conftest import real_path
from tests.reliability.conftest import copy_real
from tests.reliability.surfaces import all_outputs, cli

KINETO = "hta/with_gpu_user_annotation__step_based_trace_2543932.json.gz"
NSYS = "pipit/saxpy-mpi-cuda_nsys_perlmutter0.sqlite"

# marker (what must never be shown) -> the text planted around it
SECRETS = {
    "hunter2PWMARK": "password=hunter2PWMARK",
    "tokTOKMARK": "token=tokTOKMARK",
    "sekSECMARK": "secret: sekSECMARK",
    "HFMARK": "hf_HFMARKabcdefghijklmnop",
    "GHPMARK": "ghp_GHPMARKabcdefghijklmnopqrstuv",
    "SKMARK": "sk-SKMARKabcdefghijklmnopqrst",
    "AKIAMARK": "AKIAMARK0123456789AB",
    "JWTMARK": "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJKV1QifQ.JWTMARKsignature0123",
}
FORMS = list(SECRETS.values())


def planted_kineto(dest: Path) -> Path:
    """Kernel, op, annotation, thread, GPU and host names each carrying a secret in another form."""
    doc: dict[str, Any] = json.loads(gzip.decompress(real_path(KINETO).read_bytes()))
    places = {"kernel": 0, "cpu_op": 1, "user_annotation": 2, "gpu_user_annotation": 3, "cuda_runtime": 4}
    for ev in doc["traceEvents"]:
        cat = ev.get("cat")
        if cat in places:
            ev["name"] = f"{ev['name']} {FORMS[places[cat]]}"
        elif ev.get("ph") == "M" and ev.get("name") == "thread_name":
            ev.setdefault("args", {})["name"] = f"worker {FORMS[5]}"
    doc["deviceProperties"][0]["name"] = f"Quadro GP100 {FORMS[6]}"
    doc["host_name"] = f"node-{FORMS[7]}"
    dest.mkdir(parents=True, exist_ok=True)
    p = dest / "planted.json.gz"
    p.write_bytes(gzip.compress(json.dumps(doc).encode()))
    return p


def planted_nsys(dest: Path) -> Path:
    """Kernel names (StringIds), NVTX text, GPU name and tool version of an nsys export, each with a secret."""
    p = copy_real(NSYS, dest, "planted.sqlite")
    con = sqlite3.connect(p)
    try:
        demangled, short = con.execute("SELECT demangledName, shortName FROM CUPTI_ACTIVITY_KIND_KERNEL").fetchone()
        con.execute("UPDATE StringIds SET value = value || ' ' || ? WHERE id = ?", (FORMS[0], demangled))
        con.execute("UPDATE StringIds SET value = value || ' ' || ? WHERE id = ?", (FORMS[1], short))
        con.execute("UPDATE NVTX_EVENTS SET text = text || ' ' || ? WHERE text IS NOT NULL", (FORMS[2],))
        con.execute("UPDATE StringIds SET value = value || ' ' || ? WHERE id IN (SELECT textId FROM NVTX_EVENTS)",
                    (FORMS[3],))
        con.execute("UPDATE TARGET_INFO_GPU SET name = name || ' ' || ?", (FORMS[4],))
        con.execute("UPDATE EXPORT_META_DATA SET value = value || ' ' || ? WHERE name = 'EXPORT_PRODUCT_NAME'",
                    (FORMS[5],))
        con.commit()
    finally:
        con.close()
    return p


def test_every_form_is_redacted_and_the_words_around_it_kept() -> None:
    for marker, form in SECRETS.items():
        out = redact_text(f"step 3 {form} done")
        assert marker not in out and REDACTED in out and out.startswith("step 3 ") and out.endswith(" done"), out


def cache_texts(cache: Path) -> dict[str, str]:
    """Every cache file as text: Parquet decoded (all string values), anything else as raw bytes."""
    out = {}
    for f in sorted(p for p in cache.rglob("*") if p.is_file()):
        if f.suffix == ".parquet":
            t = pq.read_table(f)
            out[str(f)] = "\n".join(str(v) for c in t.columns for v in c.to_pylist() if isinstance(v, str))
        out[str(f) + ":bytes"] = f.read_bytes().decode("latin-1")
    return out


def test_planted_secrets_never_shown_nor_cached(tmp_path: Path, isolated_cache: Path) -> None:
    kineto, nsys = planted_kineto(tmp_path / "in"), planted_nsys(tmp_path / "in")
    outputs = all_outputs(kineto, nsys, tmp_path / "out")
    leaked = {name: [m for m in SECRETS if m in text] for name, text in outputs.items()}
    assert not {k: v for k, v in leaked.items() if v}, f"secrets shown by: {leaked}"
    # the names are still there, only the secret part is gone
    assert "password=[redacted]" in outputs["analyze-json"] or "password=[redacted]" in outputs["analyze-text"]
    assert REDACTED in outputs["other-analyze-json"]
    cached = cache_texts(isolated_cache)
    assert any(p.endswith("strings.parquet") for p in cached), "nothing was cached: the check below proves nothing"
    in_cache = {p: [m for m in SECRETS if m in text] for p, text in cached.items()}
    assert not {k: v for k, v in in_cache.items() if v}, f"secrets in cache files: {in_cache}"


def test_uncached_runs_are_redacted_too(tmp_path: Path, isolated_cache: Path) -> None:
    for trace in (planted_kineto(tmp_path / "in"), planted_nsys(tmp_path / "in2")):
        run = open_run(trace, use_cache=False)
        try:
            text = json.dumps([run.sql_rows("SELECT value FROM strings"), run.sql_rows("SELECT * FROM devices"),
                               run.sql_rows("SELECT * FROM runs")], default=str)
        finally:
            run.close()
        assert not [m for m in SECRETS if m in text], trace
        assert REDACTED in text


# Real traces whose kernel names an independent reader can list: the model must hold exactly those.
REAL_KINETO = [
    "hta/with_gpu_user_annotation__step_based_trace_2543932.json.gz",
    "hta/critical_path__alexnet__benchmark_result_2869224_1695835535_trace.json.gz",
    "hta/nccl_parser_config__nccl_data.json.gz",
    "hta/triton_example__triton_example.json.gz",
    "hta/amd_trace__mi250_minitoy_train_ROCm6_2_kineto.json.gz",
]
REAL_NSYS = ["pipit/saxpy-mpi-cuda_nsys_perlmutter0.sqlite", "pipit/perlmutter-cloverleaf-cuda.sqlite",
             "nsys-ai/mfu_2gpu_before.sqlite"]


def _model_kernel_names(path: Path) -> set[str]:
    run = open_run(path, use_cache=False)
    try:
        sql = "SELECT DISTINCT s.value FROM kernels k JOIN strings s ON s.string_id = k.name_id"
        return {r[0] for r in run.sql_rows(sql)}
    finally:
        run.close()


@pytest.mark.parametrize("rel", REAL_KINETO)
def test_real_kineto_kernel_names_unchanged(rel: str, isolated_cache: Path) -> None:
    doc = json.loads(gzip.decompress(real_path(rel).read_bytes()))
    expected = {e["name"] for e in doc["traceEvents"] if e.get("cat") == "kernel" and e.get("ph") == "X"}
    assert expected and _model_kernel_names(real_path(rel)) == expected


@pytest.mark.parametrize("rel", REAL_NSYS)
def test_real_nsys_kernel_names_unchanged(rel: str, isolated_cache: Path) -> None:
    con = sqlite3.connect(f"file:{real_path(rel)}?mode=ro", uri=True)
    try:
        expected = {r[0] for r in con.execute(
            "SELECT DISTINCT s.value FROM CUPTI_ACTIVITY_KIND_KERNEL k JOIN StringIds s ON s.id = k.demangledName")}
    finally:
        con.close()
    assert expected and _model_kernel_names(real_path(rel)) == expected


ESC = "\x1b[31m"


def test_escape_codes_never_reach_the_terminal(tmp_path: Path, isolated_cache: Path) -> None:
    """ESC from a kernel name, an annotation, a GPU name and a file name: stripped in the text output,
    the progress bar and the one-line errors (JSON escapes it; HTML and Markdown escaped it before)."""
    doc: dict[str, Any] = json.loads(gzip.decompress(real_path(KINETO).read_bytes()))
    for ev in doc["traceEvents"]:
        if ev.get("cat") in ("kernel", "user_annotation"):
            ev["name"] = f"{ESC}EVIL\x1b]0;title\x07 {ev['name']}\x1b[0m"
    doc["deviceProperties"][0]["name"] = f"{ESC}GPU\x1b[2J"
    folder = tmp_path / f"in{ESC}dir"
    folder.mkdir()
    trace = folder / f"t{ESC}race.json.gz"
    trace.write_bytes(gzip.compress(json.dumps(doc).encode()))
    for argv in (["analyze", str(trace)], ["analyze", str(trace), "--progress"], ["diff", str(trace), str(trace)]):
        rc, out, err = cli(argv)
        assert rc == 0 and "EVIL" in out, (argv, err)
        assert "\x1b" not in out and "\x1b" not in err and "\x07" not in out, argv
    bad = folder / f"bad{ESC}.json"
    bad.write_text('{"traceEvents": [' + json.dumps({"ph": "X", "name": ESC, "ts": "x"}) + "]")
    for argv in (["analyze", str(bad)], ["analyze", str(folder / f"missing{ESC}.json")],
                 ["report", str(trace), "-o", str(tmp_path / f"no{ESC}dir" / "r.html")]):
        rc, out, err = cli(argv)
        assert rc == 2 and len(err.splitlines()) == 1 and err.startswith("advisor: error: "), (argv, err)
        assert "\x1b" not in err and "\x1b" not in out, (argv, err)
    shutil.rmtree(folder)


@pytest.mark.parametrize("small_rows", [0, 10**9], ids=["duckdb-scan", "arrow-read"])
def test_parquet_files_are_redacted_in_place(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                             small_rows: int) -> None:
    """Both ways a parser-written file is checked: only the file holding a secret is rewritten."""
    import pyarrow as pa

    import advisor.redact as redact

    monkeypatch.setattr(redact, "SMALL_FILE_ROWS", small_rows)
    names = [f"kernel_{i}" for i in range(5000)]
    dirty, clean = tmp_path / "strings.parquet", tmp_path / "ranges.parquet"
    pq.write_table(pa.table({"string_id": list(range(5000)), "value": [*names[:-1], f"x {FORMS[0]}"]}), dirty)
    pq.write_table(pa.table({"kind": ["cuda_runtime"] * 5000, "n": list(range(5000))}), clean)
    before = clean.read_bytes(), clean.stat().st_mtime_ns
    assert redact.redact_parquet([dirty, clean]) == 1
    assert (clean.read_bytes(), clean.stat().st_mtime_ns) == before
    values = pq.read_table(dirty).column("value").to_pylist()
    assert values[:-1] == names[:-1] and values[-1] == "x password=[redacted]"
    assert pq.read_table(dirty).schema == pa.schema([("string_id", pa.int64()), ("value", pa.string())])
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ranges.parquet", "strings.parquet"]
