"""The typed analysis: frozen types for what `analyze` finds, and the one serializer of the JSON contract.

The engine builds an `Analysis` from its typed parts (the rule report's findings and outcomes, the
run verdict) and every surface reads those parts; `Analysis.to_dict()` is the only place the
documented JSON contract (docs/json-output.md) is written, so the CLI's `--format json`, the
report's embedded document and a notebook's `a.to_json()` are the same bytes.
"""

from __future__ import annotations

import html
import json
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from advisor.engine.findings import RuleReport, RuleResult
from advisor.perf.mfu import Mfu
from advisor.perf.ops.section import Ops
from advisor.perf.range_verdicts import GpuMetrics
from advisor.perf.serving import Serving
from advisor.rules.base import Finding
from advisor.rules.classify import RunVerdict
from advisor.vocab import TimeShare, defer_types
from advisor.vocab import load as load  # the loader of typed rows (re-exported: the engine reads kept facts)

if TYPE_CHECKING:
    from advisor.engine.ncu import NcuJoin
    from advisor.engine.ncu_profile import NcuProfile
    from advisor.engine.tables import Table

# Sections names the Nsight Compute types for type checking only: a run without a report never imports the join
# (about 10 ms of a warm `analyze`); `load` imports them when it reads Sections back
defer_types(NcuJoin="advisor.engine.ncu", NcuProfile="advisor.engine.ncu_profile")

@dataclass(frozen=True)
class InputFacts:
    """Where the run came from: the file, the tool that wrote it, what it captured."""

    path: str | None
    format: str | None
    tool: str | None
    tool_version: str | None
    export_schema: str | None
    sha256: str | None
    bytes: int | None
    host: str | None
    world_size: int | None
    ranks: Any
    captured: tuple[str, ...]
    notes: Mapping[str, Any]


@dataclass(frozen=True)
class CaptureSpan:
    start_ns: int | None
    end_ns: int | None
    span_ns: int | None


@dataclass(frozen=True)
class DeviceTime:
    """One device's span and how its time splits (each a share of that device's span)."""

    device_id: int
    rank: int | None
    name: str | None
    span_start_ns: int
    span_end_ns: int
    span_ns: int
    extent_ns: int  # the span widened to the device's marked steps where they reach further: what it can save at most
    kernels: TimeShare
    compute_kernels: TimeShare
    communication_kernels: TimeShare
    communication_exposed: TimeShare
    memcpy: TimeShare
    memset: TimeShare
    busy: TimeShare
    idle: TimeShare


@dataclass(frozen=True)
class KernelStat:
    name: str
    count: int
    total: TimeShare
    mean_ns: int
    p50_ns: int
    p95_ns: int
    max_ns: int


@dataclass(frozen=True)
class TopKernels:
    total_kernel_ns: int
    of: str
    items: tuple[KernelStat, ...]


@dataclass(frozen=True)
class RangeStat:
    source: str
    name: str
    count: int
    covered: TimeShare
    total_ns: int
    mean_ns: int
    p50_ns: int
    p95_ns: int
    top_level: bool


@dataclass(frozen=True)
class StepTimes:
    """Profiler steps each timed on its GPU side (metric step_spans): until the last kernel it launched ends."""

    total_ns: int | None
    mean_ns: int | None
    p50_ns: int | None
    p95_ns: int | None
    min_ns: int | None
    max_ns: int | None


@dataclass(frozen=True)
class Steps:
    """Kineto profiler steps: the host ranges' durations, and under `gpu` the same steps on their GPU side (shorter
    host figures mean the host queues steps ahead of the GPU)."""

    count: int
    total_ns: int | None
    mean_ns: int | None
    p50_ns: int | None
    p95_ns: int | None
    min_ns: int | None
    max_ns: int | None
    gpu: StepTimes

    def gpu_differs(self) -> bool:
        """Whether the steps' GPU-side mean differs from the host ranges' mean by 5% or more (the surfaces then show
        both: a host that queues steps ahead of the GPU ends its ranges long before their kernels do)."""
        host, g = self.mean_ns, self.gpu.mean_ns
        return host is not None and g is not None and g > 0 and abs(host - g) * 20 >= g


@dataclass(frozen=True)
class RangesSummary:
    total_ranges: int
    items: tuple[RangeStat, ...]
    steps: Steps | None


@dataclass(frozen=True)
class CopyStat:
    """Copies (or memsets) of one kind on one device: direction and source/destination memory."""

    device_id: int
    op: str
    copy_kind: str | None
    src_kind: str | None
    dst_kind: str | None
    count: int
    bytes: int | None
    total_ns: int
    max_ns: int


@dataclass(frozen=True)
class ApiStat:
    api: str
    name: str
    calls: int
    total_ns: int
    max_ns: int


@dataclass(frozen=True)
class ApiSummary:
    """Host API functions with the most time; `of` says what `total_ns` sums."""

    of: str
    items: tuple[ApiStat, ...]


@dataclass(frozen=True)
class FamilyTime:
    """Kernel time of one family on one device, a share of that device's summed kernel durations."""

    device_id: int
    family: str
    kernels: int
    kernel: TimeShare


@dataclass(frozen=True)
class Summary:
    """The facts before any rule (advisor.engine.summary), each figure with its denominator."""

    devices: tuple[Mapping[str, Any], ...]  # the `devices` table's non-null columns, as the schema declares them
    counts: Mapping[str, int]
    capture: CaptureSpan
    time: tuple[DeviceTime, ...]
    top_kernels: TopKernels
    ranges: RangesSummary
    copies: tuple[CopyStat, ...] = ()
    api: ApiSummary = ApiSummary("", ())
    families: tuple[FamilyTime, ...] = ()


@dataclass(frozen=True)
class Sections:
    """Sections of the contract that other modules compute and document themselves (docs/json-output.md)."""

    ncu: NcuJoin | None = None  # the --ncu join (advisor.engine.ncu.join_section)
    ncu_profile: NcuProfile | None = None  # an Nsight Compute report's launches (engine.ncu_profile)
    gpu_metrics: GpuMetrics | None = None  # nsys GPU metrics per NVTX range (perf.range_verdicts)
    ops: Ops | None = None  # per-op roofline from recorded shapes (perf.ops)
    mfu: Mfu | None = None  # MFU and TFLOP/s per device, step and range (perf.mfu)
    serving: Serving | None = None  # graph replay, serving steps by phase (perf.serving)


@dataclass(frozen=True)
class Analysis:
    """One run's analysis: input facts, summary, verdict, ranked findings, rule outcomes, joins.

    `report` and `verdict` are None when the rules did not run (`--no-rules`). `opened_as` and
    `nsys` say how to open the run again for `table()`; they are not part of the contract.
    """

    input: InputFacts
    summary: Summary
    verdict: RunVerdict | None
    report: RuleReport | None
    headline: str | None
    headline_note: str | None
    sections: Sections = Sections()
    opened_as: str | None = field(default=None, compare=False)
    nsys: str | None = field(default=None, compare=False)

    @property
    def findings(self) -> tuple[Finding, ...]:
        """Ranked by estimated gain, largest first (the first is "do this first")."""
        return self.report.findings if self.report is not None else ()

    @property
    def rules(self) -> tuple[RuleResult, ...]:
        return self.report.results if self.report is not None else ()

    @property
    def gain_span_ns(self) -> int | None:
        """What every surface puts a saving against: the headline's denominator (the longest device span, widened to
        the device's marked steps where they reach further); the capture span when the run has no GPU activity."""
        if self.report is not None and self.report.span_ns:
            return self.report.span_ns
        spans = [d.span_ns for d in self.summary.time if d.span_ns]
        return max(spans) if spans else self.summary.capture.span_ns

    def to_dict(self) -> dict[str, Any]:
        """This run's part of the JSON contract (docs/json-output.md)."""
        s = self.summary
        doc: dict[str, Any] = {"input": asdict(self.input), "devices": [dict(d) for d in s.devices],
                               "counts": dict(s.counts), "capture": asdict(s.capture),
                               "time": [asdict(t) for t in s.time], "top_kernels": asdict(s.top_kernels),
                               "ranges": asdict(s.ranges), "copies": [asdict(c) for c in s.copies],
                               "api": asdict(s.api), "families": [asdict(f) for f in s.families]}
        if self.sections.ncu is not None:
            doc["ncu"] = self.sections.ncu.to_dict()
        if self.report is None or self.verdict is None:
            doc.update(findings=[], verdict=None, headline=None, headline_note=None, rules=[])
        else:
            v = self.verdict.to_dict()
            rd = self.report.to_dict()
            doc.update(verdict=dict(v["run"], devices=v["devices"], ranges=v["ranges"]), headline=self.headline,
                       headline_note=self.headline_note, findings=rd["findings"], rules=rd["rules"])
        for key in ("ncu_profile", "gpu_metrics", "ops", "mfu", "serving"):
            if (section := getattr(self.sections, key)) is not None:
                doc[key] = section.to_dict()
        return doc

    def to_json(self) -> str:
        """Exactly `advisor analyze PATH --format json` for this one run."""
        return dumps(document([self]))

    def table(self, name: str, **params: Any) -> Table:
        """A model table (`kernels`, `ranges`, ...) or named metric of this run (`params`: the metric's)."""
        from advisor.engine.tables import read_table

        return read_table(self, name, **params)

    def _repr_html_(self) -> str:
        return repr_html(self)


def dumps(doc: Mapping[str, Any]) -> str:
    return json.dumps(doc, indent=2, default=str) + "\n"


# keys of a single run's document repeated at the top level (docs/json-output.md)
TOP_LEVEL = ("devices", "counts", "capture", "time", "top_kernels", "ranges", "copies", "api", "families",
             "headline", "headline_note", "findings", "verdict", "rules")


def document(analyses: list[Analysis]) -> dict[str, Any]:
    """The JSON contract (docs/json-output.md). With one input, its run's fields are also top-level."""
    from advisor import __version__
    from advisor.engine.summary import JSON_SCHEMA_VERSION

    runs = [a.to_dict() for a in analyses]
    doc: dict[str, Any] = {"schema_version": JSON_SCHEMA_VERSION, "advisor_version": __version__,
                           "inputs": [r["input"] for r in runs], "runs": runs}
    if len(runs) == 1:
        doc.update((k, runs[0][k]) for k in TOP_LEVEL)
    return doc


def repr_html(a: Analysis) -> str:
    """Jupyter's view: the verdict, the "do this first" line and the ranked findings."""
    e = html.escape
    v = a.verdict.run if a.verdict is not None else None
    head = f"<h4>{e(a.input.path or 'run')}</h4>"
    verdict = (f"<p><b>verdict: {e(v.class_)}</b> ({e(v.confidence)} confidence): {e(v.cause)}</p>"
               if v is not None else "<p>rules not run</p>")
    first = f"<p><b>{e(a.headline or '')}</b></p>" + (f"<p><i>{e(a.headline_note)}</i></p>" if a.headline_note else "")
    rows = "".join(
        f"<tr><td>{i}</td><td>{e(f.code)}</td><td>{e(f.name)}</td><td>{f.est_gain_ns / 1e6:.3f}</td>"
        f"<td>{e(f.message)}</td></tr>"
        for i, f in enumerate(a.findings, 1)
    )
    table = ("<table><tr><th>#</th><th>rule</th><th>name</th><th>saves (ms)</th><th>finding</th></tr>"
             f"{rows}</table>") if rows else "<p>no findings</p>"
    return f"<div class='advisor-analysis'>{head}{verdict}{first}{table}</div>"
