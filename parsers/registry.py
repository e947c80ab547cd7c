"""Every input format advisor reads, declared once: name, file names, sniff, parser module, version.

Format detection (`advisor.ingest`), the trace files of a directory (diff sides, Kineto rank
directories) and the CLI's help all read this table, so a new format or suffix is one entry here and
nowhere else. Importing it is cheap (no parser is imported): a format's parser module is loaded only
when an input of that format is parsed.

Detection reads the name and the first 64 bytes. Formats are tried in order, and the order matters:
content beats names for SQLite (an nsys export named `x.json` is still SQLite), names beat content
for Nsight reports and CSV (their bytes say little), and Kineto comes last because `{`/`[` and gzip
are weak signals. A file named like a format whose header is wrong fails as that format's damaged
input (`refuse_named`), not as an unknown one.
"""

from __future__ import annotations

import gzip
import importlib
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING

from advisor.errors import InputError, UnsupportedFormat

if TYPE_CHECKING:
    from advisor.parsers.base import ParsedRun, ParseOptions

SQLITE_MAGIC = b"SQLite format 3\x00"
GZIP_MAGIC = b"\x1f\x8b"
HEAD_BYTES = 64
# what the CLI's PATH help and the unsupported-format hint list
HELP = ".nsys-rep/.qdrep, nsys .sqlite[.gz], Kineto .json[.gz] or a directory of rank traces, .ncu-rep, ncu CSV"
READS = "advisor reads .nsys-rep/.qdrep, nsys .sqlite exports, Kineto .json/.json.gz, .ncu-rep and ncu CSV"


@dataclass
class Probe:
    """What detection looks at: the lower-cased file name and the first bytes (a gzip's, inflated, on demand)."""

    path: Path
    name: str
    head: bytes

    @classmethod
    def read(cls, path: Path) -> Probe:
        return cls(path, path.name.lower(), head(path, HEAD_BYTES))

    @cached_property
    def gunzipped(self) -> bytes:
        """The first bytes inside a gzip file ('' when it is not one or is damaged)."""
        if not self.head.startswith(GZIP_MAGIC):
            return b""
        try:
            with gzip.open(self.path, "rb") as f:
                return f.read(16)
        except (OSError, EOFError, zlib.error):
            return b""


@dataclass(frozen=True)
class Format:
    """One input format.

    `suffixes` are the lower-case file names it is listed by (a directory's trace files); `packed`
    are compressed names read after decompression into the parse's work dir; `sniff` recognizes a
    file from its name and first bytes (None: by `suffixes` + `packed`); `version` is the parser's
    version, part of the cache key, so bumping it rebuilds this format's cached runs only.
    """

    name: str  # runs.format
    module: str  # advisor.parsers.<module> with parse(path, options) -> ParsedRun
    suffixes: tuple[str, ...]
    version: str
    sniff: Callable[[Probe], bool] | None = None
    packed: tuple[str, ...] = ()
    gzip_inner: str | None = None  # a gzip of this format is decompressed to this file name before parsing
    family: str | None = None  # formats holding the same capture (an nsys report and its SQLite export)
    reads_dirs: bool = False  # a directory of files named by `suffixes` is one run (ranks)
    refuse_named: tuple[str, ...] = ()  # named like this format but not sniffed as it: a damaged file
    refuse: tuple[str, str] = ("", "")  # (what the file is not, hint) for `refuse_named`
    doc: str = field(default="", compare=False)

    def matches(self, probe: Probe) -> bool:
        if self.sniff is not None:
            return self.sniff(probe)
        return probe.name.endswith(self.suffixes + self.packed)

    def named(self, path: Path) -> bool:
        """Whether the file's name is one this format is listed by."""
        return path.name.lower().endswith(self.suffixes)

    def unpacked_name(self, path: Path) -> str | None:
        """The name to decompress `path` to before parsing, or None when the parser reads it as it is."""
        name = path.name.lower()
        if self.gzip_inner is not None and head(path, 2) == GZIP_MAGIC:
            return self.gzip_inner
        suffix = next((s for s in self.packed if name.endswith(s)), None)
        return None if suffix is None else "input" + suffix.rsplit(".", 1)[0]

    def parse(self, path: Path, options: ParseOptions) -> ParsedRun:
        module = importlib.import_module(f"advisor.parsers.{self.module}")
        parsed: ParsedRun = module.parse(path, options)
        return parsed


def _sqlite(p: Probe) -> bool:
    return p.head.startswith(SQLITE_MAGIC) or p.gunzipped.startswith(SQLITE_MAGIC)


def _json(p: Probe) -> bool:
    return p.head.startswith(GZIP_MAGIC) or p.head.lstrip()[:1] in (b"{", b"[")


NSYS_VERSION = "2"  # 2: strings redacted at ingest (entries of 1 may hold secrets)
# Kineto 2: + time unit from the median timestamp (one corrupt ts no longer switches it);
# 3: a file with no GPU activity keeps the GPUs its deviceProperties list
KINETO_VERSION = "3"
NCU_VERSION = "2"  # 2: strings redacted at ingest

# In detection order (see the module docstring).
FORMATS: tuple[Format, ...] = (
    Format("nsys-sqlite", "nsys.sqlite", (".sqlite", ".sqlite.gz", ".db"), NSYS_VERSION, sniff=_sqlite,
           gzip_inner="export.sqlite", family="nsys", refuse_named=(".sqlite", ".db"),
           refuse=("not a SQLite database (bad header)", "re-export it with `nsys export --type sqlite`"),
           doc="Nsight Systems SQLite export, plain or gzip'd"),
    Format("nsys-rep", "nsys.rep", (".nsys-rep", ".qdrep"), NSYS_VERSION, family="nsys",
           doc="Nsight Systems report, exported to SQLite with nsys"),
    Format("ncu-rep", "ncu", (".ncu-rep",), NCU_VERSION, packed=(".ncu-rep.xz", ".ncu-rep.gz"),
           doc="Nsight Compute report"),
    Format("ncu-csv", "ncu_csv", (".csv",), NCU_VERSION, packed=(".csv.xz", ".csv.gz"),
           doc="Nsight Compute CSV (--page raw or details)"),
    Format("kineto", "kineto", (".json", ".json.gz"), KINETO_VERSION, sniff=_json, reads_dirs=True,
           doc="PyTorch profiler (Kineto) Chrome-trace JSON, a file or a directory of rank files"),
)
BY_NAME = {f.name: f for f in FORMATS}


def get(name: str) -> Format:
    return BY_NAME[name]


def detect(path: Path) -> Format:
    """The input's format from its name and first bytes, or InputError / UnsupportedFormat."""
    if path.is_dir():
        return _detect_dir(path)
    probe = Probe.read(path)
    found = next((f for f in FORMATS if f.matches(probe)), None)
    if found is not None:
        return found
    for f in FORMATS:
        if probe.name.endswith(f.refuse_named):
            raise InputError(f"{path}: {f.refuse[0]}", f.refuse[1])
    raise UnsupportedFormat(f"{path}: unrecognised trace format", READS)


def _detect_dir(path: Path) -> Format:
    files = [p for p in path.iterdir() if p.is_file()]
    for f in FORMATS:
        if f.reads_dirs and any(f.named(p) for p in files):
            return f
    raise UnsupportedFormat(
        f"{path}: directory holds no *.json / *.json.gz trace files",
        "pass a trace file, or a directory of Kineto rank traces",
    )


def trace_suffixes() -> tuple[str, ...]:
    """Every file name a trace of any format is listed by (uncompressed Nsight Compute names only)."""
    return tuple(s for f in FORMATS for s in f.suffixes)


def container_preference(family: str) -> tuple[str, ...]:
    """The suffixes of one capture's containers, preferred first (registry order: nsys SQLite before the report)."""
    return tuple(s for f in FORMATS if f.family == family for s in f.suffixes)


def head(path: Path, n: int) -> bytes:
    """The first `n` bytes, or InputError naming what is wrong with the path."""
    try:
        with path.open("rb") as f:
            return f.read(n)
    except FileNotFoundError:
        raise InputError(f"{path}: no such file", "check the path") from None
    except IsADirectoryError:
        raise InputError(f"{path}: is a directory", "pass a trace file") from None
    except OSError as e:
        raise InputError(f"{path}: cannot read ({e.strerror})", "check permissions") from None
