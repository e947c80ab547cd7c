"""Nsight Systems reports (.nsys-rep / .qdrep): export to SQLite with `nsys`, then read that.

The report format is private to nsys, so the only faithful reader is nsys itself. An nsys can only
open reports its own version understands (Debian's 2022.4 reads 2021-2022 reports and fails on
2023+ ones), so when the export cannot run we name both versions and the two ways out: a newer
nsys via --nsys, or exporting on the capture machine. The export goes to `options.work_dir`, never
next to the input.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

from advisor.errors import InputError, ToolMissing
from advisor.parsers.base import ParsedRun, ParseOptions
from advisor.parsers.nsys import sqlite

FORMAT = "nsys-rep"
EXPORT_TIMEOUT_S = 900
VERSION_PROBE_TIMEOUT_S = 30
# "2024.6.2.25-246234924588v0": the build string nsys stores in every report it writes
_BUILD_RE = re.compile(rb"(20\d\d\.\d{1,2}\.\d{1,3}\.\d{1,5})-[0-9a-f]{6,}")
# fallback: the install path of the capturing nsys ("/opt/nvidia/nsight-systems/2024.4.1/...")
_PATH_RE = re.compile(rb"nsight-systems(?:-cli)?[-/](20\d\d\.\d{1,2}\.\d{1,3}(?:\.\d+)?)")
_INSTALLED_RE = re.compile(r"(\d{4}\.\d+\.\d+(?:\.\d+)?)")
_PROBE_BYTES = 4 << 20


def report_version(path: Path) -> str | None:
    """The nsys version that wrote the report, read from its bytes (tail first: that is where it is)."""
    size = path.stat().st_size
    with path.open("rb") as f:
        f.seek(max(0, size - _PROBE_BYTES))
        tail = f.read()
        f.seek(0)
        head = f.read(_PROBE_BYTES)
    for pattern in (_BUILD_RE, _PATH_RE):
        for blob in (tail, head):
            m = pattern.search(blob)
            if m:
                return m.group(1).decode()
    return None


def find_nsys(options: ParseOptions) -> str | None:
    """options.nsys if given (must exist), else `nsys` on PATH."""
    given: str | None = options.nsys
    if given:
        exe = shutil.which(given) or (given if Path(given).is_file() else None)
        if exe is None:
            raise ToolMissing(f"--nsys {given}: no such executable", "pass the path of an nsys binary")
        return exe
    return shutil.which("nsys")


def installed_version(exe: str) -> str | None:
    """`nsys --version` as a version string, or None if it does not answer."""
    try:
        out = subprocess.run(
            [exe, "--version"], capture_output=True, text=True, timeout=VERSION_PROBE_TIMEOUT_S, check=False
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    m = _INSTALLED_RE.search(out.stdout + out.stderr)
    return m.group(1) if m else None


def cannot_export(path: Path, report: str | None, installed: str | None, why: str) -> ToolMissing:
    """One line: the report's nsys version, the installed one, and what to do."""
    rep = f"written by nsys {report}" if report else "written by an unknown nsys version"
    have = f"installed nsys is {installed}" if installed else "no nsys is installed"
    hint = (
        f"install Nsight Systems {report or 'matching the report'} or newer and pass --nsys PATH, "
        "or run `nsys export --type sqlite` on the capture machine and pass the .sqlite"
    )
    return ToolMissing(f"{path}: cannot export report ({rep}; {have}): {why}", hint, path=str(path))


def export_sqlite(path: Path, options: ParseOptions) -> Path:
    """Run `nsys export --type sqlite` into work_dir and return the SQLite path."""
    report = report_version(path)
    exe = find_nsys(options)
    if exe is None:
        raise cannot_export(path, report, None, "nsys not found on PATH")
    if options.work_dir is None:
        raise InputError(f"{path}: no work directory to export into", "call through advisor.ingest.open_run")
    work: Path = options.work_dir
    work.mkdir(parents=True, exist_ok=True)
    out = work / "x.sqlite"
    cmd = [exe, "export", "--type", "sqlite", "--force-overwrite", "true", "--output", str(out), str(path)]
    options.progress(0, 1, "nsys export")
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=EXPORT_TIMEOUT_S, check=False)
    except subprocess.TimeoutExpired:
        why = f"export timed out after {EXPORT_TIMEOUT_S} s"
        raise cannot_export(path, report, installed_version(exe), why) from None
    except OSError as e:
        raise cannot_export(path, report, None, f"cannot run {exe} ({e.strerror})") from None
    if done.returncode != 0 or not out.is_file():
        raise cannot_export(path, report, installed_version(exe), _why(done))
    return out


def _why(done: subprocess.CompletedProcess[str]) -> str:
    """The last meaningful line nsys printed (it prints progress bars on stdout)."""
    lines = [ln.strip() for ln in (done.stderr + "\n" + done.stdout).splitlines() if ln.strip()]
    useful = [ln for ln in lines if "Exporting" not in ln]
    return (useful or [f"exit status {done.returncode}"])[0][:200]


def parse(path: Path, options: ParseOptions) -> ParsedRun:
    """Export the report with nsys, then read the SQLite like any nsys export."""
    path = Path(path)
    exported = export_sqlite(path, options)
    parsed = sqlite.parse(exported, options)
    parsed.run["format"] = FORMAT
    parsed.notes["report_nsys_version"] = report_version(path)
    parsed.notes["exported_with"] = parsed.run.get("tool_version")
    parsed.run["tool_version"] = parsed.notes["report_nsys_version"] or parsed.run.get("tool_version")
    return parsed
