"""Kineto JSON text -> msgspec Event structs, a slice of `traceEvents` at a time.

Only the fields the model uses are decoded; everything else is skipped inside msgspec's C decoder.
The text is read in slices of about CHUNK_BYTES (plain files block by block, .gz inflated as a
stream), each slice is cut at an event boundary and decoded on its own, so neither the text nor
the structs of the whole file are ever alive at once. The header keys around `traceEvents`
(deviceProperties, distributedInfo, baseTimeNanoseconds, ...) are decoded from the text before
and after the array.

Anything the streaming reader does not expect (a type surprise in an event, malformed JSON, a
document where `traceEvents` is not where Kineto writes it) raises `Fallback`; the caller then
decodes the whole file at once with `decode_whole`, which gives the one-line errors and the
lenient per-event decoding. The two paths produce the same events in the same order.
"""

from __future__ import annotations

import decimal
import mmap
import re
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from typing import Any

import msgspec

from advisor.errors import InputError
from advisor.parsers.kineto.mapping import mappings
from advisor.parsers.limits import inflate, too_big

SNIFF_BYTES = 1 << 20
CHUNK_BYTES = 16 << 20  # text decoded at once: 16 MB of JSON is ~90k events, ~50 MB of structs
READ_BYTES = 4 << 20  # plain files are read in blocks this size (larger reads cost page faults, not speed)
HEAD_SEARCH_BYTES = 64 << 20  # `traceEvents` must start within this much of the file for streaming
# Below 2**43 us a float64 holds a Kineto timestamp to better than 0.5 ns, so whole+fraction
# splitting recovers the exact ns digits; above it (epoch-based us with ns fractions) we need Decimal.
FLOAT_EXACT_US = 2**43
INT64_MAX = 2**63 - 1
EPOCH_NS_MIN = 10**17  # a `ts` this large cannot be microseconds (3000+ years): the file writes ns
TS_SNIFF_RE = re.compile(rb'"ts"\s*:\s*(-?\d+)(?:\.(\d+))?')
HEAD_RE = re.compile(rb'"traceEvents"\s*:\s*\[')
SEP_RE = re.compile(rb"\}[ \t\r\n]*,[ \t\r\n]*\{")  # candidate boundary between two events
JSON_WS = b" \t\r\n"
CUT_TRIES = 4  # a candidate boundary inside a string fails to decode; try this many earlier ones
END_TRIES = 10_000  # `]` candidates tried for the end of the array in the last event's text

Num = int | float
Id = int | str
EMPTY_RAW = msgspec.Raw()


class Args(msgspec.Struct, gc=False):
    """The `args` keys the model uses, across event kinds and Kineto versions."""

    device: int | None = None
    stream: Id | None = None
    correlation: int | None = None
    external_id: int | None = msgspec.field(default=None, name="External id")
    external_id_old: int | None = msgspec.field(default=None, name="external id")
    context: int | None = None
    registers: int | None = msgspec.field(default=None, name="registers per thread")
    shared_memory: int | None = msgspec.field(default=None, name="shared memory")
    grid: list[int] | str | None = None  # Triton cpu_ops write "grid(100,)" here
    block: list[int] | str | None = None
    bytes: Num | None = None
    input_dims: msgspec.Raw = msgspec.field(default=EMPTY_RAW, name="Input Dims")
    input_dims_old: msgspec.Raw = msgspec.field(default=EMPTY_RAW, name="Input dims")
    input_type: msgspec.Raw = msgspec.field(default=EMPTY_RAW, name="Input type")
    input_strides: msgspec.Raw = msgspec.field(default=EMPTY_RAW, name="Input Strides")
    concrete_inputs: msgspec.Raw = msgspec.field(default=EMPTY_RAW, name="Concrete Inputs")
    flops: Num | None = None
    sequence_number: int | None = msgspec.field(default=None, name="Sequence number")
    collective: str | None = msgspec.field(default=None, name="Collective name")
    in_nelems: int | None = msgspec.field(default=None, name="In msg nelems")
    dtype: str | None = None
    group_size: int | None = msgspec.field(default=None, name="Group size")
    pg_name: str | None = msgspec.field(default=None, name="Process Group Name")
    mem_bytes: int | None = msgspec.field(default=None, name="Bytes")
    total_allocated: int | None = msgspec.field(default=None, name="Total Allocated")
    total_reserved: int | None = msgspec.field(default=None, name="Total Reserved")
    addr: int | None = msgspec.field(default=None, name="Addr")
    mem_device_id: int | None = msgspec.field(default=None, name="Device Id")
    mem_device_type: int | None = msgspec.field(default=None, name="Device Type")
    sync_kind: str | None = msgspec.field(default=None, name="cuda_sync_kind")
    label: str | None = msgspec.field(default=None, name="name")


NO_ARGS = Args()


class Event(msgspec.Struct, gc=False):
    ph: str | None = None
    cat: str | None = None
    name: str | None = None
    pid: Id | None = None
    tid: Id | None = None
    ts: Num | None = None
    dur: Num | None = None
    id: Id | None = None
    args: Args | None = None


class ExactEvent(Event, gc=False):
    """Same event with Decimal timestamps, for epoch-based traces with ns fractions."""

    ts: decimal.Decimal | None = None  # type: ignore[assignment]


class Fallback(Exception):
    """The streaming reader met something it does not handle; decode the whole file instead."""


def _doc_type(event: type[Event], events: Any) -> Any:
    """Top-level struct: traceEvents typed, the header keys we read kept loose (validated by hand)."""
    fields: list[tuple[str, Any, Any]] = [
        ("traceEvents", events, msgspec.NODEFAULT),
        ("deviceProperties", Any, None),
        ("distributedInfo", Any, None),
        ("displayTimeUnit", Any, None),
        ("schemaVersion", Any, None),
        ("baseTimeNanoseconds", Any, None),
        ("host_name", Any, None),
        ("profile_memory", Any, None),
    ]
    vendor_keys = mappings().vendors["amd_keys"] + mappings().vendors["nvidia_keys"]
    fields += [(k, Any, None) for k in vendor_keys]
    return msgspec.defstruct(f"Doc_{event.__name__}", fields)


@cache
def _decoders() -> dict[str, msgspec.json.Decoder[Any]]:
    return {
        "float": msgspec.json.Decoder(_doc_type(Event, list[Event])),
        "exact": msgspec.json.Decoder(_doc_type(ExactEvent, list[ExactEvent])),
        "raw": msgspec.json.Decoder(_doc_type(Event, list[msgspec.Raw])),
        "float_list": msgspec.json.Decoder(list[Event]),
        "exact_list": msgspec.json.Decoder(list[ExactEvent]),
        "raw_list": msgspec.json.Decoder(list[msgspec.Raw]),
    }


def sniff(head: bytes) -> tuple[str, bool]:
    """Pick the timestamp decoder from the first megabyte: ('float'|'exact', ts_in_ns).

    The unit is the median's, never one value's: one event with `"ts": 9223372036854775807` (a
    corrupted record) once switched a whole microsecond trace to nanoseconds, shrinking its span
    1000x without a word. Values impossible in the chosen unit (beyond int64 ns) are the parse's to
    drop and count (`columns.bucket`); they do not pick the decoder either.
    """
    found = [(abs(int(m.group(1))), m.group(2) is not None) for m in TS_SNIFF_RE.finditer(head[:SNIFF_BYTES])]
    if not found:
        return "float", False
    wholes = sorted(w for w, _ in found)
    in_ns = wholes[(len(wholes) - 1) // 2] >= EPOCH_NS_MIN
    bound = INT64_MAX if in_ns else INT64_MAX // 1000
    exact = any(frac and FLOAT_EXACT_US <= whole < bound for whole, frac in found)
    return ("exact" if exact else "float"), in_ns


# --------------------------------------------------------------------------------------------
# Streaming: slices of traceEvents


def _blocks(path: Path, limit: int, span: tuple[int, int | None] = (0, None)) -> Iterator[bytes]:
    """The decompressed text in blocks; the same size limits and one-line errors as the whole-file read.

    `span` (start, stop) reads only those bytes of a plain file (stop None: to the end).
    """
    try:
        with path.open("rb") as f:
            gz = f.read(2) == b"\x1f\x8b"
            if not gz:
                size = path.stat().st_size
                if size > limit:
                    raise too_big(path, f"{size} bytes of JSON:", limit)
                if size == 0:
                    raise InputError(f"{path}: empty file", "re-export the trace; a Kineto trace is a JSON object")
                start, stop = span
                f.seek(start)
                left = (size if stop is None else stop) - start
                while left > 0 and (block := f.read(min(READ_BYTES, left))):
                    left -= len(block)
                    yield block
                return
            if span != (0, None):
                raise Fallback  # a gzip stream cannot be entered in the middle
    except OSError as e:
        raise InputError(f"{path}: cannot read ({e.strerror or e})", "check the path and permissions") from None
    any_data = False
    for block in inflate(path, limit):
        any_data = True
        yield block
    if not any_data:
        raise InputError(f"{path}: gzip holds no data", "re-export the trace")


def text_size_hint(path: Path) -> int:
    """The JSON text's size, for progress only: the file size, or for a .gz its size trailer (the
    uncompressed size modulo 4 GiB; `EventStream.fraction` raises it by 4 GiB while the text is longer)."""
    try:
        with path.open("rb") as f:
            if f.read(2) != b"\x1f\x8b":
                return path.stat().st_size
            f.seek(-4, 2)
            return int.from_bytes(f.read(4), "little")
    except OSError:  # unreadable or shorter than a trailer: the read itself reports it
        return 0


class EventStream:
    """`traceEvents` of one file, decoded slice by slice; `doc` (the header keys) once exhausted.

    `span` (start, stop) decodes only the events in those bytes of a plain file, for the parallel
    reader (`parallel`): a span starting after 0 starts at the comma before an event and decodes
    to the end of the file (`tail` then holds the text after the array); a span with a stop ends
    right after an event and must decode exactly to there (else Fallback), leaving `doc` None and
    `prefix` the text before the array. `sniffed` (mode, in_ns) is the first megabyte's verdict,
    for spans that do not start the file.
    """

    def __init__(
        self,
        path: Path,
        limit: int,
        span: tuple[int, int | None] = (0, None),
        sniffed: tuple[str, bool] | None = None,
    ) -> None:
        self.path = path
        self.span = span
        self._blocks = _blocks(path, limit, span)
        self._buf = bytearray()
        self._eof = False
        self.read = 0  # bytes of JSON text read so far (decompressed); those not in _buf are decoded
        self._size_hint = text_size_hint(path) if span == (0, None) else (span[1] or text_size_hint(path)) - span[0]
        while len(self._buf) < SNIFF_BYTES and self._more():
            pass
        self.mode, self.in_ns = sniffed or sniff(bytes(self._buf[:SNIFF_BYTES]))
        self.prefix = b""
        self.tail = b""
        self._list = _decoders()[f"{self.mode}_list"]
        self._raw_list = _decoders()["raw_list"]
        self.doc: Any = None
        self.decoded = 0  # events decoded so far
        self.notes: dict[str, Any] = {}  # lenient decoding: events that lost their args or were dropped

    def _more(self) -> bool:
        if self._eof:
            return False
        block = next(self._blocks, None)
        if block is None:
            self._eof = True
            return False
        self._buf += block
        self.read += len(block)
        return True

    @property
    def pending(self) -> int:
        """Bytes read but not yet decoded."""
        return len(self._buf)

    def header(self, tail: bytes) -> Any:
        """The header keys of a file whose first span this stream read, given the text after the array."""
        return self._header(self.prefix + b"[]" + tail)

    def fraction(self) -> float:
        """How much of the text has been decoded, in [0, 1): for progress reports, once per slice."""
        total = max(self._size_hint, 1)
        while total < self.read:  # a .gz trailer holds the size modulo 4 GiB (or only the last member's)
            total += 1 << 32
        return min((self.read - len(self._buf)) / total, 0.99)

    def chunks(self) -> Iterator[list[Event]]:
        """Event lists in file order; raises Fallback when the text is not what it expects.

        Each list is decoded in place from the buffer (msgspec.Raw values point into it) and is
        emptied once the consumer has taken it, before the buffer moves on.
        """
        buf = self._buf
        if self.span[0] == 0:
            head = HEAD_RE.search(buf)
            while head is None and len(buf) < HEAD_SEARCH_BYTES and self._more():
                head = HEAD_RE.search(buf)
            if head is None:
                raise Fallback
            self.prefix = bytes(buf[: head.end() - 1])
            del buf[: head.end() - 1]  # buf[0] is always the delimiter before the next event: `[` or `,`
        elif buf[:1] != b",":
            raise Fallback
        while True:
            while len(buf) < CHUNK_BYTES and self._more():
                pass
            if self._eof:
                break
            cut = self._decode_upto_sep()
            if cut is None:  # one event longer than a slice: read on
                if not self._more():
                    break
                continue
            yield from self._hand_over(*cut)
        # the last slice: all events up to the last boundary, then the last event and the tail
        cut = self._decode_upto_sep()
        if cut is not None:
            yield from self._hand_over(*cut)
        if self.span[1] is not None:  # the span ends right after an event: all that is left is one
            last = self._span_end()
            if last:
                yield last
            return
        last, self.tail = self._last_event()
        if last:
            yield last
        if self.span[0] == 0:
            self.doc = self.header(self.tail)

    def _span_end(self) -> list[Event]:
        """The events between the last boundary and the span's stop; Fallback unless they decode whole
        (a stop inside a string or a nested object leaves an open string or bracket, which cannot)."""
        text = bytes(self._buf)
        if text[:1] not in (b"[", b","):
            raise Fallback
        try:
            return self._decode(b"[" + text[1:] + b"]")
        except msgspec.DecodeError:
            raise Fallback from None

    def _hand_over(self, events: list[Event], comma: int) -> Iterator[list[Event]]:
        yield events
        events.clear()  # frees the structs and their Raw views of the buffer
        try:
            del self._buf[:comma]
        except BufferError:  # a consumer kept a Raw value alive: the buffer cannot move
            raise Fallback from None

    def _decode_upto_sep(self) -> tuple[list[Event], int] | None:
        """Decode the events before the last boundary in the buffer: (events, index of the comma)."""
        buf = self._buf
        hi = len(buf)
        seps: list[re.Match[bytes]] = []
        for window in (1 << 20, hi):
            seps = list(SEP_RE.finditer(buf, max(1, hi - window), hi))
            if seps:
                break
        if not seps:
            return None
        for m in reversed(seps[-CUT_TRIES:]):
            try:
                events = self._decode_in_place(m.start() + 1)
            except msgspec.DecodeError:
                continue  # the boundary was inside a string: try an earlier one
            return events, buf.index(b",", m.start())
        raise Fallback

    def _decode_in_place(self, end: int) -> list[Event]:
        """Decode buf[0:end+1] as a JSON array: buf[0] and buf[end] become `[` and `]` meanwhile."""
        buf = self._buf
        saved = buf[0], buf[end]
        buf[0], buf[end] = 0x5B, 0x5D
        try:
            return self._decode(memoryview(buf)[: end + 1])
        finally:
            buf[0], buf[end] = saved

    def _decode(self, text: Any) -> list[Event]:
        """Typed decode; on a type surprise, the slice one event at a time (as the whole-file path does)."""
        try:
            try:
                out: list[Event] = self._list.decode(text)
            except msgspec.ValidationError:
                raws = self._raw_list.decode(text)  # DecodeError here: not a boundary after all
                try:
                    out = lenient_events(raws, self.mode, self.notes, self.decoded)
                except NotAnObject:
                    raise Fallback from None  # the whole-file path reports it, unless the file is worse
                del raws
        except (RecursionError, UnicodeDecodeError):
            raise Fallback from None
        self.decoded += len(out)
        return out

    def _last_event(self) -> tuple[list[Event], bytes]:
        """The events left before the array's `]` (zero or one), and the text after the `]`."""
        buf = self._buf
        first = buf[:1] == b"["  # no comma consumed: the array may be empty
        pos = 0
        for _ in range(END_TRIES):
            pos = buf.find(b"]", pos + 1)
            if pos < 0:
                break
            text = bytes(buf[1:pos])
            if not text.strip(JSON_WS):
                if not first:  # `, ]`: a trailing comma, which JSON does not allow
                    break
                return [], bytes(buf[pos + 1 :])
            try:
                return self._decode(b"[" + text + b"]"), bytes(buf[pos + 1 :])
            except msgspec.DecodeError:
                continue
        raise Fallback

    def _header(self, text: bytes) -> Any:
        try:
            return _decoders()["raw"].decode(text)
        except (msgspec.DecodeError, RecursionError, UnicodeDecodeError):
            raise Fallback from None


# --------------------------------------------------------------------------------------------
# Whole file at once: the fallback, with its one-line errors and lenient per-event decoding


def read_json_bytes(path: Path, limit: int) -> Any:
    """The decompressed JSON text as a buffer (bytearray, or a read-only mmap for plain files).

    gzip is inflated in chunks by `limits.inflate` (byte limit and decompression-bomb ratio guard),
    so a bad or hostile file fails early with LimitExceeded instead of exhausting memory.
    """
    try:
        with path.open("rb") as f:
            magic = f.read(2)
            if magic == b"\x1f\x8b":
                return _inflate(path, limit)
            size = path.stat().st_size
            if size > limit:
                raise too_big(path, f"{size} bytes of JSON:", limit)
            if size == 0:
                raise InputError(f"{path}: empty file", "re-export the trace; a Kineto trace is a JSON object")
            return mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    except OSError as e:
        raise InputError(f"{path}: cannot read ({e.strerror or e})", "check the path and permissions") from None


def _inflate(path: Path, limit: int) -> bytearray:
    buf = bytearray()
    for chunk in inflate(path, limit):
        buf += chunk
    if not buf:
        raise InputError(f"{path}: gzip holds no data", "re-export the trace")
    return buf


def decode_whole(path: Path, buf: Any, mode: str, notes: dict[str, Any]) -> Any:
    """Decode with the fast typed decoder; on a type surprise, fall back to per-event decoding."""
    try:
        return _decoders()[mode].decode(buf)
    except msgspec.DecodeError as e:
        if isinstance(e, msgspec.ValidationError) and "$.traceEvents[" in str(e):
            return _decode_lenient(path, buf, mode, notes)
        raise _shape_error(path, e) from None
    except (RecursionError, UnicodeDecodeError) as e:
        raise _shape_error(path, e) from None


def _shape_error(path: Path, e: Exception) -> InputError:
    msg = str(e).splitlines()[0][:200]
    if isinstance(e, RecursionError):  # msgspec stops at about 1,000 levels: no trace nests like that
        return InputError(f"{path}: JSON nested too deeply to be a trace ({msg})", "re-export the trace")
    if isinstance(e, UnicodeDecodeError):
        return InputError(f"{path}: JSON text is not valid UTF-8 ({msg})", "re-export the trace")
    if isinstance(e, msgspec.ValidationError):
        return InputError(
            f"{path}: not a Kineto trace ({msg})",
            "expected a JSON object with a traceEvents array (torch.profiler export_chrome_trace)",
        )
    return InputError(f"{path}: invalid or truncated JSON ({msg})", "re-export the trace")


def _decode_lenient(path: Path, buf: Any, mode: str, notes: dict[str, Any]) -> Any:
    """Slow path: one event at a time, coercing loose types; events that still do not fit are dropped."""
    try:
        doc = _decoders()["raw"].decode(buf)
    except (msgspec.DecodeError, RecursionError, UnicodeDecodeError) as e:
        raise _shape_error(path, e) from None
    try:
        doc.traceEvents = lenient_events(doc.traceEvents, mode, notes)
    except NotAnObject as e:
        raise InputError(
            f"{path}: traceEvents[{e.index}] is not a JSON object", "the trace is malformed; re-export it"
        ) from None
    return doc


class NotAnObject(Exception):
    def __init__(self, index: int) -> None:
        self.index = index


@cache
def _lenient_decoders(mode: str) -> tuple[msgspec.json.Decoder[Any], msgspec.json.Decoder[Any]]:
    etype = ExactEvent if mode == "exact" else Event
    bare = msgspec.defstruct("Bare", [("args", Any, None)], bases=(etype,))
    return msgspec.json.Decoder(etype, strict=False), msgspec.json.Decoder(bare, strict=False)


def lenient_events(raws: list[msgspec.Raw], mode: str, notes: dict[str, Any], offset: int = 0) -> list[Event]:
    """Events one at a time, coercing loose types; an event whose args do not fit loses its args, one
    whose own fields do not fit is dropped (both counted). NotAnObject(index) for a non-object."""
    etype = ExactEvent if mode == "exact" else Event
    dec, bare = _lenient_decoders(mode)
    events: list[Event] = []
    for i, raw in enumerate(raws):
        if not bytes(raw).lstrip()[:1] == b"{":
            raise NotAnObject(offset + i)
        try:
            events.append(dec.decode(raw))
            continue
        except msgspec.ValidationError:
            pass
        try:  # keep the event, lose its odd args
            ev: Any = bare.decode(raw)
            events.append(etype(ev.ph, ev.cat, ev.name, ev.pid, ev.tid, ev.ts, ev.dur, ev.id, None))
            notes["events_args_dropped"] = notes.get("events_args_dropped", 0) + 1
        except msgspec.ValidationError:
            notes["events_dropped_bad_fields"] = notes.get("events_dropped_bad_fields", 0) + 1
    return events
