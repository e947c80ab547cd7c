"""Writing command output: stdout, a stream (FIFO, character device), or a file replaced atomically.

What `-o PATH` promises (docs/reliability.md, "Promises under hostile use"), and why each:
- It never names an input: no trace, `--ncu` report or `diff` side, no file inside an input
  directory (rank directories, capture directories), not even a new one. A report written over
  its own trace destroys the only copy of a capture.
- `-o -`, character devices (/dev/null, /dev/stdout, a tty) and FIFOs are written as streams,
  never replaced: as root, replacing /dev/null with a regular file broke the whole machine.
- Any other existing file that is not regular (directory, socket, block device) is refused.
  A symlink is followed: its target is written (atomically, the link stays a link) when it is a
  regular file that is no input, as a stream when it is a FIFO or character device; a dangling
  symlink is refused rather than guessed at.
- The path is checked before any work (`check_output`, called by the CLI before the command):
  a missing or unwritable directory fails in a second with one line, not after the analysis.
- A regular file is written to a temp file in its directory and renamed over it, so a reader
  never sees half a report; the temp file is removed on every exit path (an error, a full disk,
  Ctrl-C or SIGTERM: signals are held for the few milliseconds between creating and renaming it).
"""

from __future__ import annotations

import argparse
import contextlib
import glob
import os
import signal
import stat
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass

from advisor import interrupt
from advisor.errors import OutputError

HINT = "choose another -o path"
# Paths that name an open file descriptor of this process: always written in place, never renamed over.
_FD_PATHS = ("/dev/stdout", "/dev/stderr", "/dev/fd/", "/proc/self/fd/")


@dataclass(frozen=True)
class Target:
    """Where the output goes: `path` None is stdout; `stream` writes in place (FIFO, device)."""

    given: str
    path: str | None
    stream: bool


def input_paths(args: argparse.Namespace) -> list[str]:
    """Every input a command reads: traces, directories, diff sides (globs expanded), --ncu reports."""
    raw: list[str] = []
    for attr in ("paths", "path", "base", "new", "ncu"):
        value = getattr(args, attr, None)
        raw += value if isinstance(value, list) else [value] if isinstance(value, str) else []
    return [p for r in raw for p in (glob.glob(r) or [r])]


def check_output(args: argparse.Namespace) -> Target | None:
    """Validate `-o` before any work is done; OutputError (one line, exit 2) says what is wrong."""
    out = getattr(args, "output", None)
    return None if out is None else resolve(out, input_paths(args))


def resolve(out: str, inputs: list[str]) -> Target:
    """The write target for `-o out`, or OutputError when writing there could destroy data or fails."""
    if out == "-":
        return Target(out, None, True)
    if not out:
        raise OutputError("cannot write to an empty -o path", HINT)
    try:
        out.encode("utf-8")
    except UnicodeEncodeError:
        raise OutputError(f"cannot write {out}: the file name is not valid UTF-8", HINT) from None
    try:
        st: os.stat_result | None = os.stat(out)
    except FileNotFoundError:
        st = None
    except OSError as e:  # a parent that is a file (ENOTDIR), a symlink loop (ELOOP), permissions
        raise OutputError(f"cannot write {out}: {e.strerror}", HINT) from None
    if st is None:
        if os.path.islink(out):
            raise OutputError(f"cannot write {out}: it is a symlink to a missing file", "write to the target path")
        return _new_file(out, inputs)
    return _existing(out, st, inputs)


def _existing(out: str, st: os.stat_result, inputs: list[str]) -> Target:
    mode = st.st_mode
    if stat.S_ISDIR(mode):
        raise OutputError(f"cannot write {out}: it is a directory", "give a file name inside it")
    _not_an_input(out, inputs)
    if stat.S_ISFIFO(mode) or stat.S_ISCHR(mode) or os.path.abspath(out).startswith(_FD_PATHS):
        if not os.access(out, os.W_OK):
            raise OutputError(f"cannot write {out}: permission denied", HINT)
        return Target(out, out, True)
    if not stat.S_ISREG(mode):
        kind = "a socket" if stat.S_ISSOCK(mode) else "a block device" if stat.S_ISBLK(mode) else "not a regular file"
        raise OutputError(f"cannot write {out}: it is {kind}; refusing to replace it", HINT)
    real = os.path.realpath(out)  # a symlink to a regular file: write its target, the link stays
    _probe(out, os.path.dirname(real))
    return Target(out, real, False)


def _new_file(out: str, inputs: list[str]) -> Target:
    parent = os.path.dirname(os.path.abspath(out))
    if not os.path.isdir(parent):
        what = "not a directory" if os.path.lexists(parent) else "no such directory"
        raise OutputError(f"cannot write {out}: {what} {parent}", "create it first or " + HINT)
    real = os.path.join(os.path.realpath(parent), os.path.basename(out))
    _not_an_input(out, inputs, real)
    _probe(out, os.path.dirname(real))
    return Target(out, real, False)


def _not_an_input(out: str, inputs: list[str], real: str | None = None) -> None:
    """Refuse `out` (resolved: `real`) when it is an input, any link or hard link of one, or lies
    inside an input directory (even as a new file: a rank directory must hold only its traces)."""
    real = real or os.path.realpath(out)
    for inp in inputs:
        if not os.path.exists(inp):
            continue
        rin = os.path.realpath(inp)
        if real == rin or (os.path.exists(real) and os.path.samefile(real, inp)):
            raise OutputError(f"cannot write {out}: it is an input; refusing to overwrite it", HINT)
        if os.path.isdir(rin) and real.startswith(rin.rstrip(os.sep) + os.sep):
            raise OutputError(f"cannot write {out}: it is inside the input directory {inp}; "
                              "refusing to overwrite or add to an input", HINT)


def _probe(out: str, directory: str) -> None:
    """Create and remove a temp file where the output will go: the one honest test of writability
    (read-only file systems, /sys and /proc, quotas, ACLs; os.access says yes to root everywhere)."""
    try:
        fd, probe = tempfile.mkstemp(prefix=".advisor-probe.", dir=directory)
        os.close(fd)
        os.unlink(probe)
    except OSError as e:
        raise OutputError(f"cannot write {out}: {e.strerror or e} (in {directory})", HINT) from None


def say(message: str) -> None:
    """One line for the user on stderr (what was written, where): stdout stays the result alone."""
    from advisor.redact import terminal_safe

    sys.stderr.write(f"advisor: {terminal_safe(message)}\n")


def emit(text: str, output: str | None, inputs: list[str] | None = None, *, what: str = "output",
         styled: bool = False) -> None:
    """Write `text` to stdout or to `-o output` (checked again: the disk may have changed meanwhile).

    A file written says so on stderr (`advisor: wrote report.html (1.2 MiB)`): every write says what
    it wrote. `styled` text gets colour and emphasis when stdout is a terminal (advisor.cli.style)."""
    interrupt.raise_if_interrupted()  # an interrupted run prints nothing that looks like a result
    if not output or output == "-":
        if styled:
            from advisor.cli.style import emphasize, wants_colour

            text = emphasize(text) if wants_colour(sys.stdout) else text
        sys.stdout.write(text)
        return
    target = resolve(output, inputs or [])
    assert target.path is not None
    try:
        # surrogateescape: a file name that is not UTF-8 (shown in the report) is written back as
        # the bytes it was, as stdout does, instead of failing the write
        if target.stream:
            with open(target.path, "w", encoding="utf-8", errors="surrogateescape") as f:
                f.write(text)
        else:
            _write_atomic(target.path, text.encode("utf-8", errors="surrogateescape"))
    except BrokenPipeError:
        raise
    except OSError as e:  # ENOSPC, EDQUOT, EIO: one line, and no temp file left (see _write_atomic)
        raise OutputError(f"cannot write {output}: {e.strerror or e}", "free some space or " + HINT) from None
    if not target.stream:
        from advisor.reports.units import fmt_bytes

        say(f"wrote {what} to {output} ({fmt_bytes(len(text.encode('utf-8', errors='surrogateescape')))})")


def _write_atomic(path: str, data: bytes) -> None:
    """Write `data` to a temp file beside `path`, then rename it over `path`; the temp never outlives us."""
    directory, name = os.path.split(path)
    mode = _mode_for(path)
    with _signals_held():
        fd, tmp = tempfile.mkstemp(prefix=f".{name}.", suffix=".tmp", dir=directory)
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(data)
                f.flush()
                os.fsync(f.fileno())
            os.chmod(tmp, mode)  # mkstemp makes 0600; a report is meant to be shared
            os.replace(tmp, path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise


def _mode_for(path: str) -> int:
    """The existing file's permissions, else 0666 less the umask (what `open` would have made)."""
    with contextlib.suppress(OSError):
        return stat.S_IMODE(os.stat(path).st_mode)
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask


@contextlib.contextmanager
def _signals_held() -> Iterator[None]:
    """Hold SIGINT/SIGTERM while a temp file exists; they are delivered (and obeyed) right after."""
    sigs = {signal.SIGINT, signal.SIGTERM}
    old = signal.pthread_sigmask(signal.SIG_BLOCK, sigs)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)
