"""Worker process of the parallel Kineto reader (`parallel`): decodes one span of a file into columns.

    python -m advisor.parsers.kineto.worker PATH LIMIT START STOP MODE IN_NS

STOP -1 reads to the end of the file. Frames (8-byte length, pickle) go to stdout: ("parts", columns
of a slice, bytes decoded so far) after every slice, then ("done", FileColumns without its parts,
decode notes, text after the array), or ("fallback", why) when the span cannot be read this way.
"""

from __future__ import annotations

import gc
import sys
from pathlib import Path


def main(argv: list[str]) -> int:
    out = sys.stdout.buffer
    sys.stdout = sys.stderr  # stdout carries the frames: a stray print() must not land in them
    from advisor.parsers.kineto.parallel import write_frame

    try:
        from advisor.parsers.kineto.columns import FileColumns
        from advisor.parsers.kineto.decode import EventStream

        path, limit, start, stop, mode, in_ns = argv
        gc.disable()  # no reference cycles are made; see merge._collector_paused
        span = (int(start), None if int(stop) < 0 else int(stop))
        stream = EventStream(Path(path), int(limit), span, (mode, in_ns == "1"))
        cols = FileColumns(mode == "exact", in_ns == "1")
        for events in stream.chunks():
            cols.add(events)
            parts, cols.parts = cols.parts, {}
            write_frame(out, ("parts", parts, stream.read - stream.pending))
        write_frame(out, ("done", cols, stream.notes, stream.tail))
    except Exception as e:  # noqa: BLE001 - the parent reads the file sequentially and reports errors itself
        write_frame(out, ("fallback", f"{type(e).__name__}: {e}"))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
