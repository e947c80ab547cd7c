"""The rule unit: a class with metadata, declared options and a short `check`, and the typed
values it returns (`Fired` / `Clean` / `NotApplicable`, `Finding`, `Evidence`, `Fix`).

A rule is diagnosis only. It reads numbers through named metrics (advisor/metrics/*.sql), never
raw exporter tables, and returns findings that carry their own evidence: every percentage names
its denominator (`Evidence.of`), and every estimated gain says how it was computed
(`Finding.gain_basis`). Whether a rule can run at all is decided by the engine from `requires`
(plus `applies()` for conditions only the data can answer), so a rule never guesses on a trace
that did not capture what it needs.
"""

from __future__ import annotations

import hashlib
import string
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from advisor import metrics
from advisor.model.store import Run
from advisor.vocab import Evidence as Evidence
from advisor.vocab import Window as Window

if TYPE_CHECKING:
    from advisor.perf.ncu_join import JoinResult

Category = Literal["io", "launch", "sync", "idle", "memory", "compute", "communication"]
Status = Literal["preview", "stable"]
Risk = Literal["safe", "changes-numerics", "redesign"]
OptionValue = int | float | str | bool

CATEGORIES: tuple[Category, ...] = ("io", "launch", "sync", "idle", "memory", "compute", "communication")

# The docstring headings every rule has, in this order (checked by tests/unit/test_rules_engine.py).
HEADINGS = (
    "What it detects",
    "Why it costs time",
    "Trace signature",
    "How to fix",
    "Fix risk",
    "False positives",
    "Options",
)

# How to get each model table into a capture; NotApplicable quotes it.
CAPTURE_HINTS: dict[str, str] = {
    "kernels": "nsys profile --trace=cuda, or torch.profiler with ProfilerActivity.CUDA",
    "memops": "nsys profile --trace=cuda, or torch.profiler with ProfilerActivity.CUDA",
    "api_calls": "nsys profile --trace=cuda,osrt, or torch.profiler with ProfilerActivity.CPU and CUDA",
    "sync": "nsys profile --trace=cuda (CUDA synchronization events are on by default)",
    "ranges": "NVTX ranges (nsys --trace=nvtx) or torch.profiler steps (prof.step()) / record_function",
    "cpu_ops": "torch.profiler with ProfilerActivity.CPU (record_shapes=True, with_flops=True for FLOPs)",
    "collectives": "nsys --trace=cuda,nvtx,nccl or torch.profiler on a distributed run",
    "gpu_metrics": "nsys profile --gpu-metrics-devices=all",
    "memory_events": "torch.profiler(profile_memory=True) or nsys --cuda-memory-usage=true",
    "devices": "any GPU capture (device properties are recorded by nsys and Kineto)",
    "ncu_kernels": "ncu --set full -o report <app> (Nsight Compute report)",
    "ncu_metrics": "ncu --set full -o report <app> (Nsight Compute report)",
    "threads": "nsys profile --trace=osrt (thread names)",
    "um_faults": "nsys profile --trace=cuda --cuda-um-cpu-page-faults=true --cuda-um-gpu-page-faults=true",
    "um_migrations": "nsys profile --trace=cuda (unified-memory migrations come with CUDA tracing)",
}


@dataclass(frozen=True)
class Option:
    """A declared rule option: default, help, and where the default comes from (a peer tool or the book)."""

    default: OptionValue
    help: str
    source: str = ""

    @property
    def type(self) -> type:
        return type(self.default)

    def coerce(self, value: Any) -> OptionValue:
        """`value` converted to this option's type, or ValueError naming what was expected."""
        kind = self.type
        if kind is bool:
            if isinstance(value, str):
                if value.lower() in ("1", "true", "yes", "on"):
                    return True
                if value.lower() in ("0", "false", "no", "off"):
                    return False
                raise ValueError(f"expected true/false, got {value!r}")
            return bool(value)
        try:
            return kind(value)  # type: ignore[no-any-return]
        except (TypeError, ValueError):
            raise ValueError(f"expected {kind.__name__}, got {value!r}") from None


@dataclass(frozen=True)
class Fix:
    """A remedy. risk: safe (same results), changes-numerics (results may differ in low bits),
    redesign (code structure changes)."""

    title: str
    detail: str
    risk: Risk = "safe"

    def to_dict(self) -> dict[str, Any]:
        return {"title": self.title, "detail": self.detail, "risk": self.risk}


@dataclass(frozen=True)
class Finding:
    """One diagnosed problem with its numbers, estimated gain and fixes.

    `location` is the normalized place (e.g. "device=0|direction=HtoD"), no times: it and the code
    make the fingerprint that lets a diff say "the same finding, now smaller".
    """

    code: str
    name: str
    category: Category
    message: str
    window: Window
    evidence: tuple[Evidence, ...]
    est_gain_ns: int
    gain_basis: str
    fixes: tuple[Fix, ...]
    location: str
    # cross-rank findings only: one row per rank (rank, device_id, the rule's per-rank numbers), so one finding
    # stands for a pattern across ranks instead of one finding per rank; absent from the JSON when empty
    ranks: tuple[Mapping[str, Any], ...] = ()

    @property
    def fingerprint(self) -> str:
        return hashlib.sha1(f"{self.code}|{self.location}".encode()).hexdigest()[:16]

    def value(self, name: str) -> float | int | str | None:
        """The value of evidence `name` (KeyError if the finding has none)."""
        for e in self.evidence:
            if e.name == name:
                return e.value
        raise KeyError(name)

    def to_dict(self) -> dict[str, Any]:
        return {
            "code": self.code,
            "name": self.name,
            "category": self.category,
            "message": self.message,
            "window": self.window.to_dict(),
            "evidence": [e.to_dict() for e in self.evidence],
            "est_gain_ns": self.est_gain_ns,
            "gain_basis": self.gain_basis,
            "fixes": [f.to_dict() for f in self.fixes],
            "fingerprint": self.fingerprint,
            "location": self.location,
        } | ({"ranks": [dict(r) for r in self.ranks]} if self.ranks else {})


@dataclass(frozen=True)
class Fired:
    findings: tuple[Finding, ...]
    kind: ClassVar[str] = "fired"


@dataclass(frozen=True)
class Clean:
    """The rule ran and found nothing worth reporting; `evidence` says what it measured."""

    note: str = ""
    evidence: tuple[Evidence, ...] = ()
    kind: ClassVar[str] = "clean"


@dataclass(frozen=True)
class NotApplicable:
    """The trace cannot answer the rule: why, and how to capture what it needs."""

    reason: str
    how_to_capture: str = ""
    kind: ClassVar[str] = "not_applicable"


Outcome = Fired | Clean | NotApplicable


@dataclass
class Context:
    """What `check` sees: the run, the resolved options, and metric access bound to the run."""

    run: Run
    options: Mapping[str, OptionValue]
    _cache: dict[str, Any] = field(default_factory=dict)
    # Nsight Compute rules only: the ncu run joined to a timeline run (analyze --ncu); gains then
    # weigh the ncu-measured inefficiency by the matched kernels' time in the timeline.
    timeline: JoinResult | None = None
    # timeline rules only: an Nsight Compute report of the same program is joined (analyze --ncu), so a timeline
    # rule whose pattern an ncu rule reads from the report's measurements defers to it
    with_ncu: bool = False

    def opt(self, name: str) -> Any:
        return self.options[name]

    def ns(self, name: str) -> int:
        """An option given in microseconds (name ends in _us), in nanoseconds."""
        return int(float(self.options[name]) * 1000)

    def metric(self, name: str, **params: Any) -> list[dict[str, Any]]:
        return metrics.query(self.run, name, **params)

    def one(self, name: str, **params: Any) -> dict[str, Any]:
        return metrics.one(self.run, name, **params)


# evidence units that add up over parts of a run (the ranks of a Dask reduce): counts and times
ADDITIVE_UNITS = frozenset({"count", "ns"})


class Rule:
    """Base class of every rule. Subclasses set the class metadata and implement `check`.

    `requires` names model tables that must be captured and non-empty; `applies()` may add a
    data-dependent condition (say, "needs two or more devices") and return NotApplicable.

    A run analyzed rank by rank (advisor.distributed) states a clean rule over every rank in one of two ways:
    `clean_over` rebuilds the clean outcome from the ranks' clean evidence summed by name (a rule whose clean
    note states sums: counts, times, declared as `clean_sums` with the note's words in `clean_note`), or
    `clean_worst` names the evidence (ns) by which the rule's clean note picks its worst device (the rank whose
    clean outcome has the largest is the run's). A rule with neither keeps one rank's clean outcome, its note
    saying so where the ranks' notes differ.
    """

    clean_worst: ClassVar[str | None] = None
    # the evidence a clean note states as sums, in order: (name, unit); the same note from one run's values
    # (`clean`) and from the ranks' sums (`clean_over`)
    clean_sums: ClassVar[tuple[tuple[str, str], ...]] = ()
    # the note: a template over those values and the options (`{name:ms}` writes a time with `ms`)
    clean_note: ClassVar[str] = ""
    # the note where nothing was measured (no part has the first of clean_sums), with no evidence
    clean_none: ClassVar[str] = ""

    code: ClassVar[str]
    name: ClassVar[str]
    category: ClassVar[Category]
    chapter: ClassVar[tuple[int, ...]]
    requires: ClassVar[frozenset[str]] = frozenset()
    options: ClassVar[dict[str, Option]] = {}
    status: ClassVar[Status] = "preview"

    def applies(self, ctx: Context) -> NotApplicable | None:
        return None

    def check(self, ctx: Context) -> Outcome:
        raise NotImplementedError

    @classmethod
    def clean_over(cls, sums: Mapping[str, int], options: Mapping[str, OptionValue]) -> Clean | None:
        """The clean outcome from its evidence summed over the parts of a run (ADDITIVE_UNITS; a name no part
        measured is absent) and the resolved options, or None where the rule's clean note does not add up (see
        the class doc)."""
        if not cls.clean_sums:
            return None
        if cls.clean_none and cls.clean_sums[0][0] not in sums:
            return Clean(cls.clean_none)
        return cls.clean(options, **{n: sums.get(n, 0) for n, _ in cls.clean_sums})

    @classmethod
    def clean(cls, options: Mapping[str, OptionValue], **values: int) -> Clean:
        """The clean outcome over the values of `clean_sums`: the note and that evidence."""
        return Clean(cls.note({**options, **values}), tuple(Evidence(n, values[n], u) for n, u in cls.clean_sums))

    @classmethod
    def note(cls, values: Mapping[str, Any]) -> str:
        """The clean note over the values of `clean_sums` and the options (a rule may word it in code)."""
        return _NOTE.vformat(cls.clean_note, (), values)

    @classmethod
    def summary(cls) -> str:
        """First line of the docstring."""
        return (cls.__doc__ or "").strip().splitlines()[0] if cls.__doc__ else ""

    @classmethod
    def finding(
        cls,
        message: str,
        *,
        window: Window,
        evidence: list[Evidence],
        est_gain_ns: float,
        gain_basis: str,
        fixes: tuple[Fix, ...],
        location: str,
        ranks: tuple[Mapping[str, Any], ...] = (),
    ) -> Finding:
        """A Finding stamped with this rule's code, name and category."""
        return Finding(
            code=cls.code,
            name=cls.name,
            category=cls.category,
            message=message,
            window=window,
            evidence=tuple(evidence),
            est_gain_ns=max(0, int(est_gain_ns)),
            gain_basis=gain_basis,
            fixes=fixes,
            location=location,
            ranks=ranks,
        )


class _NoteFormatter(string.Formatter):
    """str.format with one more spec: `{name:ms}` writes nanoseconds with `ms`."""

    def format_field(self, value: Any, format_spec: str) -> str:
        return ms(value) if format_spec == "ms" else super().format_field(value, format_spec)


_NOTE = _NoteFormatter()


def ms(ns: float) -> str:
    """Nanoseconds as a short string for messages: milliseconds, seconds from 10 s up."""
    if abs(ns) >= 1e10:
        return f"{ns / 1e9:.2f} s"
    return f"{ns / 1e6:.3f} ms" if abs(ns) < 1e8 else f"{ns / 1e6:.1f} ms"
