"""Secret redaction for anything that leaves advisor: trace text we did not write can carry secrets.

Exporters embed environment dumps and command lines (nsys TARGET_INFO_SYSTEM_ENV, Kineto metadata),
and users put anything in kernel names, NVTX text and annotations (`token=...` in a range name is
a real habit). Redaction happens at ingest, once (`redact_table`, `redact_parquet`, called by
advisor.ingest.to_model_tables on every model table), so no surface and no cache file can hold a
secret that the patterns below recognise; surfaces still pass free text through `redact` because
it is cheap and notes are built after ingest too.

The patterns: `NAME=value` / `NAME: value` where NAME ends in TOKEN, SECRET, KEY, PASSWORD, CREDENTIAL
or AUTH (bare `password=` and `token=` included; C++ `key::` scopes are not assignments), Bearer
tokens, credentials in URLs, and well-known token shapes even without a name next to them: Hugging
Face `hf_`, GitHub `ghp_`/`gho_`/`github_pat_`, OpenAI-style `sk-`, AWS access key ids (AKIA/ASIA),
Slack `xox?-`, GitLab `glpat-`, JWTs (`eyJ...`). Redaction is checked not to change any string of
the real fixtures (tests/reliability/test_redaction.py).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from contextlib import nullcontext
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # imported where used: the CLI's terminal_safe must not load Arrow for a warm analyze
    import duckdb
    import pyarrow as pa

# Key names whose values must never be shown (environment variables, tokens in notes/metadata).
SECRET_KEY = re.compile(r"TOKEN|SECRET|KEY|PASSW|CREDENTIAL|AUTH", re.IGNORECASE)
# The name must END in one of these words (or add _ID/_BASE/_VALUE): `HF_TOKEN=`, `api_key:`, bare
# `password=`, `AWS_SECRET_ACCESS_KEY=`, but not `max_tokens=100` or `key_padding_mask=None`, which
# are the arguments of real kernels and NVTX ranges.
_NAMES = r"TOKEN|SECRET|KEY|APIKEY|PASSWORD|PASSWD|PASSPHRASE|CREDENTIALS?|AUTH|AUTHORIZATION"
# NAME=value / NAME: value inside free text (a captured command line, an env dump, an NVTX label).
_SECRET_ASSIGN = re.compile(
    rf"(?<![A-Za-z0-9_])(?P<name>[A-Za-z0-9_]*(?:{_NAMES})(?:_(?:ID|BASE|VALUE))?)(?![A-Za-z0-9_])"
    r"(?P<sep>\s*(?:=|:(?!:))\s*)(?P<value>\"[^\"]*\"|'[^']*'|[^\s,;\"'}]+)",
    re.IGNORECASE,
)
_BEARER = re.compile(r"(?P<name>\bBearer\s+)[A-Za-z0-9._~+/=-]{8,}", re.IGNORECASE)
_URL_CREDENTIALS = re.compile(r"(?<=://)[^/\s:@]+:[^/\s@]+@")
# Well-known token shapes, redacted even without a telling name next to them.
_TOKEN_SHAPES = re.compile(
    r"(?<![A-Za-z0-9])(?:hf_[A-Za-z0-9]{16,}|gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,}"
    r"|sk-[A-Za-z0-9_-]{20,}|(?:AKIA|ASIA)[0-9A-Z]{16}(?![A-Za-z0-9])|xox[abprs]-[A-Za-z0-9-]{10,}"
    r"|glpat-[A-Za-z0-9_-]{20,}|eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,})"
)
# A cheap superset of all the patterns above in RE2 syntax (Arrow and DuckDB): only strings that
# match it go through Python, so redacting a table of millions of names costs one vectorised scan.
PREFILTER = (
    r"(?i)(?:token|secret|key|passw|credential|auth)[a-z0-9_]*\s*[=:]|bearer\s|://[^/\s]*@|hf_|gh[pousr]_"
    r"|github_pat_|sk-|akia|asia|xox[abprs]-|glpat-|eyj"
)
REDACTED = "[redacted]"
SMALL_FILE_ROWS = 200_000  # Parquet files below this are checked in Arrow, larger ones by a DuckDB scan


def redact_text(text: str) -> str:
    """`text` with secret-named assignments, Bearer/URL credentials and token shapes replaced by [redacted]."""
    text = _BEARER.sub(lambda m: f"{m.group('name')}{REDACTED}", text)  # first: `Authorization: Bearer x`
    text = _SECRET_ASSIGN.sub(lambda m: f"{m.group('name')}{m.group('sep')}{REDACTED}", text)
    text = _URL_CREDENTIALS.sub(f"{REDACTED}@", text)
    return _TOKEN_SHAPES.sub(REDACTED, text)


def redact(value: Any) -> Any:
    """A deep copy of `value` with secret-named keys dropped and secret-looking text redacted.

    Keys are dropped rather than masked: even the presence of e.g. `WANDB_API_KEY` is nobody's
    business in a report attached to a public pull request.
    """
    if isinstance(value, dict):
        return {k: redact(v) for k, v in value.items() if not SECRET_KEY.search(str(k))}
    if isinstance(value, list | tuple):
        return [redact(v) for v in value]
    if isinstance(value, str):
        return redact_text(value)
    return value


def redact_values(value: Any) -> Any:
    """`redact` for facts advisor keeps (run notes, run fields): every string value redacted, keys kept
    (a note's key is advisor's own word; dropping it would lose the fact)."""
    if isinstance(value, dict):
        return {k: redact_values(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [redact_values(v) for v in value]
    return redact_text(value) if isinstance(value, str) else value


def terminal_safe(text: str) -> str:
    """One line for a terminal: secrets redacted, newlines and tabs as spaces, other control
    characters (ESC, CR, bidi overrides) and undecodable bytes as '?', so trace text cannot move
    the cursor, recolour or hide the line."""
    out = redact_text(text)
    return "".join(ch if ch.isprintable() else " " if ch in "\n\t" else "?" for ch in out)


def redact_array(arr: pa.Array | pa.ChunkedArray) -> pa.Array | pa.ChunkedArray:
    """A string column with the rows that hold a secret redacted (the same object when none does)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if not (pa.types.is_string(arr.type) or pa.types.is_large_string(arr.type)) or len(arr) == 0:
        return arr
    hit = pc.fill_null(pc.match_substring_regex(arr, PREFILTER), False)
    if not pc.any(hit).as_py():
        return arr
    flat = arr.combine_chunks() if isinstance(arr, pa.ChunkedArray) else arr
    mask = hit.combine_chunks() if isinstance(hit, pa.ChunkedArray) else hit
    olds = pc.filter(flat, mask).to_pylist()
    news = [redact_text(v) for v in olds]
    if news == olds:
        return arr
    return pc.replace_with_mask(flat, mask, pa.array(news, type=flat.type))


def redact_table(table: pa.Table) -> pa.Table:
    """`table` with every string column passed through `redact_array`."""
    for i, name in enumerate(table.column_names):
        col = table.column(i)
        new = redact_array(col)
        if new is not col:
            table = table.set_column(i, name, new)
    return table


def redact_parquet(paths: Iterable[Path], con: duckdb.DuckDBPyConnection | None = None) -> int:
    """Redact the Parquet files a parser wrote (model tables) in place; return how many changed. The counts run
    on `con` when given (the cold path lends its run's DuckDB), else on a DuckDB of their own.

    One DuckDB statement counts, per file, the string values that match PREFILTER, so a clean file
    (the usual case) is read once and never rewritten. One count per column, not one OR over the
    columns: DuckDB then evaluates the pattern once per dictionary entry of a column (10M rows of
    `cuda_runtime`: 0.13 s, against 15 s for the OR), and one statement instead of one per file
    saves most of the cost on small exports.
    """
    import pyarrow.parquet as pq

    from advisor.model.store import scratch

    small: list[Path] = []
    files: list[Path] = []
    for p in paths:  # small files: read their strings into Arrow (a DuckDB connection alone costs ~50 ms)
        (small if pq.read_metadata(p).num_rows < SMALL_FILE_ROWS else files).append(p)
    changed = sum(_rewrite(p) for p in small)
    counts = [_count_sql(p) for p in files]
    if not any(counts):
        return changed
    with scratch() if con is None else nullcontext(con) as db:
        row = db.execute("SELECT [" + ", ".join(c or "0" for c in counts) + "]").fetchone()
    hits = row[0] if row else []
    return changed + sum(_rewrite(p) for p, n in zip(files, hits, strict=True) if n)


def _count_sql(path: Path) -> str | None:
    """SQL for the number of candidate values in the file's string columns; None when it has none."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from advisor.model.store import sql_string

    lit = sql_string(path)
    pattern = sql_string(PREFILTER)
    cols = ['"' + f.name.replace('"', '""') + '"' for f in pq.read_schema(path)
            if pa.types.is_string(f.type) or pa.types.is_large_string(f.type)]
    parts = [f"(SELECT count(*) FROM read_parquet({lit}) WHERE regexp_matches({c}, {pattern}))" for c in cols]
    return " + ".join(parts) or None


def _rewrite(path: Path) -> bool:
    """Rewrite the file with its secrets redacted; False (untouched) when its strings hold none."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from advisor.model.entry import write_parquet

    names = [f.name for f in pq.read_schema(path) if pa.types.is_string(f.type) or pa.types.is_large_string(f.type)]
    if not names or redact_table(strings := pq.read_table(path, columns=names)) is strings:
        return False
    table = pq.read_table(path)
    new = redact_table(table)
    tmp = path.with_name(path.name + ".redacting")
    try:
        write_parquet(new, tmp)
        tmp.replace(path)
    finally:
        tmp.unlink(missing_ok=True)
    return True
