"""CLI norms a ruff/sqlfluff user expects (issue 21): bare help, examples that work, colour only on a
terminal, --ignore, --fail-on by saving, `cache info|clear` with eviction, -o checked first, writes said."""

from __future__ import annotations

import json
import os
import pty
import shlex
import subprocess
import sys
import time
from pathlib import Path

import pytest

from advisor.cli.main import TRACE, TRACE_NEW, build_parser, command_modules, examples, main

ROOT = Path(__file__).resolve().parents[2]
ESC = "\033["


def _run(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    rc = main(args)
    out, err = capsys.readouterr()
    return rc, out, err


def _json(args: list[str], capsys: pytest.CaptureFixture[str]) -> dict:  # type: ignore[type-arg]
    rc, out, _ = _run(["analyze", str(ROOT / TRACE), "--format", "json", *args], capsys)
    assert rc in (0, 1)
    return dict(json.loads(out))


def _in_pty(argv: list[str], cwd: Path, env: dict[str, str] | None = None) -> tuple[int, str]:
    """Run advisor with stdout on a pseudo-terminal (stderr too); returns (exit code, what it drew)."""
    leader, follower = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-m", "advisor", *argv], stdout=follower, stderr=follower,
                            stdin=subprocess.DEVNULL, cwd=cwd, env={**os.environ, **(env or {})})
    os.close(follower)
    chunks = []
    while True:
        try:
            data = os.read(leader, 65536)
        except OSError:
            break
        if not data:
            break
        chunks.append(data)
    os.close(leader)
    return proc.wait(timeout=120), b"".join(chunks).decode(errors="replace")


def test_bare_advisor_prints_help(capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, err = _run([], capsys)
    assert rc == 0 and err == ""
    assert out.startswith("usage: advisor") and "analyze" in out and "cache" in out


def _all_examples() -> list[str]:
    found = []
    for m in command_modules():
        text = examples(m) or ""
        found += [line.strip() for line in text.splitlines()[1:]]
    return found


def test_every_command_has_examples_in_its_help() -> None:
    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    for name, sp in sub.choices.items():  # type: ignore[attr-defined]
        assert f"examples:\n  advisor {name}" in sp.format_help(), name


def test_a_command_imports_only_itself(tmp_path: Path) -> None:
    """`advisor analyze` builds the parser of analyze alone: no other command module (diff, report, tui, with the
    renderers and Arrow they import) is loaded. Each command module is named as its command."""
    assert all(m.__name__.rsplit(".", 1)[1] == m.NAME for m in command_modules())
    code = (
        "import sys; from advisor.cli.main import main; "
        f"rc = main(['analyze', {TRACE!r}, '--format', 'json', '-o', {str(tmp_path / 'a.json')!r}]); "
        "print(rc, sorted(m for m in sys.modules if m.startswith('advisor.cli.commands.')))"
    )
    env = {**os.environ, "ADVISOR_CACHE_DIR": str(tmp_path / "cache")}
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, check=True)
    rc, loaded = out.stdout.split(maxsplit=1)
    assert rc in ("0", "1") and loaded.strip() == "['advisor.cli.commands.analyze']"


INTERACTIVE = ("advisor tui", "advisor mcp")  # covered by tests/tui and tests/e2e/test_mcp.py


@pytest.mark.parametrize("example", [e for e in _all_examples() if not e.startswith(INTERACTIVE)])
def test_help_examples_work_when_copied(example: str, tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """Each example, run from the repository root (its relative paths are bundled fixtures), exits 0, or 1
    for a --fail-on gate that the example's trace trips; a file it names is written and said."""
    argv = shlex.split(example)[1:]
    monkeypatch.chdir(ROOT)
    argv = [str(tmp_path / a) if prev == "-o" else a for prev, a in zip(["", *argv], argv, strict=False)]
    rc, out, err = _run(argv, capsys)
    assert rc == (1 if "--fail-on" in argv else 0), (example, err)
    if "-o" in argv:
        target = Path(argv[argv.index("-o") + 1])
        assert target.stat().st_size > 0 and out == ""
        assert "wrote " in err and str(target) in err
    elif argv[0] != "cache":
        assert out.strip()


def test_explain_takes_a_rule_name(capsys: pytest.CaptureFixture[str]) -> None:
    assert _run(["explain", "pageable-memcpy"], capsys)[1] == _run(["explain", "IO001"], capsys)[1]


def test_ignore_removes_rules_from_the_selection(capsys: pytest.CaptureFixture[str]) -> None:
    every = {r["code"] for r in _json([], capsys)["runs"][0]["rules"]}
    left = {r["code"] for r in _json(["--ignore", "IO002", "--ignore", "ME"], capsys)["runs"][0]["rules"]}
    assert left == {c for c in every if c != "IO002" and not c.startswith("ME")}
    io = {r["code"] for r in _json(["--select", "IO", "--ignore", "IO002"], capsys)["runs"][0]["rules"]}
    assert io == {c for c in every if c.startswith("IO") and c != "IO002"}
    rc, _, err = _run(["analyze", str(ROOT / TRACE), "--select", "IO001", "--ignore", "IO"], capsys)
    assert rc == 2 and "--ignore leaves no rule to run" in err


def test_fail_on_by_estimated_saving(capsys: pytest.CaptureFixture[str]) -> None:
    findings = _json([], capsys)["runs"][0]["findings"]
    top_pct = max(f["gain_pct"] for f in findings)
    top_ns = max(f["est_gain_ns"] for f in findings)
    assert top_pct > 1
    trace = str(ROOT / TRACE)
    for gate, expect in ((f"gain>{top_pct - 0.5:.2f}%", 1), (f"gain>{top_pct + 0.5:.2f}%", 0),
                         (f"gain>{(top_ns - 1000) / 1e6:.4f}ms", 1), (f"gain>{(top_ns + 1000) / 1e3:.1f}us", 0),
                         ("any", 1), ("none", 0)):
        assert _run(["analyze", trace, "--fail-on", gate], capsys)[0] == expect, gate
    with pytest.raises(SystemExit) as e:  # a usage error: argparse exits 2 with one line
        main(["analyze", trace, "--fail-on", "gain>five"])
    assert e.value.code == 2 and "gain>N%" in capsys.readouterr().err


def test_output_checked_before_any_work(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    cache = tmp_path / "cache"
    monkeypatch.setenv("ADVISOR_CACHE_DIR", str(cache))
    bad = tmp_path / "missing" / "out.md"
    start = time.monotonic()
    rc, out, err = _run(["analyze", str(ROOT / TRACE_NEW), "-o", str(bad)], capsys)
    assert rc == 2 and out == ""
    assert err == f"advisor: error: cannot write {bad}: no such directory {bad.parent}; create it first or " \
                  "choose another -o path\n"
    assert time.monotonic() - start < 5 and not cache.exists(), "the trace was read before -o was checked"
    assert list(tmp_path.iterdir()) == []


def _du(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


def test_cache_info_clear_and_eviction(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                       monkeypatch: pytest.MonkeyPatch) -> None:
    cache = tmp_path / "cache"
    monkeypatch.setenv("ADVISOR_CACHE_DIR", str(cache))
    entries: list[Path] = []
    for t in (TRACE, TRACE_NEW):  # entries[0] holds TRACE, entries[1] TRACE_NEW
        assert _run(["analyze", str(ROOT / t), "--no-rules"], capsys)[0] == 0
        entries += [p for p in cache.iterdir() if not p.name.startswith(".") and p not in entries]
    assert len(entries) == 2
    rc, out, _ = _run(["cache", "info"], capsys)
    assert rc == 0 and f"cache: {cache}" in out and "entries: 2 parsed run(s)" in out
    from advisor.reports.units import fmt_bytes

    assert fmt_bytes(sum(_du(e) for e in entries)) in out
    old = time.time() - 3600  # the first entry was last used an hour ago: it goes first
    for f in [entries[0], *entries[0].rglob("*")]:
        os.utime(f, (old, old))
    monkeypatch.setenv("ADVISOR_CACHE_MAX_SIZE", "1")  # every command now evicts what it may
    assert _run(["analyze", str(ROOT / TRACE_NEW), "--no-rules"], capsys)[0] == 0
    left = [p for p in cache.iterdir() if not p.name.startswith(".")]
    assert left == [entries[1]], "the least recently used entry is evicted; the one just used stays"
    monkeypatch.delenv("ADVISOR_CACHE_MAX_SIZE")
    rc, _, err = _run(["cache", "clear"], capsys)
    assert rc == 0 and "removed 1 cached run(s)" in err
    assert [p for p in cache.iterdir() if not p.name.startswith(".")] == []


def test_colour_only_on_a_terminal(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    trace = str(ROOT / TRACE)
    rc, drawn = _in_pty(["analyze", trace], tmp_path)
    assert rc == 0
    verdict = next(line for line in drawn.splitlines() if "Verdict:" in line)
    first = next(line for line in drawn.splitlines() if "do this first" in line)
    assert verdict.startswith(ESC) and first.startswith(ESC)
    rc, drawn = _in_pty(["analyze", trace], tmp_path, {"NO_COLOR": "1"})
    assert rc == 0 and ESC not in drawn and "Verdict:" in drawn
    rc, out, _ = _run(["analyze", trace], capsys)  # captured (not a terminal): plain
    assert rc == 0 and ESC not in out and "Verdict:" in out


def test_report_in_a_terminal_writes_a_named_file(tmp_path: Path) -> None:
    rc, drawn = _in_pty(["report", str(ROOT / TRACE)], tmp_path)
    assert rc == 0
    written = tmp_path / "IO001_pageable_memcpy_baseline.advisor.html"
    assert written.read_text().startswith("<!DOCTYPE html>") or "<html" in written.read_text()[:500]
    assert "advisor: wrote HTML report to IO001_pageable_memcpy_baseline.advisor.html" in drawn
    assert "<html" not in drawn


def test_tui_refuses_a_bad_path_or_no_terminal_before_full_screen(tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, err = _run(["tui", str(tmp_path / "missing.json")], capsys)
    assert (rc, out) == (2, "") and err == (f"advisor: error: cannot read {tmp_path / 'missing.json'}: no such file "
                                            "or directory; check the path\n")
    rc, out, err = _run(["tui", str(ROOT / TRACE)], capsys)  # pytest's stdin is no terminal
    assert (rc, out) == (2, "") and "advisor tui needs a terminal" in err and ESC not in err


def _gpus_in(sqlite_gz: Path, tmp: Path) -> int:
    import gzip
    import shutil
    import sqlite3

    db = tmp / (sqlite_gz.name + ".db")
    with gzip.open(sqlite_gz) as src, open(db, "wb") as dst:
        shutil.copyfileobj(src, dst)
    with sqlite3.connect(db) as con:
        return int(con.execute("SELECT count(DISTINCT deviceId) FROM CUPTI_ACTIVITY_KIND_KERNEL").fetchone()[0])


def test_directory_of_repeated_captures_is_runs_not_gpus(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import shutil

    caps = tmp_path / "caps"
    caps.mkdir()
    for t in (TRACE, TRACE_NEW):
        shutil.copy(ROOT / t, caps)
    rc, out, _ = _run(["analyze", str(caps), "--format", "json", "--no-rules"], capsys)
    doc = json.loads(out)
    assert rc == 0 and [r["input"]["path"] for r in doc["runs"]] == sorted(str(p) for p in caps.iterdir())
    assert [len(r["devices"]) for r in doc["runs"]] == [_gpus_in(p, tmp_path) for p in sorted(caps.iterdir())]
    for cmd in (["report", str(caps), "-o", str(tmp_path / "r.html")], ["tui", str(caps)]):
        rc, out, err = _run(cmd, capsys)
        assert rc == 2 and f"{caps} holds 2 repeated captures" in err, err
    rc, _, err = _run(["analyze", str(caps), "--dir-as", "ranks"], capsys)
    assert rc == 2 and "advisor: error:" in err  # nsys files are no Kineto rank set: refused, not merged
