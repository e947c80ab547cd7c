"""Nsight Compute reports (.ncu-rep) -> ncu_kernels, ncu_metrics, ncu_rule_results, devices.

Nsight Compute profiles a few kernel launches in depth (hundreds of counters each), unlike the
timeline tools. We read the report through NVIDIA's own `ncu_report` module (PyPI `ncu-report`,
no GPU or CUDA needed) rather than shelling out to `ncu --csv`, because only the Python interface
exposes rule results with their speedup estimates and the NVTX state of each launch.

Both Nsight Compute parsers (this one and `ncu_csv`) first turn their input into a list of
`NcuAction`s and then share `build_run`, so analyses see the same tables whichever export a user
has. Every metric the report holds is kept (long form); `mappings/ncu_metrics.toml` names the ones
analyses use and how unit spellings are normalised.
"""

from __future__ import annotations

import json
import math
import re
import struct
import tomllib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import pyarrow as pa

from advisor.errors import InputError, ToolMissing
from advisor.model.schema import empty
from advisor.parsers.base import Interner, ParsedRun, ParseOptions

FORMAT = "ncu-rep"
TOOL = "Nsight Compute"
MAPPING = Path(__file__).parent / "mappings" / "ncu_metrics.toml"
REP_MAGIC = b"NVR\x00"
VERSION_SCAN_BYTES = 64 * 1024 * 1024  # version/command-line strings sit in early session blocks
VERSION_RE = re.compile(rb"(\d{4}\.\d+\.\d+(?:\.\d+)?) \(build \d+\)")
COMMAND_MARK = b"ncu --"  # ncu and ncu.exe command lines both contain it
MSG_TYPES = {0: "none", 1: "ok", 2: "optimization", 3: "warning", 4: "error"}
SPEEDUP_TYPES = {0: "unknown", 1: "local", 2: "global"}
FOCUS_SEVERITY = {0: "default", 1: "low", 2: "high"}
DEFAULT_NVTX_DOMAIN = "<default domain>"
# ncu_report hands back undecodable report bytes as lone surrogates ("\udc80"), which Arrow cannot encode
SURROGATES = re.compile("[\ud800-\udfff]")
DAMAGED_HINT = "re-capture it with `ncu -o`, or re-export it with `ncu --import <report> --export <new>`"


# ------------------------------------------------------------------------------------------------
# The shared intermediate form
# ------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class MetricValue:
    """One metric of one launch, already in the canonical unit (numeric) or as text."""

    value: float | None
    unit: str
    text: str | None = None


@dataclass(frozen=True)
class RuleResult:
    """One Nsight Compute rule result; evidence attributed to Nsight Compute, not to advisor."""

    rule: str
    section: str | None
    severity: str | None
    message: str | None
    est_speedup_pct: float | None = None
    speedup_type: str | None = None
    focus_metrics: str | None = None


@dataclass
class NcuAction:
    """One profiled launch as either export describes it.

    The `*_hint` fields come from the CSV identification columns; `build_run` prefers the
    equivalent launch__* metrics when the report holds them, so both exports agree.
    """

    index: int
    name: str
    metrics: dict[str, MetricValue]
    rules: list[RuleResult] = field(default_factory=list)
    nvtx_context: str | None = None
    stream_hint: int | None = None
    device_hint: int | None = None
    grid_hint: tuple[int, int, int] | None = None
    block_hint: tuple[int, int, int] | None = None
    cc_hint: str | None = None
    host: str | None = None


# ------------------------------------------------------------------------------------------------
# Mapping data and units
# ------------------------------------------------------------------------------------------------
@cache
def mapping() -> dict[str, Any]:
    """The parsed mappings/ncu_metrics.toml (key metrics, unit spellings, details labels)."""
    with MAPPING.open("rb") as f:
        return tomllib.load(f)


@cache
def canonical_unit(unit: str) -> tuple[str, float]:
    """Map an ncu unit spelling to (canonical unit, factor): canonical value = value * factor.

    ncu_report says "ns" and "byte/s"; `ncu --csv` says "usecond", "Gbyte/second", "cycle/nsecond"
    or, in newer releases, "us" and "GB/s". A per-time rate becomes per second; cycles per second
    become "hz" (the spelling ncu_report uses for *.per_second of cycle counters).
    """
    u = unit.strip()
    if "/" not in u:
        return _simple_unit(u)
    num, den = u.split("/", 1)
    n_unit, n_factor = _simple_unit(num)
    d_unit, d_factor = _simple_unit(den)
    if d_unit == "ns":  # "per <time>" -> per second
        factor = n_factor * 1e9 / d_factor
        return ("hz" if n_unit == "cycle" else f"{n_unit}/s"), factor
    return f"{n_unit}/{d_unit}", n_factor / d_factor


def _simple_unit(u: str) -> tuple[str, float]:
    units = mapping()["units"]
    if u in units["time"]:
        return "ns", float(units["time"][u])
    if u in units["alias"]:
        return units["alias"][u], 1.0
    for prefix in sorted(units["prefix"], key=len, reverse=True):
        rest = u[len(prefix) :]
        if u.startswith(prefix) and rest in units["alias"]:
            return units["alias"][rest], float(units["prefix"][prefix])
    return u, 1.0


def numeric_metric(value: float, unit: str) -> MetricValue:
    """A numeric metric converted to its canonical unit."""
    canon, factor = canonical_unit(unit)
    return MetricValue(value * factor if factor != 1.0 else value, canon)


# ------------------------------------------------------------------------------------------------
# .ncu-rep entry points
# ------------------------------------------------------------------------------------------------
def sniff(path: Path) -> bool:
    """True when the file starts with the Nsight Compute report magic."""
    try:
        with path.open("rb") as f:
            return f.read(4) == REP_MAGIC
    except OSError:
        return False


def parse(path: Path, options: ParseOptions) -> ParsedRun:
    """Read every profiled launch of a .ncu-rep through ncu_report into the model tables."""
    ncu_report = _import_ncu_report()
    blocks = check_container(path)
    options.progress(0, 1, "loading Nsight Compute report")
    try:
        ctx = ncu_report.load_report(str(path))
    except Exception as e:  # the binding raises bare RuntimeError/FileNotFoundError subclasses
        raise InputError(
            f"{path}: Nsight Compute could not open the report ({type(e).__name__}: {e})",
            "re-export it with `ncu --import <report> --export <new>` or check the file is complete",
        ) from None
    actions, dropped = _read_report(ctx, path)
    if not actions and dropped.get("kernels_unreadable"):
        raise InputError(
            f"{path}: none of the report's {dropped['kernels_unreadable']} profiled kernels could be read "
            "(the report looks damaged)",
            DAMAGED_HINT,
            path=str(path),
        )
    if not actions:
        raise InputError(
            f"{path}: the report holds no profiled kernels",
            "re-run ncu on a workload that launches kernels; if it should hold some, it is damaged: re-capture it",
            path=str(path),
        )
    options.progress(1, 1, "loading Nsight Compute report")
    version, command = scan_version_strings(path)
    notes: dict[str, Any] = {"ncu_report_version": _safe_version(ctx), "container_blocks": blocks}
    if command:
        notes["ncu_command_line"] = command
    notes |= {k: n for k, n in dropped.items() if n}
    run = {"format": FORMAT, "tool": TOOL, "tool_version": version}
    return build_run(actions, run, notes)


def _read_report(ctx: Any, path: Path) -> tuple[list[NcuAction], dict[str, int]]:
    """read_actions(), with whatever ncu_report raises on a damaged report as one clean line."""
    try:
        return read_actions(ctx)
    except Exception as e:  # SWIG binding: TypeError, RuntimeError, ValueError... on damaged records
        raise InputError(
            f"{path}: Nsight Compute could not read the report, it looks damaged ({type(e).__name__}: "
            f"{_first_line(e)})",
            DAMAGED_HINT,
            path=str(path),
        ) from None


def _first_line(e: BaseException) -> str:
    return _clean((str(e).strip().splitlines() or [""])[0][:160])


def _import_ncu_report() -> Any:
    try:
        import ncu_report
    except ImportError:
        raise ToolMissing(
            "reading .ncu-rep files needs NVIDIA's ncu_report Python module",
            "pip install ncu-report",
        ) from None
    return ncu_report


def _safe_version(ctx: Any) -> str | None:
    try:
        return str(ctx.get_version())
    except Exception:
        return None


def check_container(path: Path) -> int:
    """Walk the report's block framing; fail on a wrong magic or a truncated file.

    ncu_report silently returns fewer (or zero) kernels for a truncated file, so we check the
    framing ourselves. Observed layout (ncu 2024.1 report, read by ncu_report 2026.3): "NVR\\0",
    u32 header length + header, then blocks of [u32 length][protobuf block header whose field 5
    is the payload size][payload]. A layout we cannot follow is not an error (newer versions may
    differ); a block that runs past the end of the file is.
    """
    size = path.stat().st_size
    with path.open("rb") as f:
        head = f.read(8)
        if len(head) < 8 or head[:4] != REP_MAGIC:
            raise InputError(
                f"{path}: not an Nsight Compute report (missing the NVR header)",
                "pass a .ncu-rep written by `ncu -o`, or a CSV from `ncu --csv --page raw`",
            )
        pos = 8 + struct.unpack_from("<I", head, 4)[0]
        blocks = 0
        while pos < size:
            f.seek(pos)
            raw = f.read(4)
            if len(raw) < 4:
                _truncated(path, pos, size)
            hlen = struct.unpack("<I", raw)[0]
            header = f.read(hlen)
            if len(header) < hlen:
                _truncated(path, pos, size)
            payload = _varint_field(header, 5)
            if payload is None:
                return -1  # unknown layout: leave judgement to ncu_report
            pos += 4 + hlen + payload
            blocks += 1
        if pos > size:
            _truncated(path, pos, size)
    return blocks


def _truncated(path: Path, pos: int, size: int) -> None:
    raise InputError(
        f"{path}: Nsight Compute report is truncated (a block ends at byte {pos}, the file has {size})",
        "copy the complete .ncu-rep again",
    )


def _varint_field(buf: bytes, wanted: int) -> int | None:
    """Value of varint field `wanted` in a protobuf message (0 if absent); None if unparseable."""
    i, found = 0, 0
    try:
        while i < len(buf):
            key, i = _varint(buf, i)
            num, wire = key >> 3, key & 7
            if wire == 0:
                val, i = _varint(buf, i)
                if num == wanted:
                    found = val
            elif wire == 2:
                ln, i = _varint(buf, i)
                i += ln
            elif wire in (1, 5):
                i += 8 if wire == 1 else 4
            else:
                return None
    except IndexError:
        return None
    return found if i == len(buf) else None


def _varint(buf: bytes, i: int) -> tuple[int, int]:
    result, shift = 0, 0
    while True:
        b = buf[i]
        i += 1
        result |= (b & 0x7F) << shift
        shift += 7
        if b < 0x80:
            return result, i


def scan_version_strings(path: Path) -> tuple[str | None, str | None]:
    """Nsight Compute version and command line, from the session strings in the file bytes.

    ncu_report exposes only its own version, not the version that wrote the report; the report
    stores e.g. "2024.1.1.0 (build 33998838) (public-release)" and the ncu command line verbatim.
    """
    with path.open("rb") as f:
        data = f.read(VERSION_SCAN_BYTES)
    version = VERSION_RE.search(data)
    return (version.group(1).decode() if version else None), _command_line(data)


def _command_line(data: bytes) -> str | None:
    """The ncu command line: a protobuf string, so its varint length sits right before it."""
    at = data.find(COMMAND_MARK)
    if at < 0:
        return None
    start = at
    while start > 0 and _printable(data[start - 1]):
        start -= 1
    end = _string_end(data, start, at)
    return data[start:end].decode("ascii", "replace").strip() or None


def _printable(b: int) -> bool:
    return 0x20 <= b <= 0x7E


def _string_end(data: bytes, start: int, at: int) -> int:
    """End of the string at `start`: from its varint length prefix, else the printable run."""
    for width in (3, 2, 1):  # widest first: 0xce 0x02 is 334, not the 1-byte varint 0x02
        chunk = data[max(0, start - width) : start]
        if len(chunk) == width and chunk[-1] < 0x80 and all(b >= 0x80 for b in chunk[:-1]):
            end = start + _varint(chunk, 0)[0]
            if end > at and all(_printable(b) for b in data[start:end]):
                return end
    end = at
    while end < len(data) and _printable(data[end]):
        end += 1
    return end


# ------------------------------------------------------------------------------------------------
# Reading actions through ncu_report
# ------------------------------------------------------------------------------------------------
def read_actions(ctx: Any) -> tuple[list[NcuAction], dict[str, int]]:
    """Every action of every range, numbered in report order (what ncu calls the launch ID).

    Also returns what was left out, for the run notes: metrics without a value, metrics whose
    name is damaged, and launches whose record ncu_report could not parse at all (it then gives
    neither name nor metrics; the launch keeps its number, so later IDs still match ncu's).
    """
    actions: list[NcuAction] = []
    dropped = {"metrics_without_value": 0, "metrics_with_damaged_names": 0, "kernels_unreadable": 0}
    index = 0
    for r in range(ctx.num_ranges()):
        rng = ctx.range_by_idx(r)
        for a in range(rng.num_actions()):
            act = rng.action_by_idx(a)
            metrics, missing, damaged = read_metrics(act)
            dropped["metrics_without_value"] += missing
            dropped["metrics_with_damaged_names"] += damaged
            name = act.name(act.NameBase_DEMANGLED)
            if name is None and not metrics:
                dropped["kernels_unreadable"] += 1
            else:
                actions.append(
                    NcuAction(
                        index=index,
                        name=_clean(name) or "<unknown>",
                        metrics=metrics,
                        rules=list(read_rules(act)),
                        nvtx_context=nvtx_context(act),
                    )
                )
            index += 1
    return actions, dropped


def read_metrics(action: Any) -> tuple[dict[str, MetricValue], int, int]:
    """All metrics of one action: numbers in canonical units, strings as text.

    Instanced metrics (per-PC source counters, PM-sampling series) keep their aggregate value
    only, the same value `ncu --csv --page raw` prints. A metric with no value is left out, and
    so is one whose name a damaged report garbled: ncu_report cannot look it up (a NUL cuts the
    name short, a surrogate-escaped byte is refused) and no analysis asks for it. Returns the
    metrics, the count without value and the count with damaged names.
    """
    out: dict[str, MetricValue] = {}
    missing = damaged = 0
    for name in action.metric_names():
        if _damaged_name(name):
            damaged += 1
            continue
        m = action.metric_by_name(name)
        got = _metric_value(m) if m is not None else None
        if got is None:
            missing += 1
        else:
            out[name] = got
    return out, missing, damaged


def _damaged_name(name: str) -> bool:
    return "\x00" in name or (not name.isascii() and SURROGATES.search(name) is not None)


def _clean(text: str | None) -> str:
    """Text from ncu_report with bytes it could not decode (surrogate escapes) shown as U+FFFD.

    None (a damaged record gives no text) becomes "".
    """
    if not text:
        return ""
    return text if text.isascii() else SURROGATES.sub("\ufffd", text)


def _opt_clean(text: Any) -> Any:
    return _clean(text) if isinstance(text, str) else text


def _metric_value(m: Any) -> MetricValue | None:
    if not m.has_value():
        return None
    kind = m.kind()
    if kind == m.ValueKind_STRING:
        text = m.as_string()
        return MetricValue(None, "", _clean(text)) if text is not None else None
    if kind in (m.ValueKind_DOUBLE, m.ValueKind_FLOAT):
        value = float(m.as_double())
    elif kind in (m.ValueKind_UINT32, m.ValueKind_UINT64):
        value = float(m.as_uint64())
    else:
        return None
    unit = _clean(m.unit())
    if not math.isfinite(value):
        return MetricValue(None, canonical_unit(unit)[0], str(value))
    return numeric_metric(value, unit)


def read_rules(action: Any) -> Iterator[RuleResult]:
    """The rule results stored in the report (ncu runs rules at capture time; we do not re-run)."""
    for r in action.rule_results():
        rule = _clean(r.rule_identifier())
        if not rule:  # a damaged record: nothing to attribute the result to
            continue
        msg = r.rule_message() if r.has_rule_message() else None
        speed = r.speedup_estimation() if r.has_speedup_estimation() else None
        focus = [
            {
                "name": _opt_clean(f["name"]),
                "value": f["value"],
                "severity": FOCUS_SEVERITY.get(int(f["severity"])),
                "info": _opt_clean(f["info"]),
            }
            for f in r.focus_metrics()
        ]
        yield RuleResult(
            rule=rule,
            section=_clean(r.section_identifier()) or None,
            severity=MSG_TYPES.get(int(msg["type"])) if msg else None,
            message=_clean(_rule_text(msg["title"], msg["message"])) if msg else None,
            est_speedup_pct=float(speed["speedup"]) if speed else None,
            speedup_type=SPEEDUP_TYPES.get(int(speed["type"])) if speed else None,
            focus_metrics=json.dumps(focus) if focus else None,
        )


LINK_URL = re.compile(r"@url:([^:@]*):[^@]*@")
LINK_OTHER = re.compile(r"@(?:section|sass|source):[^@]*:([^:@]*)@")


def _rule_text(title: str, message: str) -> str:
    """'Title: message' with ncu's @section:id:text@ style links reduced to their text."""
    text = LINK_OTHER.sub(r"\1", LINK_URL.sub(r"\1", message or ""))
    return f"{title}: {text}" if title else text


def nvtx_context(action: Any) -> str | None:
    """The launch's NVTX ranges, outermost first, ' > '-joined; other domains as domain@range."""
    state = action.nvtx_state()
    if state is None:
        return None
    parts: list[str] = []
    for dom_id in state.domains():
        dom = state.domain_by_id(dom_id)
        dom_name = _clean(dom.name())
        prefix = "" if dom_name == DEFAULT_NVTX_DOMAIN else f"{dom_name}@"
        names = [dom.push_pop_range(i).name() for i in range(len(dom.push_pop_ranges()))]
        names += [dom.start_end_range(i).name() for i in range(len(dom.start_end_ranges()))]
        parts += [prefix + _clean(n) for n in names]
    return " > ".join(parts) or None


# ------------------------------------------------------------------------------------------------
# Shared builder: actions -> model tables
# ------------------------------------------------------------------------------------------------
def build_run(actions: list[NcuAction], run: dict[str, Any], notes: dict[str, Any]) -> ParsedRun:
    """Turn parsed actions into ncu_kernels, ncu_metrics, ncu_rule_results, devices and strings."""
    strings = Interner()
    devices = DeviceTable()
    kernel_rows = [kernel_row(a, devices.device_id(a), strings) for a in actions]
    tables = {
        "ncu_kernels": pa.Table.from_pylist(kernel_rows),
        "ncu_metrics": metrics_table(actions),
        "ncu_rule_results": rules_table(actions),
        "devices": pa.Table.from_pylist(devices.rows),
        "strings": strings.table(),
    }
    captured = {"ncu_kernels", "ncu_metrics", "devices"}
    if any(a.rules for a in actions) or notes.get("rule_results_exported"):
        captured.add("ncu_rule_results")
    notes = notes | {"kernels": len(actions), "metrics": tables["ncu_metrics"].num_rows}
    hosts = sorted({a.host for a in actions if a.host})
    if hosts:
        run = run | {"host": ",".join(hosts)}
    return ParsedRun(tables=tables, run=run, captured=captured, notes=notes)


def _num(a: NcuAction, name: str) -> float | None:
    m = a.metrics.get(name)
    return m.value if m is not None else None


def _int(a: NcuAction, name: str) -> int | None:
    return _int64(_num(a, name))


def _int64(v: float | None) -> int | None:
    """A metric as an int64 cell, or None when it is absent, not finite, or out of range (damaged input)."""
    if v is None or not math.isfinite(v) or abs(v) >= 2**63:
        return None
    return int(round(v))


def _text(a: NcuAction, name: str) -> str | None:
    m = a.metrics.get(name)
    return m.text if m is not None else None


def kernel_row(a: NcuAction, device_id: int | None, strings: Interner) -> dict[str, Any]:
    """One ncu_kernels row; launch__* metrics first, CSV identification columns as fallback."""
    grid = _dims(a, "launch__grid_dim_", a.grid_hint)
    block = _dims(a, "launch__block_dim_", a.block_hint)
    stream = _int(a, "launch__stream_id")
    return {
        "ncu_id": a.index,
        "device_id": device_id,
        "name_id": strings.id(a.name),
        "launch_index": a.index,
        "stream_id": stream if stream is not None else a.stream_hint,
        "grid_x": grid[0],
        "grid_y": grid[1],
        "grid_z": grid[2],
        "block_x": block[0],
        "block_y": block[1],
        "block_z": block[2],
        "registers_per_thread": _int(a, "launch__registers_per_thread"),
        "duration_ns": _duration_ns(a),
        "nvtx_context": a.nvtx_context,
    }


def _duration_ns(a: NcuAction) -> int | None:
    m = a.metrics.get("gpu__time_duration.sum")
    if m is None or m.value is None or m.unit != "ns":
        return None
    return _int64(m.value)


def _dims(a: NcuAction, prefix: str, hint: tuple[int, int, int] | None) -> tuple[int | None, ...]:
    got = tuple(_int(a, prefix + axis) for axis in "xyz")
    if all(v is None for v in got) and hint is not None:
        return hint
    return got


def metrics_table(actions: Iterable[NcuAction]) -> pa.Table:
    """ncu_metrics in long form, built column-wise (a report holds ~1,200 metrics per launch)."""
    ids: list[int] = []
    names: list[str] = []
    values: list[float | None] = []
    units: list[str | None] = []
    texts: list[str | None] = []
    for a in actions:
        for name in sorted(a.metrics):
            m = a.metrics[name]
            ids.append(a.index)
            names.append(name)
            values.append(m.value)
            units.append(m.unit or None)
            texts.append(m.text)
    return pa.table(
        {
            "ncu_id": pa.array(ids, pa.int64()),
            "metric": pa.array(names, pa.string()),
            "value": pa.array(values, pa.float64()),
            "unit": pa.array(units, pa.string()),
            "text": pa.array(texts, pa.string()),
        }
    )


def rules_table(actions: Iterable[NcuAction]) -> pa.Table:
    rows = [{"ncu_id": a.index, **r.__dict__} for a in actions for r in a.rules]
    if not rows:
        return empty("ncu_rule_results")
    return pa.Table.from_pylist(rows)


class DeviceTable:
    """Devices from the device__attribute_* metrics, one row per distinct GPU in the report."""

    def __init__(self) -> None:
        self.rows: list[dict[str, Any]] = []
        self._ids: dict[tuple[Any, ...], int] = {}

    def device_id(self, a: NcuAction) -> int | None:
        ordinal = _int(a, "launch__device_id")
        if ordinal is None:
            ordinal = _int(a, "device__attribute_device_index")
        if ordinal is None:
            ordinal = a.device_hint
        key = (
            ordinal,
            _text(a, "device__attribute_display_name"),
            _int(a, "device__attribute_pci_domain_id"),
            _int(a, "device__attribute_pci_bus_id"),
            _int(a, "device__attribute_pci_device_id"),
            a.host,
        )
        if key not in self._ids:
            taken = {r["device_id"] for r in self.rows}
            new_id = ordinal if ordinal is not None and ordinal not in taken else max(taken | {-1}) + 1
            self._ids[key] = new_id
            self.rows.append(device_row(a, new_id, ordinal))
        return self._ids[key]


def device_row(a: NcuAction, device_id: int, ordinal: int | None) -> dict[str, Any]:
    """One devices row. Clock attributes are in kHz; sizes in bytes."""
    mem_clock_hz = _khz(a, "device__attribute_max_mem_frequency_khz") or _khz(
        a, "device__attribute_memory_clock_rate"
    )
    bus_bits = _int(a, "device__attribute_global_memory_bus_width")
    major = _int(a, "device__attribute_compute_capability_major")
    minor = _int(a, "device__attribute_compute_capability_minor")
    return {
        "device_id": device_id,
        "local_index": ordinal,
        "host": a.host,
        "name": _text(a, "device__attribute_display_name"),
        "vendor": "nvidia",
        "compute_capability": f"{major}.{minor}" if major is not None and minor is not None else a.cc_hint,
        "sm_count": _int(a, "device__attribute_multiprocessor_count"),
        "memory_bytes": _int(a, "device__attribute_total_memory"),
        "sm_clock_hz": _khz(a, "device__attribute_max_gpu_frequency_khz")
        or _khz(a, "device__attribute_clock_rate"),
        "memory_clock_hz": mem_clock_hz,
        "memory_bus_width_bits": bus_bits,
        # Peak DRAM bandwidth is not an attribute; derived the way CUDA's deviceQuery/bandwidthTest
        # do: memory clock x bus width x 2 (double data rate) / 8 bits per byte. For the A100 80GB
        # PCIe fixture: 1512 MHz x 5120 bit x 2 / 8 = 1.935e12 B/s, NVIDIA's published 1,935 GB/s.
        "peak_memory_bandwidth_bytes_per_s": (
            mem_clock_hz * bus_bits * 2 / 8 if mem_clock_hz and bus_bits else None
        ),
        "l2_cache_bytes": _int(a, "device__attribute_l2_cache_size"),
        "max_threads_per_sm": _int(a, "device__attribute_max_threads_per_multiprocessor"),
        "max_registers_per_sm": _int(a, "device__attribute_max_registers_per_multiprocessor"),
        "max_shared_memory_per_sm_bytes": _int(a, "device__attribute_max_shared_memory_per_multiprocessor"),
    }


def _khz(a: NcuAction, name: str) -> int | None:
    v = _int(a, name)
    return v * 1000 if v else None
