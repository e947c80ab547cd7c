"""One large plain-JSON Kineto file decoded on several cores.

Decoding (msgspec) and filling columns (`columns.FileColumns`) are Python-bound, ~3.5 us per event on
one core; a 1 GB trace holds ~5.6M events. `traceEvents` is cut into byte spans at event boundaries;
this process decodes the first span, worker processes (`python -m advisor.parsers.kineto.worker`) the
others, each into its own FileColumns, exactly as the sequential reader would over that text. A worker
sends each slice's columns as soon as they are made (so no span's columns are ever held twice) and, at
the end, its small state (counts, thread names, comms and flow rows, the text after the array).
`FileColumns.absorb` appends them in file order: the result equals what one reader fed the whole text
builds, which the tests check on every Kineto fixture with forced cuts.

A cut is checked twice: before, by decoding the event after it (it must be an event, not an object
nested in args); after, because each span must decode exactly to its end (a cut inside a string or a
nested object leaves an open string or bracket, which cannot). Any surprise (a worker that fails,
exits or sends nothing; a gzip file, which cannot be entered in the middle; a header that is not
where Kineto writes it) raises `Fallback`, and the caller reads the file sequentially, which gives
the usual one-line errors.

`ADVISOR_PARSE_PROCESSES` sets the number of processes (1: never split); by default one per usable
core, at most MAX_PROCESSES, and only for files of at least 2 x MIN_SPAN_BYTES.
"""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import msgspec

from advisor.errors import InputError
from advisor.parsers.kineto.columns import FileColumns, add_counts
from advisor.parsers.kineto.decode import HEAD_RE, SEP_RE, SNIFF_BYTES, EventStream, Fallback

PROCESSES_ENV = "ADVISOR_PARSE_PROCESSES"
MIN_SPAN_BYTES = 64 << 20  # below this a span's decode is shorter than a worker's start (~0.5 s)
MAX_PROCESSES = 8
CUT_WINDOW = 4 << 20  # text searched for a cut after each target offset
CUT_TRIES = 32  # candidate boundaries tried per cut
WORKER_MODULE = "advisor.parsers.kineto.worker"
_EVENT_CHECK = msgspec.json.Decoder(list[dict[str, Any]])


def processes(size: int) -> int:
    """How many processes decode a plain file of `size` bytes (1: sequential)."""
    env = os.environ.get(PROCESSES_ENV, "").strip()
    if env:
        try:
            n = int(env)
        except ValueError:
            raise InputError(f"{PROCESSES_ENV}={env!r} is not a number", "give a count of processes, e.g. 4") from None
        return max(1, n)
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        cpus = os.cpu_count() or 1
    return max(1, min(cpus, MAX_PROCESSES, size // MIN_SPAN_BYTES))


def cut_points(path: Path, n: int) -> list[int]:
    """Offsets of the commas before the events where spans 2..n start; [] when the file is not split."""
    if n < 2:
        return []
    try:
        size = path.stat().st_size
        with path.open("rb") as f:
            head = f.read(SNIFF_BYTES)
            m = HEAD_RE.search(head)
            if head[:2] == b"\x1f\x8b" or m is None:  # gzip, or an odd header: the sequential reader
                return []
            cuts: list[int] = []
            for i in range(1, n):
                target = max(m.end(), size * i // n, cuts[-1] + 1 if cuts else 0)
                f.seek(target)
                at = _cut_in(f.read(CUT_WINDOW))
                if at is not None:
                    cuts.append(target + at)
            return cuts
    except OSError:
        return []  # the sequential reader reports it


def _cut_in(window: bytes) -> int | None:
    """The first comma in `window` that is followed by a whole event (an object with `ph`)."""
    seps = SEP_RE.finditer(window)
    for _, m in zip(range(CUT_TRIES), seps, strict=False):
        comma = window.index(b",", m.start())
        nxt = SEP_RE.search(window, comma + 1)
        if nxt is None:
            return None
        try:
            obj = _EVENT_CHECK.decode(b"[" + window[comma + 1 : nxt.start() + 1] + b"]")
        except msgspec.DecodeError:
            continue
        if obj and "ph" in obj[0]:
            return comma
    return None


@dataclass
class _Worker:
    """One worker process and what its receiving thread has collected."""

    proc: subprocess.Popen[bytes]
    parts: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    done_bytes: int = 0
    result: tuple[FileColumns, dict[str, int], bytes] | None = None  # None: the span must be read again

    def receive(self) -> None:
        out = self.proc.stdout
        assert out is not None
        try:
            while (msg := _read_frame(out)) is not None:
                if msg[0] == "parts":
                    for kind, lst in msg[1].items():
                        self.parts.setdefault(kind, []).extend(lst)
                    self.done_bytes = msg[2]
                elif msg[0] == "done":
                    self.result = msg[1], msg[2], msg[3]
        except Exception:  # noqa: BLE001, S110 - a broken channel leaves no result: the file is read sequentially
            self.result = None


def _read_frame(f: IO[bytes]) -> Any:
    head = f.read(8)
    if len(head) < 8:
        return None
    n = int.from_bytes(head, "little")
    body = f.read(n)
    if len(body) < n:
        return None
    return pickle.loads(body)  # noqa: S301 - frames from our own child process


def write_frame(f: IO[bytes], msg: Any) -> None:
    body = pickle.dumps(msg, protocol=pickle.HIGHEST_PROTOCOL)
    f.write(len(body).to_bytes(8, "little"))
    f.write(body)
    f.flush()


def read_columns(path: Path, limit: int, cuts: list[int], progress: Callable[[float], None]) -> tuple[FileColumns, Any]:
    """Decode the spans [0, cuts[0]), [cuts[0], cuts[1]), ... in parallel; (columns, header doc)."""
    stream = EventStream(path, limit, (0, cuts[0]))  # checks the size limit before anything starts
    total = max(path.stat().st_size, 1)
    workers: list[_Worker] = []
    threads: list[threading.Thread] = []
    try:
        for start, stop in zip(cuts, [*cuts[1:], -1], strict=True):
            cmd = [sys.executable, "-m", WORKER_MODULE, str(path), str(limit), str(start), str(stop)]
            cmd += [stream.mode, str(int(stream.in_ns))]
            proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
            workers.append(_Worker(proc))
        for w in workers:
            threads.append(threading.Thread(target=w.receive, daemon=True))
            threads[-1].start()

        def report() -> None:
            done = stream.read - stream.pending + sum(w.done_bytes for w in workers)
            progress(min(done / total, 0.99))

        cols = FileColumns(stream.mode == "exact", stream.in_ns)
        for events in stream.chunks():
            cols.add(events)
            report()
        notes = dict(stream.notes)
        for t in threads:
            while t.is_alive():
                t.join(0.5)
                report()
        for w in workers:
            w.proc.wait()
            if w.result is None:
                raise Fallback
            later, later_notes, tail = w.result
            later.parts = w.parts
            cols.absorb(later)
            add_counts(notes, later_notes)
        cols.counts = {**notes, **cols.counts}
        return cols, stream.header(tail)
    finally:
        for w in workers:
            if w.proc.poll() is None:
                w.proc.kill()
            w.proc.wait()
            if w.proc.stdout is not None:
                w.proc.stdout.close()
