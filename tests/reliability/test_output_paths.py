"""`-o` onto every kind of path: no input is ever overwritten, devices and FIFOs stay what they are.

Each case runs the real command line in-process (advisor.cli.main) on a copy of a real Kineto trace
and asserts the exit code, the single error line, the inputs' sha256 and every folder listing
before and after (nothing appears beside or inside an input, no temp file is left anywhere).
"""

from __future__ import annotations

import hashlib
import os
import re
import stat
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.reliability.conftest import copy_real
from tests.reliability.surfaces import cli

KINETO = "hta/critical_path__cuda_event_sync__event_sync_trace.json.gz"
OTHER = "hta/critical_path__cuda_event_sync_multi_stream__event_sync_trace.json.gz"
NCU = "ncu/cutlass_a100_fused_two_gemms_s8_ncu2024.1.1.ncu-rep"


def sha(p: Path) -> str:
    if p.is_dir():
        return hashlib.sha256("".join(sha(c) + c.name for c in sorted(p.iterdir())).encode()).hexdigest()
    return hashlib.sha256(p.read_bytes()).hexdigest()


def listing(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


@pytest.fixture
def work(tmp_path: Path, isolated_cache: Path) -> Iterator[Path]:
    """A folder with a trace, another trace, an ncu report and a rank directory; all checked untouched after."""
    w = tmp_path / "w"
    copy_real(KINETO, w, "trace.json.gz")
    copy_real(OTHER, w, "other.json.gz")
    copy_real(NCU, w, "r.ncu-rep")
    copy_real(KINETO, w / "ranks", "rank0.json.gz")
    inputs = [w / "trace.json.gz", w / "other.json.gz", w / "r.ncu-rep", w / "ranks"]
    before = {p: sha(p) for p in inputs}
    yield w
    assert {p: sha(p) for p in inputs} == before, "an input changed"
    assert not [n for n in listing(w) if n.endswith(".tmp") or "/." in "/" + n], listing(w)


def refused(argv: list[str], expect: str) -> str:
    rc, out, err = cli(argv)
    lines = err.splitlines()
    assert rc == 2 and len(lines) == 1, (rc, err)
    assert lines[0].startswith("advisor: error: cannot write ") and expect in lines[0], lines[0]
    return lines[0]


@pytest.mark.parametrize(
    ("argv", "target"),
    [
        (["analyze", "trace.json.gz"], "trace.json.gz"),
        (["analyze", "trace.json.gz", "--ncu", "r.ncu-rep"], "r.ncu-rep"),
        (["report", "trace.json.gz", "--ncu", "r.ncu-rep"], "r.ncu-rep"),
        (["report", "trace.json.gz"], "trace.json.gz"),
        (["diff", "trace.json.gz", "other.json.gz"], "other.json.gz"),
        (["diff", "trace.json.gz", "other.json.gz"], "trace.json.gz"),
        (["analyze", "ranks"], "ranks/rank0.json.gz"),
        (["diff", "ranks", "other.json.gz"], "ranks/rank0.json.gz"),
    ],
)
def test_an_input_is_never_the_output(work: Path, isolated_cache: Path, argv: list[str], target: str,
                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(work)
    line = refused([*argv, "-o", target], "input")
    assert target in line
    assert listing(isolated_cache) == [], "the -o check must come before any work (nothing cached)"


def test_links_to_an_input_are_the_input(work: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(work)
    os.link("trace.json.gz", "hard.json.gz")
    os.symlink("trace.json.gz", "soft.json.gz")
    refused(["analyze", "trace.json.gz", "-o", "hard.json.gz"], "it is an input")
    refused(["analyze", "trace.json.gz", "-o", "soft.json.gz"], "it is an input")
    assert Path("soft.json.gz").is_symlink()
    os.unlink("hard.json.gz")
    os.unlink("soft.json.gz")


@pytest.mark.parametrize("cmd", [["analyze", "ranks"], ["diff", "ranks", "other.json.gz"], ["report", "ranks"]])
def test_no_new_file_inside_an_input_directory(work: Path, monkeypatch: pytest.MonkeyPatch, cmd: list[str]) -> None:
    monkeypatch.chdir(work)
    refused([*cmd, "-o", "ranks/new.html"], "inside the input directory ranks")
    refused([*cmd, "-o", str(work / "ranks" / ".." / "ranks" / "x.md")], "inside the input directory")
    assert listing(work / "ranks") == ["rank0.json.gz"]


def test_beside_an_input_file_is_fine(work: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A file input's folder is no input: `advisor report trace.json.gz -o trace.html` is the common case."""
    monkeypatch.chdir(work)
    rc, out, err = cli(["report", "trace.json.gz", "-o", "trace.html"])
    size = Path("trace.html").stat().st_size
    assert rc == 0 and out == "" and err.startswith("advisor: wrote HTML report to trace.html (")  # every write says so
    assert err.count("\n") == 1 and (f"({size} B)" in err or "KiB)" in err or "MiB)" in err)
    assert Path("trace.html").read_text().startswith("<!DOCTYPE html>")
    assert stat.S_IMODE(Path("trace.html").stat().st_mode) == 0o666 & ~_umask()
    os.chmod("trace.html", 0o640)  # an existing file keeps its permissions when replaced
    rc, _, _ = cli(["report", "trace.json.gz", "-o", "trace.html"])
    assert rc == 0 and stat.S_IMODE(Path("trace.html").stat().st_mode) == 0o640
    os.unlink("trace.html")


def _umask() -> int:
    m = os.umask(0)
    os.umask(m)
    return m


def test_a_fifo_is_written_as_a_stream(work: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(work)
    os.mkfifo("pipe")
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(Path("pipe").read_bytes()))
    reader.start()
    rc, out, err = cli(["analyze", "trace.json.gz", "--format", "json", "-o", "pipe"])
    reader.join(30)
    assert rc == 0 and out == "" and err == ""
    _, expected, _ = cli(["analyze", "trace.json.gz", "--format", "json"])
    assert len(got) == 1 and _stable(got[0].decode()) == _stable(expected)
    assert stat.S_ISFIFO(os.stat("pipe").st_mode), "the FIFO was replaced"
    os.unlink("pipe")


def _stable(text: str) -> str:
    """The JSON result without per-run timings (elapsed_s), which differ between two runs."""
    return re.sub(r'"elapsed_s": [0-9.e-]+', "", text)


def test_character_devices_stay_devices(work: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """/dev/null itself, and a null device node made in tmp (as root), are written through, never replaced."""
    monkeypatch.chdir(work)
    before = os.stat("/dev/null")
    rc, out, err = cli(["report", "trace.json.gz", "-o", "/dev/null"])
    assert (rc, out) == (0, "") and err == ""
    after = os.stat("/dev/null")
    assert stat.S_ISCHR(after.st_mode) and after.st_rdev == before.st_rdev and after.st_ino == before.st_ino
    node = work.parent / "null"
    try:
        os.mknod(node, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
    except PermissionError:
        pytest.skip("optional: creating a device node needs root (CAP_MKNOD)")
    rc, out, err = cli(["analyze", "trace.json.gz", "-o", str(node)])
    assert (rc, out) == (0, "") and err == ""
    assert stat.S_ISCHR(node.stat().st_mode) and node.stat().st_rdev == os.makedev(1, 3)


def test_dev_full_is_one_clear_line(work: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A character device that fails every write (ENOSPC) ends with one line, not a traceback."""
    monkeypatch.chdir(work)
    refused(["analyze", "trace.json.gz", "-o", "/dev/full"], "No space left on device")
    assert stat.S_ISCHR(os.stat("/dev/full").st_mode)


def test_stdout_names_write_to_stdout(work: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`-o -` and `-o /dev/stdout` print the result (before: /dev/stdout printed nothing)."""
    monkeypatch.chdir(work)
    _, expected, _ = cli(["analyze", "trace.json.gz", "--format", "json"])
    rc, out, err = cli(["analyze", "trace.json.gz", "--format", "json", "-o", "-"])
    assert (rc, _stable(out), err) == (0, _stable(expected), "")
    assert not Path("-").exists()
    # /dev/stdout is this process's fd 1, which pytest does not capture: check it in a child
    argv = [sys.executable, "-m", "advisor", "analyze", "trace.json.gz", "--format", "json", "-o", "/dev/stdout"]
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and _stable(proc.stdout) == _stable(expected) and proc.stderr == ""


def test_symlinks(work: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A symlink to a regular non-input file: its target is replaced and the link stays a link.
    A dangling symlink: refused (a link is never replaced by a file, and its target is not guessed)."""
    monkeypatch.chdir(work)
    Path("target.html").write_text("old")
    os.symlink("target.html", "link.html")
    rc, out, err = cli(["report", "trace.json.gz", "-o", "link.html"])
    assert (rc, out) == (0, "") and err.startswith("advisor: wrote HTML report to link.html (")
    assert Path("link.html").is_symlink() and Path("target.html").read_text().startswith("<!DOCTYPE html>")
    os.symlink("missing.html", "dangling.html")
    refused(["report", "trace.json.gz", "-o", "dangling.html"], "symlink to a missing file")
    assert Path("dangling.html").is_symlink() and not Path("missing.html").exists()
    for n in ("link.html", "dangling.html", "target.html"):
        os.unlink(n)


def test_paths_that_cannot_be_written(work: Path, isolated_cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(work)
    cases = [
        ("nowhere/x.html", "no such directory"),
        ("trace.json.gz/x.html", "Not a directory"),
        (".", "it is a directory"),
        ("ranks", "it is a directory"),
        ("/sys/advisor-report.html", "Permission denied"),  # sysfs refuses new files even to root
        ("bad\udcff.html", "not valid UTF-8"),  # how Python hands over a non-UTF-8 argv byte
        ("", "empty -o path"),
    ]
    for target, expect in cases:
        line = refused(["report", "trace.json.gz", "-o", target], expect)
        assert "\udcff" not in line and "internal error" not in line
    assert listing(isolated_cache) == [], "the -o check must come before any work"
    assert not Path("nowhere").exists()


def _mount_tmpfs(where: Path, options: str) -> bool:
    where.mkdir()
    return subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(where)],
                          capture_output=True).returncode == 0


def test_read_only_and_full_file_systems(work: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A read-only mount fails before any work; a full disk (16 KiB tmpfs, a 50 KB report) fails at the
    write with one line, and leaves no temp file behind."""
    monkeypatch.chdir(work)
    ro, full = tmp_path / "ro", tmp_path / "full"
    if not _mount_tmpfs(ro, "ro,size=64k"):
        pytest.skip("optional: mounting a tmpfs needs root with CAP_SYS_ADMIN")
    try:
        assert _mount_tmpfs(full, "size=16k")
        try:
            refused(["report", "trace.json.gz", "-o", str(ro / "r.html")], "Read-only file system")
            refused(["report", "trace.json.gz", "-o", str(full / "r.html")], "No space left on device")
            assert listing(full) == [] and listing(ro) == []
        finally:
            subprocess.run(["umount", str(full)], check=True)
    finally:
        subprocess.run(["umount", str(ro)], check=True)


def test_an_interrupt_during_the_write_leaves_no_temp(work: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Ctrl-C arriving while the temp file exists: exit 130, the old file intact, no temp left."""
    import advisor.cli.output as output

    monkeypatch.chdir(work)
    Path("out.md").write_text("previous")

    def interrupted(fd: int) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(output.os, "fsync", interrupted)
    rc, out, err = cli(["analyze", "trace.json.gz", "--format", "md", "-o", "out.md"])
    assert (rc, out, err) == (130, "", "advisor: interrupted\n")
    assert Path("out.md").read_text() == "previous"
    os.unlink("out.md")


def test_an_input_name_that_is_not_utf8_can_be_reported(work: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The report shows the input's name; a non-UTF-8 one is written back as its bytes (as on stdout),
    not an internal error."""
    monkeypatch.chdir(work)
    name = os.fsdecode(b"b\xffad.json.gz")
    Path(name).write_bytes(Path("trace.json.gz").read_bytes())
    for argv in (["report", name, "-o", "r.html"], ["analyze", name, "--format", "md", "-o", "r.md"]):
        rc, out, err = cli(argv)
        assert (rc, out) == (0, "") and err.startswith("advisor: wrote "), argv
    assert b"b\xffad.json.gz" in Path("r.html").read_bytes()
    for n in ("r.html", "r.md", name):
        os.unlink(n)


def test_sockets_and_block_devices_are_refused(work: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Neither is a stream one can write a report to: refused before any work, and left as they were."""
    import socket

    monkeypatch.chdir(work)
    sock_path = tmp_path / "s.sock"
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.bind(str(sock_path))
        refused(["report", "trace.json.gz", "-o", str(sock_path)], "it is a socket")
        assert stat.S_ISSOCK(sock_path.stat().st_mode)
    block = tmp_path / "blk"
    try:
        os.mknod(block, 0o600 | stat.S_IFBLK, os.makedev(7, 200))  # a loop device number; never opened
    except PermissionError:
        pytest.skip("optional: creating a device node needs root (CAP_MKNOD)")
    refused(["analyze", "trace.json.gz", "-o", str(block)], "it is a block device")
    assert stat.S_ISBLK(block.stat().st_mode)
