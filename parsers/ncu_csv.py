"""Nsight Compute CSV exports (`ncu --csv --page raw|details`) -> the same tables as .ncu-rep.

Teams often keep only the CSV (`ncu --csv ... > out.csv`, or `ncu --import r.ncu-rep --csv`).
Two layouts exist:

* raw page: a header row of identification columns ("ID", "Kernel Name", "Stream", ...) and metric
  names, a second row of units (empty under the identification columns), then one row per launch;
* details page: long form, one row per (launch, section, metric) with "Section Name",
  "Metric Name", "Metric Unit", "Metric Value" and, in newer ncu, rule columns ("Rule Name",
  "Rule Type", "Rule Description", "Estimated Speedup Type", "Estimated Speedup").

Values may carry thousands separators ("1,345,664"), units may be auto-scaled ("usecond",
"Gbyte/second"); both are normalised here so analyses see the numbers the .ncu-rep path gives.
The rows become `NcuAction`s and `advisor.parsers.ncu.build_run` makes the tables.
"""

from __future__ import annotations

import csv
import io
import math
import re
from pathlib import Path
from typing import Any

from advisor.errors import InputError, SchemaError
from advisor.parsers.base import ParsedRun, ParseOptions
from advisor.parsers.ncu import TOOL, MetricValue, NcuAction, RuleResult, build_run, mapping, numeric_metric

FORMAT = "ncu-csv"
# Identification columns of both pages; every other raw-page column is a metric.
ID_COLUMNS = frozenset(
    {
        "ID",
        "Process ID",
        "Process Name",
        "Host Name",
        "Kernel Name",
        "Kernel Time",
        "Context",
        "Stream",
        "Device",
        "CC",
        "Block Size",
        "Grid Size",
        "Function Name",
        "Demangled Name",
    }
)
DETAILS_COLUMNS = ("Section Name", "Metric Name", "Metric Unit", "Metric Value")
RULE_TYPES = {"OPT": "optimization", "WRN": "warning", "INF": "ok", "ERR": "error"}
DIMS_RE = re.compile(r"\(?\s*(\d+)\s*,\s*(\d+)\s*,\s*(\d+)\s*\)?")
NUMBER_RE = re.compile(r"[-+]?(\d{1,3}(,\d{3})+|\d+)?(\.\d*)?([eE][-+]?\d+)?")
MAX_CSV_BYTES = 4 * 1024**3


def sniff(path: Path) -> bool:
    """True when an '"ID",...' header appears in the first lines (after any ==PROF== output)."""
    try:
        with path.open("r", encoding="utf-8", errors="replace") as f:
            return any(line.startswith('"ID",') for _, line in zip(range(200), f, strict=False))
    except OSError:
        return False


def parse(path: Path, options: ParseOptions) -> ParsedRun:
    """Parse either CSV page into ncu_kernels, ncu_metrics, devices (and rule results if present)."""
    header, rows = read_table(path)
    if all(c in header for c in DETAILS_COLUMNS):
        actions, notes = details_actions(header, rows, path)
    else:
        actions, notes = raw_actions(header, rows, path)
    if not actions:
        raise InputError(f"{path}: the ncu CSV holds no kernel rows", "export with `ncu --csv --page raw`")
    run = {"format": FORMAT, "tool": TOOL, "tool_version": None}
    return build_run(actions, run, notes)


def read_table(path: Path) -> tuple[list[str], list[list[str]]]:
    """Header and data rows, skipping whatever ncu or the program printed before the header."""
    if path.stat().st_size > MAX_CSV_BYTES:
        raise InputError(
            f"{path}: ncu CSV larger than {MAX_CSV_BYTES} bytes", "export fewer kernels or metrics"
        )
    text = path.read_text(encoding="utf-8", errors="replace")
    at = text.find('"ID",')
    if at < 0:
        raise InputError(
            f'{path}: no ncu CSV header (a line starting with "ID",) found',
            "export with `ncu --import report.ncu-rep --csv --page raw > out.csv`",
        )
    try:
        table = [r for r in csv.reader(io.StringIO(text[at:])) if r and not r[0].startswith("==")]
    except csv.Error as e:
        raise InputError(f"{path}: malformed CSV ({e})", "re-export it with `ncu --csv`") from None
    return table[0], table[1:]


# ------------------------------------------------------------------------------------------------
# Raw page
# ------------------------------------------------------------------------------------------------
def raw_actions(
    header: list[str], rows: list[list[str]], path: Path
) -> tuple[list[NcuAction], dict[str, Any]]:
    """One action per data row; the optional second row (blank ID cell) holds the units."""
    units = [""] * len(header)
    if rows and rows[0] and rows[0][0] == "":
        units, rows = _pad(rows[0], len(header)), rows[1:]
    metric_cols = [i for i, name in enumerate(header) if name not in ID_COLUMNS]
    actions: list[NcuAction] = []
    instanced = 0
    for n, row in enumerate(rows, start=3):
        row = _pad(row, len(header))
        ids = dict(zip(header, row, strict=True))
        metrics: dict[str, MetricValue] = {}
        for i in metric_cols:
            got = cell_metric(row[i], units[i])
            if got is not None:
                metrics[header[i]] = got
                if got.text is not None and ";" in got.text:
                    instanced += 1
        actions.append(_action(ids, metrics, n, path))
    return actions, {"csv_page": "raw", "instanced_cells_as_text": instanced}


def _pad(row: list[str], n: int) -> list[str]:
    return (row + [""] * n)[:n]


def cell_metric(cell: str, unit: str) -> MetricValue | None:
    """A CSV cell as a metric: number (separators removed, unit normalised), text, or absent."""
    raw = cell.strip()
    if raw == "" or raw.lower() in ("n/a", "(!) n/a", "nan"):
        return None
    number = parse_number(raw)
    if number is None:
        return MetricValue(None, "", raw)
    return numeric_metric(number, unit)


def parse_number(raw: str) -> float | None:
    """'1,345,664' -> 1345664.0; '6.25' -> 6.25; anything else (text, '240; 240') -> None."""
    m = NUMBER_RE.fullmatch(raw)
    if m is None or not (m.group(1) or m.group(3)):
        return None
    try:
        value = float(raw.replace(",", ""))
    except ValueError:
        return None
    return value if math.isfinite(value) else None  # '1e400' overflows to inf: not a measurement


def _action(ids: dict[str, str], metrics: dict[str, MetricValue], line: int, path: Path) -> NcuAction:
    try:
        index = int(ids["ID"].replace(",", ""))
    except ValueError:
        raise InputError(
            f"{path}: line {line}: launch ID {ids['ID']!r} is not a number", "re-export with `ncu --csv`"
        ) from None
    return NcuAction(
        index=_fits_ncu_id(index, ids["ID"], line, path),
        name=ids.get("Kernel Name") or ids.get("Demangled Name") or ids.get("Function Name") or "<unknown>",
        metrics=metrics,
        stream_hint=_opt_int(ids.get("Stream")),
        device_hint=_opt_int(ids.get("Device")),
        grid_hint=_dims(ids.get("Grid Size")),
        block_hint=_dims(ids.get("Block Size")),
        cc_hint=ids.get("CC") or None,
        host=ids.get("Host Name") or None,
    )


def _opt_int(cell: str | None) -> int | None:
    value = parse_number(cell.strip()) if cell else None
    return int(value) if value is not None and abs(value) < 2**63 else None  # past int64: damaged, not a value


def _dims(cell: str | None) -> tuple[int, int, int] | None:
    m = DIMS_RE.fullmatch(cell.strip()) if cell else None
    dims = (int(m.group(1)), int(m.group(2)), int(m.group(3))) if m else None
    return dims if dims is not None and max(dims) < 2**31 else None


# ------------------------------------------------------------------------------------------------
# Details page
# ------------------------------------------------------------------------------------------------
def details_actions(
    header: list[str], rows: list[list[str]], path: Path
) -> tuple[list[NcuAction], dict[str, Any]]:
    """Group long-form rows by launch ID; section labels map to metric names via the mapping."""
    labels: dict[str, str] = mapping()["details_labels"]
    by_id: dict[int, NcuAction] = {}
    has_rules = "Rule Name" in header
    unmapped: set[str] = set()
    for n, row in enumerate(rows, start=2):
        cells = dict(zip(header, _pad(row, len(header)), strict=True))
        action = by_id.get(_launch_id(cells, n, path))
        if action is None:
            action = _action(cells, {}, n, path)
            by_id[action.index] = action
        if has_rules and cells.get("Rule Name"):
            action.rules.append(_details_rule(cells))
        name = _details_metric_name(cells, labels, unmapped)
        got = cell_metric(cells["Metric Value"], cells["Metric Unit"]) if name else None
        if name and got is not None:
            action.metrics.setdefault(name, got)
    notes: dict[str, Any] = {"csv_page": "details", "rule_results_exported": has_rules}
    if unmapped:
        notes["details_labels_kept_as_labels"] = len(unmapped)
    return [by_id[k] for k in sorted(by_id)], notes


def _launch_id(cells: dict[str, str], line: int, path: Path) -> int:
    value = parse_number(cells["ID"].strip())
    if value is None:
        raise InputError(
            f"{path}: line {line}: launch ID {cells['ID']!r} is not a number", "re-export with `ncu --csv`"
        )
    return _fits_ncu_id(int(value), cells["ID"], line, path)


def _fits_ncu_id(index: int, cell: str, line: int, path: Path) -> int:
    """The launch ID keys every ncu table (required int64 ncu_id): out of range is damage, not a null."""
    if -(2**63) <= index < 2**63:
        return index
    raise SchemaError(
        f"{path}: line {line}: launch ID {cell.strip()[:40]!r} does not fit the model (ncu_id is a 64-bit integer)",
        "the CSV holds an out-of-range launch ID; re-export it with `ncu --csv`",
        path=str(path),
    )


def _details_metric_name(cells: dict[str, str], labels: dict[str, str], unmapped: set[str]) -> str | None:
    """Metric names pass through (--print-metric-name name); labels map, else stay 'Section/label'."""
    label = cells["Metric Name"].strip()
    if not label:
        return None
    if "__" in label:
        return label
    key = f"{cells['Section Name'].strip()}/{label}"
    if key in labels:
        return labels[key]
    unmapped.add(key)
    return key


def _details_rule(cells: dict[str, str]) -> RuleResult:
    speedup = parse_number(cells.get("Estimated Speedup", "").strip())
    kind = cells.get("Estimated Speedup Type", "").strip().lower()
    return RuleResult(
        rule=cells["Rule Name"].strip(),
        section=cells.get("Section Name", "").strip() or None,
        severity=RULE_TYPES.get(
            cells.get("Rule Type", "").strip(), cells.get("Rule Type", "").strip().lower() or None
        ),
        message=cells.get("Rule Description", "").strip() or None,
        est_speedup_pct=speedup,
        speedup_type=kind if kind in ("local", "global") else None,
    )
