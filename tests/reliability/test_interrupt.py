"""Ctrl-C (SIGINT) and SIGTERM at several points of a real run: exit 130 / 143, nothing that looks like
a result, no -o file, no temp file in the output folder or the cache.

Before, a SIGINT that landed inside a DuckDB query surfaced as `RuntimeError: Query interrupted`,
which the rule runner recorded as one failed rule: the run exited 0 with a rule missing and another
headline. Each case runs `python -m advisor` as a child on a copy of a real 3 MB Kineto trace (cold,
about 2-3 s) and signals it at a point it proves it has reached: the cache folder gained its first
entry (the parse has started), or a finished entry is in place (the ingest is done, the rules run).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from advisor import interrupt
from tests.reliability.conftest import copy_real

BIG = "hta/df_index_resolver__df_index_resolver.json.gz"
SMALL = "hta/critical_path__cuda_event_sync__event_sync_trace.json.gz"


def leftovers(cache: Path) -> list[str]:
    """Temp files a run may leave: *.tmp anywhere, and any file inside a hidden (work / staging) folder."""
    out = []
    for p in cache.rglob("*"):
        rel = p.relative_to(cache)
        hidden = any(part.startswith(".") for part in rel.parts[:-1])
        if p.name.endswith(".tmp") or (p.is_file() and hidden and not p.name.endswith(".lock")):
            out.append(str(rel))
    return out


def _drain(stream: object, sink: list[bytes]) -> None:
    for chunk in iter(lambda: stream.read1(65536), b""):  # type: ignore[attr-defined]
        sink.append(chunk)


def _reached(point: str, cache: Path, err: list[bytes]) -> bool:
    """'cache-entry': the cache folder gained its first entry (the parse has started); 'published': a
    finished entry (with meta.json) is in place, so the ingest is done and the analysis runs."""
    if point == "cache-entry":
        return any(cache.iterdir())
    if point == "published":
        return any((d / "meta.json").exists() for d in cache.iterdir() if not d.name.startswith("."))
    return point.encode() in b"".join(err)


def run_until(argv: list[str], cache: Path, reached: str, sig: int, timeout: float = 120) -> tuple[int, bytes, bytes]:
    """Start `advisor argv`, send `sig` once `reached` ('cache-entry' or a stderr marker) holds; wait."""
    env = dict(os.environ, ADVISOR_CACHE_DIR=str(cache))
    proc = subprocess.Popen([sys.executable, "-m", "advisor", *argv], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env=env)
    out: list[bytes] = []
    err: list[bytes] = []
    threads = [threading.Thread(target=_drain, args=(proc.stdout, out)),
               threading.Thread(target=_drain, args=(proc.stderr, err))]
    for t in threads:
        t.start()
    deadline = time.monotonic() + timeout
    while proc.poll() is None and time.monotonic() < deadline:
        hit = _reached(reached, cache, err)
        if hit:
            proc.send_signal(sig)
            break
        time.sleep(0.005)
    rc = proc.wait(timeout)
    for t in threads:
        t.join()
    return rc, b"".join(out), b"".join(err)


CASES = [
    ("analyze-json parse", ["analyze", "{big}", "--format", "json", "--progress"], "cache-entry", signal.SIGINT),
    ("analyze-json rules", ["analyze", "{big}", "--format", "json", "--progress"], "published", signal.SIGINT),
    ("analyze-o rules", ["analyze", "{big}", "--progress", "-o", "{out}/a.txt"], "published", signal.SIGINT),
    ("analyze-o SIGTERM", ["analyze", "{big}", "--progress", "-o", "{out}/a.txt"], "published", signal.SIGTERM),
    ("report parse", ["report", "{big}", "-o", "{out}/r.html"], "cache-entry", signal.SIGINT),
    ("diff parse", ["diff", "{big}", "{small}", "--format", "json", "-o", "{out}/d.json"], "cache-entry",
     signal.SIGTERM),
]


@pytest.mark.parametrize(("name", "argv", "reached", "sig"), CASES, ids=[c[0] for c in CASES])
def test_a_signal_stops_the_run_with_no_result(tmp_path: Path, name: str, argv: list[str], reached: str,
                                               sig: int) -> None:
    big, small = copy_real(BIG, tmp_path / "in"), copy_real(SMALL, tmp_path / "in")
    out_dir, cache = tmp_path / "out", tmp_path / "cache"
    out_dir.mkdir()
    cache.mkdir()
    args = [a.format(big=big, small=small, out=out_dir) for a in argv]
    rc, out, err = run_until(args, cache, reached, sig)
    word = "interrupted" if sig == signal.SIGINT else "terminated"
    assert rc == 128 + sig, (rc, err[-300:])
    assert out == b"", "an interrupted run printed something that looks like a result"
    assert err.decode().rstrip("\n").rsplit("\n", 1)[-1].endswith(f"advisor: {word}"), err[-300:]
    assert "Traceback" not in err.decode() and "error" not in err.decode()
    assert list(out_dir.iterdir()) == [], "a result or a temp file was left in the output folder"
    assert leftovers(cache) == []
    assert sorted(p.name for p in (tmp_path / "in").iterdir()) == sorted([big.name, small.name])


def test_duckdb_reports_of_an_interrupt_are_interrupts() -> None:
    """What the rule runner and the metric cache see when a signal lands inside a query."""
    import duckdb

    assert interrupt.is_interrupt(RuntimeError("Query interrupted"))
    assert interrupt.is_interrupt(duckdb.InterruptException("INTERRUPT Error: Interrupted!"))
    assert not interrupt.is_interrupt(RuntimeError("Binder Error: column x not found"))
    with pytest.raises(KeyboardInterrupt):
        interrupt.raise_if_interrupted(RuntimeError("Query interrupted"))
    interrupt.raise_if_interrupted(ValueError("a rule bug"))  # a real rule failure stays a rule failure

