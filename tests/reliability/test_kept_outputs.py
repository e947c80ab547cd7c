"""Kept outputs (advisor/engine/kept.py): a repeated `advisor analyze` prints what the first printed, and only
while the input's bytes, every option, the ADVISOR_* settings and the code are the same."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from advisor.engine import kept
from tests.conftest import ROOT, real_path
from tests.reliability.conftest import copy_real
from tests.reliability.surfaces import cli

KINETO = "hta/with_gpu_user_annotation__step_based_trace_2543932.json.gz"
OTHER = "hta/critical_path__alexnet__benchmark_result_2869224_1695835535_trace.json.gz"


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    import advisor.model.entry as entry

    monkeypatch.setattr(entry, "RACY_NS", 0)  # copies made seconds ago count as settled
    root = tmp_path / "cache"
    monkeypatch.setenv("ADVISOR_CACHE_DIR", str(root))
    return root


def _records(cache: Path) -> list[Path]:
    return sorted(cache.glob(f"*/{kept.OUTPUTS}/*.json"))


def _no_analysis(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fail the test if the command analyzes: a kept output is served without it."""
    import advisor.api

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("analyzed again although the output was kept")

    monkeypatch.setattr(advisor.api, "analyze", refuse)


@pytest.mark.parametrize("fmt", ["text", "json", "md"])
def test_second_run_prints_the_kept_output(tmp_path: Path, cache: Path, monkeypatch: pytest.MonkeyPatch,
                                           fmt: str) -> None:
    trace = copy_real(KINETO, tmp_path / "in")
    first = cli(["analyze", str(trace), "--format", fmt])
    assert first[0] in (0, 1) and first[1]
    assert len(_records(cache)) == 1
    _no_analysis(monkeypatch)
    assert cli(["analyze", str(trace), "--format", fmt]) == first


def test_second_report_writes_the_kept_html(tmp_path: Path, cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    trace = copy_real(KINETO, tmp_path / "in")
    first, second = tmp_path / "first.html", tmp_path / "second.html"
    assert cli(["report", str(trace), "-o", str(first)])[0] == 0
    import advisor.api

    def refuse(*args: object, **kwargs: object) -> None:
        raise RuntimeError("report recomputed")

    monkeypatch.setattr(advisor.api, "report_inputs", refuse)
    assert cli(["report", str(trace), "-o", str(second)])[0] == 0
    assert second.read_bytes() == first.read_bytes()
    assert cli(["report", str(trace), "-o", str(second), "--top", "3"])[0] == 2  # another key: recomputed
    assert len(_records(cache)) == 1


def test_second_diff_prints_the_kept_diff(tmp_path: Path, cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A repeated `diff` of the same two inputs prints the first's output and exit code without opening either
    side; the record is BASE's and names NEW's bytes, so other bytes under NEW's name are diffed again."""
    base = copy_real(KINETO, tmp_path / "a")
    new = copy_real(OTHER, tmp_path / "b")
    argv = ["diff", str(base), str(new), "--format", "json", "--fail-on-regression", "0"]
    first = cli(argv)
    assert first[0] in (0, 1) and json.loads(first[1])["gate"]["failed"] == (first[0] == 1)
    import advisor.api

    real = advisor.api.open_side

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("diffed again although the output was kept")

    monkeypatch.setattr(advisor.api, "open_side", refuse)
    assert cli(argv) == first
    assert cli([*argv[:4], "md"])[0] == 2  # another format: another key, diffed again (refused here)
    monkeypatch.setattr(advisor.api, "open_side", real)
    os.replace(copy_real(KINETO, tmp_path / "c"), new)  # NEW now holds BASE's bytes
    again = cli(argv)
    assert again[0] in (0, 1) and again[1] != first[1]


def test_diff_of_a_glob_keeps_nothing(tmp_path: Path, cache: Path) -> None:
    folder = tmp_path / "caps"
    for i in (1, 2):
        copy_real(KINETO, folder, f"cap{i}.json.gz")
    assert cli(["diff", str(folder / "cap*.json.gz"), str(folder / "cap1.json.gz"), "--no-rules"])[0] in (0, 1)
    assert _records(cache) == []


def test_rank_directory_is_served_before_it_is_classified(tmp_path: Path, cache: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """A directory of rank files is one run: its kept output is found under the directory as given, before the
    directory is read to tell ranks from repeated captures (which loads the diff package: 0.73 -> 0.09 s)."""
    ranks = tmp_path / "ranks"
    shutil.copytree(ROOT / "fixtures" / "kineto" / "CO001_no_comm_compute_overlap_baseline", ranks)
    first = cli(["analyze", str(ranks)])
    assert first[0] in (0, 1) and len(_records(cache)) == 1
    _no_analysis(monkeypatch)
    import advisor.api

    def refuse(*args: object, **kwargs: object) -> None:
        raise RuntimeError("classified the directory again")

    monkeypatch.setattr(advisor.api, "resolve_side", refuse)
    assert cli(["analyze", str(ranks)]) == first


def test_directory_of_repeated_captures_keeps_nothing(tmp_path: Path, cache: Path) -> None:
    """Two captures in one directory are two runs (`analyze` lists both): no one run's entry can hold that output."""
    folder = tmp_path / "captures"
    copy_real(KINETO, folder, name="a.json.gz")
    copy_real(OTHER, folder, name="b.json.gz")
    first = cli(["analyze", str(folder), "--format", "json"])
    assert len(json.loads(first[1])["runs"]) == 2
    again = json.loads(cli(["analyze", str(folder), "--format", "json"])[1])
    assert [r["counts"] for r in again["runs"]] == [r["counts"] for r in json.loads(first[1])["runs"]]
    assert _records(cache) == []


def test_every_option_is_in_the_key(tmp_path: Path, cache: Path) -> None:
    trace = copy_real(KINETO, tmp_path / "in")
    runs = [["--top", "3"], ["--top", "4"], ["--no-rules"], ["--wide"], ["--select", "ID001"],
            ["--fail-on", "any"], ["--rule-option", "LA001.short_kernel_us=20"]]
    got = [cli(["analyze", str(trace), *opts]) for opts in runs]
    assert len(_records(cache)) == len(runs)  # one record per set of options
    assert got[0][1] != got[1][1] and got[2][1] != got[0][1]
    assert got[5][0] == 1 and got[0][0] == 0  # the exit code is kept with its --fail-on
    assert [cli(["analyze", str(trace), *opts]) for opts in runs] == got


def test_an_advisor_setting_or_other_code_is_another_key(tmp_path: Path, cache: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    trace = copy_real(KINETO, tmp_path / "in")
    cli(["analyze", str(trace)])
    monkeypatch.setenv("ADVISOR_MAX_BYTES", str(10**12))
    cli(["analyze", str(trace)])
    assert len(_records(cache)) == 2
    monkeypatch.setattr(kept, "code_fingerprint", lambda: "other code")
    assert kept.kept_output(str(trace), _key(trace)) is None


def _key(trace: Path) -> dict[str, object]:
    """The key `analyze TRACE` keeps its output under (advisor.cli.commands.analyze.kept_key)."""
    from advisor.cli.kept import kept_key
    from advisor.cli.main import build_parser

    args = build_parser("analyze").parse_args(["analyze", str(trace)])
    key = kept_key(args, [str(trace)])
    assert key is not None
    return key


def test_edited_input_is_analyzed_again(tmp_path: Path, cache: Path) -> None:
    trace = copy_real(KINETO, tmp_path / "in")
    before = cli(["analyze", str(trace), "--format", "json"])
    other = copy_real(OTHER, tmp_path / "b")
    os.replace(other, trace)  # other bytes under the same name
    after = cli(["analyze", str(trace), "--format", "json"])
    assert json.loads(after[1])["counts"] != json.loads(before[1])["counts"]


def test_damaged_record_is_not_used(tmp_path: Path, cache: Path) -> None:
    trace = copy_real(KINETO, tmp_path / "in")
    first = cli(["analyze", str(trace)])
    [record] = _records(cache)
    doc = json.loads(record.read_text())
    doc["text"] = doc["text"].replace("do this first", "do this LAST")  # its crc32 no longer matches
    record.write_text(json.dumps(doc))
    assert kept.kept_output(str(trace), _key(trace)) is None
    assert cli(["analyze", str(trace)]) == first
    assert kept.kept_output(str(trace), _key(trace)) == kept.Kept(first[1], first[0])  # written again


def test_no_cache_keeps_nothing_and_reads_nothing(tmp_path: Path, cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    trace = copy_real(KINETO, tmp_path / "in")
    first = cli(["analyze", str(trace)])
    calls: list[str] = []
    real = kept.kept_output
    monkeypatch.setattr(kept, "kept_output", lambda *a: calls.append("read") or real(*a))
    assert cli(["analyze", str(trace), "--no-cache"])[1] == first[1]
    assert calls == [] and len(_records(cache)) == 1


def test_records_per_entry_are_bounded(tmp_path: Path, cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    trace = copy_real(KINETO, tmp_path / "in")
    monkeypatch.setattr(kept, "MAX_KEPT", 2)
    for top in (1, 2, 3):
        cli(["analyze", str(trace), "--top", str(top), "--no-rules"])
    assert len(_records(cache)) == 2
    assert not list(cache.glob(".work/*/kept-*")), "a temp record left in the work area"


@pytest.mark.parametrize("command", ["analyze", "diff"])
def test_kept_output_needs_no_duckdb(tmp_path: Path, command: str) -> None:
    """The point of keeping it: the repeated command imports neither DuckDB nor the rules (a small trace's warm
    analyze took ~0.45 s, most of it those imports). Run as the user runs it, in a fresh process."""
    # the shared fixtures: old enough that their stat fingerprints are kept
    inputs = [str(real_path(KINETO))] + ([str(real_path(OTHER))] if command == "diff" else [])
    env = dict(os.environ, ADVISOR_CACHE_DIR=str(tmp_path / "cache"))
    # advisor ends its process itself after its exit functions (advisor.cli.main.console_main): the probe is one
    probe = (f"import atexit, runpy, sys; sys.argv = ['advisor', {command!r}, *sys.argv[1:]]\n"
             "heavy = ('duckdb', 'pyarrow', 'advisor.rules.base')\n"
             "atexit.register(lambda: print(sorted(m for m in heavy if m in sys.modules), file=sys.stderr))\n"
             "runpy.run_module('advisor', run_name='__main__')")
    runs = [subprocess.run([sys.executable, "-c", probe, *inputs], capture_output=True, text=True, env=env,
                           cwd=ROOT, timeout=300) for _ in range(2)]
    assert runs[0].stdout == runs[1].stdout
    assert ("do this first" if command == "analyze" else "advisor diff") in runs[0].stdout
    assert "duckdb" in runs[0].stderr.splitlines()[-1]
    assert runs[1].stderr.splitlines()[-1] == "[]"
