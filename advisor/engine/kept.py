"""Kept outputs: what a command printed for one input, printed again while the input, the options and the
code are the same.

Why: a warm `advisor analyze` of a small trace took ~0.45 s, most of it importing DuckDB and the rules and
reading kept metric results back to rebuild the answer it had already printed. A kept output is served
after the checks a warm open of the input makes (its cache entry is complete and of this schema, and the
input's stat fingerprint is one the entry knows to hold its bytes: advisor.ingest) and a crc32 of the kept
text, without importing DuckDB or opening the entry's tables.

Where: `<entry>/outputs/<name>.json`, inside the input's cache entry, so a kept output goes with the entry
(eviction, `advisor cache clear`, a rebuild after damage). A record holds its whole key (the command's
options, the ADVISOR_* settings, the code's fingerprint), the text, the exit code and the text's crc32; a
record whose key differs or whose text fails the crc32 is not used. At most MAX_KEPT records per entry.

The code's fingerprint: advisor's and Python's versions and (path, size, mtime) of every file of advisor's
packages and of the modules that compute for it (DuckDB, Arrow, NumPy, msgspec): an upgrade, a reinstall
or an edit retires every kept output.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import json
import os
import sys
import zlib
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from advisor.errors import AdvisorError
from advisor.model.entry import default_cache_dir, entry_name, read_entry_meta, stat_fingerprint, trusted
from advisor.parsers import registry

OUTPUTS = "outputs"
MAX_KEPT = 32  # records per entry (one per set of options used on it); the least recently written go first
_PACKAGES = ("advisor", "advisor.parsers", "advisor.rules", "advisor.reports")
_ENGINES = ("duckdb", "_duckdb", "pyarrow", "numpy", "msgspec")


@dataclass(frozen=True)
class Kept:
    """A kept output: the text the command printed and the exit code it returned."""

    text: str
    code: int


def kept_output(path: str, key: Mapping[str, Any]) -> Kept | None:
    """The output kept for the input at `path` under `key` (JSON-shaped options), or None."""
    entry = _entry(path)
    if entry is None:
        return None
    full = _full_key(key)
    try:
        doc = json.loads((entry / OUTPUTS / f"{_name(full)}.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(doc, dict) or doc.get("key") != full:
        return None
    text, code = doc.get("text"), doc.get("exit")
    if not isinstance(text, str) or not isinstance(code, int) or doc.get("crc32") != _crc32(text):
        return None
    return Kept(text, code)


def keep_output(path: str, key: Mapping[str, Any], text: str, code: int) -> None:
    """Keep `text` and `code` for the input at `path` under `key`, when the input's cache entry holds its
    bytes. Never fails the command: a cache that cannot be written keeps nothing."""
    from advisor.model.workarea import CacheUnwritable, process_area

    entry = _entry(path)
    if entry is None:
        return
    full = _full_key(key)
    doc = {"key": full, "text": text, "exit": code, "crc32": _crc32(text)}
    with contextlib.suppress(OSError, CacheUnwritable):
        folder = entry / OUTPUTS
        folder.mkdir(exist_ok=True)
        # written in this process's work area (swept if the process dies), then renamed into place
        tmp = process_area(entry.parent) / f"kept-{_name(full)}.json"
        tmp.write_text(json.dumps(doc), encoding="utf-8")
        os.replace(tmp, folder / f"{_name(full)}.json")
        _prune(folder)


def input_identity(path: str) -> str | None:
    """The name of the cache entry that holds the input at `path` now (it names the input's bytes and the
    parser), or None: the key of an output that reads a second input (`diff`'s NEW) names it with this."""
    entry = _entry(path)
    return None if entry is None else entry.name


def _entry(path: str) -> Path | None:
    """The cache entry of the input at `path` when it holds the input's bytes now (a known stat fingerprint)."""
    p = Path(path)
    try:
        if not (p.is_file() or p.is_dir()):
            return None
        entry = default_cache_dir() / entry_name(p, registry.detect(p).version)
        meta = read_entry_meta(entry)
        if meta is None or not trusted(meta, stat_fingerprint(p)[0]):
            return None
    except (OSError, AdvisorError):
        return None
    return entry


def _prune(folder: Path) -> None:
    records = sorted(folder.glob("*.json"), key=lambda f: f.stat().st_mtime_ns)
    for old in records[:-MAX_KEPT]:
        old.unlink(missing_ok=True)


def _full_key(key: Mapping[str, Any]) -> dict[str, Any]:
    """The key as it is kept: the command's options with the ADVISOR_* settings and the code's fingerprint
    (JSON round-tripped, so a kept record compares equal to a fresh one)."""
    env = {k: v for k, v in os.environ.items() if k.startswith("ADVISOR_")
           and k not in ("ADVISOR_CACHE_DIR", "ADVISOR_CACHE_MAX_SIZE")}
    full: dict[str, Any] = json.loads(json.dumps({"options": key, "env": env, "code": code_fingerprint()},
                                                 sort_keys=True, default=repr))
    return full


def _name(full: Mapping[str, Any]) -> str:
    return hashlib.blake2b(json.dumps(full, sort_keys=True).encode(), digest_size=16).hexdigest()


def _crc32(text: str) -> int:
    return zlib.crc32(text.encode("utf-8", errors="surrogatepass"))


@cache
def code_fingerprint() -> str:
    """advisor's and Python's versions and (path, size, mtime) of the files of advisor's packages and of the
    modules it computes with (~300 stat calls: a few ms)."""
    from advisor import __version__

    h = hashlib.blake2b(digest_size=16)
    h.update(f"{__version__}\0{sys.version}".encode())
    roots: list[str] = []
    for name in _PACKAGES:
        spec = importlib.util.find_spec(name)
        roots += list(spec.submodule_search_locations or []) if spec is not None else []
    for root in sorted(set(roots)):
        for folder, dirs, files in os.walk(root):
            dirs[:] = sorted(d for d in dirs if d != "__pycache__")
            for f in sorted(files):
                _add_stat(h, os.path.join(folder, f))
    for name in _ENGINES:
        spec = importlib.util.find_spec(name)
        if spec is not None and spec.origin:
            _add_stat(h, spec.origin)
    return h.hexdigest()


def _add_stat(h: Any, path: str) -> None:
    with contextlib.suppress(OSError):
        st = os.stat(path)
        h.update(f"{path}\0{st.st_size}\0{st.st_mtime_ns}\0".encode(errors="surrogateescape"))
