"""The expert labels of the shared real traces (LABELS.md, as data in labels.toml) and the advisor
judged against them.

Used by tests/real/test_labels.py (asserts), scripts/gen_accuracy.py (the "Real-world traces" section
of docs/accuracy.md) and scripts/label_table.py (a quick table while changing the diagnosis); all three
see the same `LabelResult`s. Definitions (also printed in docs/accuracy.md):

- observed class: the advisor's verdict class in the labels' vocabulary: exit 2 is `not_analysable`, no
  verdict or verdict class `unknown` / `cannot_judge` is `not_applicable`, any other class as is
  (`compute`, `memory`, `io`, `launch`, `communication`, `none`, `latency`, `mixed` with its `classes`).
- class hit: the observed class is the expected one (for `mixed`, with the same set of classes), or one
  of the label's acceptable verdicts, whose conditions are data: a regex the verdict's cause must match
  (`cause`) or must not match (`not_cause`), or a minimum verdict share (`share_min`).
- no false fix: the top finding (findings[0], ranked by estimated gain) is none of the label's known false
  fixes, the verdict class is none of its forbidden classes, and where the label demands a first fix
  (`first_fix`) the top finding is one of them. A false-fix token is a rule code, optionally with the
  idle cause ID001 names (`ID001:launch` = "cut launch overhead", `ID001:unknown` = "record what the
  host does", `ID001:input` = the DataLoader), optionally with a gain floor (`ID001:launch>50`: only when
  it claims more than 50% of the headline's denominator).
- facts: numbers the label's independent read found, each read from the JSON at a path (see `resolve`).
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.conftest import REAL
from tests.realkit import Analyzed

HERE = Path(__file__).resolve().parent
LABELS_TOML = HERE / "labels.toml"
MISSES_TOML = HERE / "label_misses.toml"
LABELS_MD = REAL / "LABELS.md"
SECTION = "## Real-world traces (expert labels)"
CHECKS = ("class", "fix", "facts")
CLASSES = ("compute", "memory", "io", "launch", "communication", "mixed", "none", "latency", "not_applicable",
           "not_analysable")
SCORED = ("high", "medium")
NO_VERDICT = ("unknown", "cannot_judge", "cannot judge", "not_applicable")
UNITS = {"": 1.0, "count": 1.0, "ns": 1.0, "us": 1e3, "ms": 1e6, "s": 1e9}


@dataclass(frozen=True)
class Accept:
    """A verdict that would also be judged correct, with its conditions."""

    class_: str
    classes: tuple[str, ...] = ()
    cause: str = ""  # regex the verdict's cause must match
    not_cause: str = ""  # regex it must not match
    share_min: tuple[tuple[str, float], ...] = ()  # verdict share name -> minimum pct
    note: str = ""


@dataclass(frozen=True)
class Fact:
    name: str
    json: tuple[str, ...]  # paths into the document (plus "rc"); several are summed
    value: float | None = None
    lo: float | None = None
    hi: float | None = None
    unit: str = ""
    tol: float = 0.0
    of: str = ""  # a path: the value is reported as a percentage of it
    agg: str = "sum"  # sum | min | max over the elements a path selects
    contains: str = ""  # for text: the value must contain this
    equals: str = ""  # for text: the value must equal this
    note: str = ""


@dataclass(frozen=True)
class Label:
    path: str
    expected: str
    confidence: str
    classes: tuple[str, ...] = ()
    acceptable: tuple[Accept, ...] = ()
    false_fixes: tuple[str, ...] = ()
    forbidden_classes: tuple[str, ...] = ()
    first_fix: tuple[str, ...] = ()
    facts: tuple[Fact, ...] = ()
    unchecked: tuple[str, ...] = ()
    note: str = ""

    @property
    def class_checked(self) -> bool:
        """The test holds the class where the expert's confidence is high or medium."""
        return self.confidence in SCORED

    @property
    def scored(self) -> bool:
        """Counts toward the 'class hits out of 40' goal: high/medium and a class can be derived."""
        return self.class_checked and self.expected != "not_analysable"

    @property
    def expected_text(self) -> str:
        return f"mixed: {' + '.join(self.classes)}" if self.expected == "mixed" else self.expected


def _accept(d: dict[str, Any]) -> Accept:
    return Accept(d["class"], tuple(d.get("classes", ())), d.get("cause", ""), d.get("not_cause", ""),
                  tuple(sorted(d.get("share_min", {}).items())), d.get("note", ""))


def _fact(d: dict[str, Any]) -> Fact:
    paths = d["json"] if isinstance(d["json"], list) else [d["json"]]
    return Fact(d["name"], tuple(paths), d.get("value"), d.get("min"), d.get("max"), d.get("unit", ""),
                float(d.get("tol", 0.0)), d.get("of", ""), d.get("agg", "sum"), d.get("contains", ""),
                d.get("equals", ""), d.get("note", ""))


def labels() -> list[Label]:
    """Every label of labels.toml, in file order (the order of LABELS.md)."""
    out = []
    for d in tomllib.loads(LABELS_TOML.read_text())["label"]:
        out.append(Label(
            d["path"], d["expected"], d["confidence"], tuple(d.get("classes", ())),
            tuple(_accept(a) for a in d.get("acceptable", ())), tuple(d.get("false_fixes", ())),
            tuple(d.get("forbidden_classes", ())), tuple(d.get("first_fix", ())),
            tuple(_fact(f) for f in d.get("facts", ())), tuple(d.get("unchecked", ())), d.get("note", ""),
        ))
    return out


def misses() -> dict[str, dict[str, Any]]:
    """path -> {checks: [...], facts: [...], reason: str} from label_misses.toml."""
    return {str(k): dict(v) for k, v in tomllib.loads(MISSES_TOML.read_text()).items()}


# --- the advisor's side ---------------------------------------------------------------------------------


def verdict(a: Analyzed) -> dict[str, Any]:
    v = a.doc.get("verdict") if a.rc == 0 else None
    return v if isinstance(v, dict) else {}


def observed(a: Analyzed) -> tuple[str, tuple[str, ...]]:
    """The verdict class in the labels' vocabulary, with the classes a `mixed` verdict names."""
    if a.rc == 2:
        return "not_analysable", ()
    v = verdict(a)
    cls = str(v.get("class") or "unknown")
    if cls in NO_VERDICT:
        return "not_applicable", ()
    return cls, tuple(sorted(v.get("classes") or ()))


def _share(v: dict[str, Any], name: str) -> float:
    return sum(float(s["pct"]) for s in v.get("shares", ()) if s.get("name") == name)


def accepts(acc: Accept, a: Analyzed) -> bool:
    cls, classes = observed(a)
    if cls != acc.class_ or (acc.classes and classes != tuple(sorted(acc.classes))):
        return False
    cause = str(verdict(a).get("cause") or "")
    if acc.cause and not re.search(acc.cause, cause, re.I):
        return False
    if acc.not_cause and re.search(acc.not_cause, cause, re.I):
        return False
    return all(_share(verdict(a), name) >= pct for name, pct in acc.share_min)


def class_hit(label: Label, a: Analyzed) -> bool:
    cls, classes = observed(a)
    if cls == label.expected and (cls != "mixed" or classes == tuple(sorted(label.classes))):
        return True
    return any(accepts(acc, a) for acc in label.acceptable)


def top_finding(a: Analyzed) -> dict[str, Any] | None:
    f = a.doc.get("findings") if a.rc == 0 else None
    return f[0] if f else None


def _evidence(f: dict[str, Any], name: str) -> Any:
    return next((e["value"] for e in f.get("evidence", ()) if e.get("name") == name), None)


def matches(token: str, f: dict[str, Any]) -> bool:
    """Whether finding `f` is the false fix `token` (CODE, CODE:cause, CODE:cause>pct, CODE>pct)."""
    m = re.fullmatch(r"([A-Z]{2}\d{3})(?::(\w+))?(?:>([\d.]+))?", token)
    if not m:
        raise ValueError(f"bad false-fix token {token!r}")
    code, cause, floor = m.groups()
    if f.get("code") != code:
        return False
    if cause and _evidence(f, "top_cause") != cause:
        return False
    return not floor or float(f.get("gain_pct") or 0) > float(floor)


def fix_problem(label: Label, a: Analyzed) -> str:
    """Why the top of the output is a false fix ('' when it is not)."""
    cls, _ = observed(a)
    if cls in label.forbidden_classes:
        return f"verdict class {cls} is a known false verdict"
    top = top_finding(a)
    if top is None:
        return "no finding, but the label names the first fix" if label.first_fix else ""
    bad = [t for t in label.false_fixes if matches(t, top)]
    if bad:
        return f"top finding {describe(top)} is the known false fix {bad[0]}"
    if label.first_fix and not any(matches(t, top) for t in label.first_fix):
        return f"top finding {describe(top)} is not the first fix the label names ({', '.join(label.first_fix)})"
    return ""


def describe(f: dict[str, Any] | None) -> str:
    if f is None:
        return "(none)"
    cause = _evidence(f, "top_cause")
    return f"{f['code']}{':' + str(cause) if cause and f['code'] == 'ID001' else ''} {f.get('gain_pct', 0)}%"


# --- facts ----------------------------------------------------------------------------------------------


def _split(path: str) -> list[str]:
    """'time[device_id=0].busy' -> ['time[device_id=0]', 'busy'] (dots inside brackets kept)."""
    parts, depth, cur = [], 0, ""
    for ch in path:
        depth += (ch == "[") - (ch == "]")
        if ch == "." and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    return [*parts, cur]


def _select(items: list[Any], sel: str) -> list[Any]:
    if sel == "*":
        return list(items)
    if sel.isdigit():
        return [items[int(sel)]]
    out = list(items)
    for cond in sel.split("&"):  # every condition must hold: `copy_kind=HtoD&src_kind=pageable`
        key, op, want = re.fullmatch(r"(\w+)(~|=)(.*)", cond).groups()  # type: ignore[union-attr]
        out = [x for x in out if (want in str(x.get(key)) if op == "~" else str(x.get(key)) == want)]
    return out


def resolve(doc: Any, path: str) -> list[Any]:
    """Every value `path` reaches: keys joined by dots; `key[sel]` picks list elements by index, by
    `field=value`, by `field~substring` (several joined by `&` must all hold) or all with `*` (later keys
    apply to each element)."""
    nodes = [doc]
    for part in _split(path):
        key, _, sel = part.partition("[")
        nxt: list[Any] = []
        for n in nodes:
            v = n.get(key) if key and isinstance(n, dict) else (n if not key else None)
            if sel:
                nxt += _select(v or [], sel.rstrip("]"))
            elif v is not None:
                nxt.append(v)
        nodes = nxt
    return nodes


def _number(v: Any, unit: str, pct: bool) -> float:
    if isinstance(v, dict):
        if pct and "of_ns" in v:
            return 100.0 * float(v["ns"]) / float(v["of_ns"]) if v["of_ns"] else 0.0
        v = v["ns"]
    return float(v) / UNITS.get(unit, 1.0)


AGG: dict[str, Callable[[Iterable[float]], float]] = {"sum": sum, "min": min, "max": max}


def fact_value(fact: Fact, doc: dict[str, Any]) -> Any:
    """The fact's value read from `doc` (raises LookupError when a path reaches nothing)."""
    values = [v for p in fact.json for v in resolve(doc, p)]
    if not values:
        raise LookupError(f"{', '.join(fact.json)} reaches nothing")
    if fact.contains or fact.equals:
        return str(values[0])
    nums = [_number(v, fact.unit, fact.unit == "%" and not fact.of) for v in values]
    total = AGG[fact.agg](nums)
    if fact.of:
        base = sum(_number(v, "", False) for v in resolve(doc, fact.of))
        return 100.0 * total * UNITS.get(fact.unit, 1.0) / base if base else 0.0
    return total


def fact_ok(fact: Fact, got: Any) -> bool:
    if fact.contains:
        return fact.contains in got
    if fact.equals:
        return bool(got == fact.equals)
    eps = 1e-9
    if fact.value is not None and abs(got - fact.value) > fact.tol + eps:
        return False
    if fact.lo is not None and got < fact.lo - fact.tol - eps:
        return False
    return not (fact.hi is not None and got > fact.hi + fact.tol + eps)


@dataclass
class FactResult:
    fact: Fact
    got: Any
    ok: bool
    error: str = ""

    def line(self) -> str:
        want = self.fact.value if self.fact.value is not None else (
            self.fact.contains or self.fact.equals or f"{self.fact.lo}..{self.fact.hi}")
        got = f"{self.got:.6g}" if isinstance(self.got, float) else self.got
        return f"{self.fact.name}: label {want} {self.fact.unit}, advisor {self.error or got}".strip()


def check_facts(label: Label, a: Analyzed) -> list[FactResult]:
    doc = {"rc": a.rc, **a.doc}
    out = []
    for f in label.facts:
        try:
            got = fact_value(f, doc)
        except (LookupError, KeyError, TypeError, ValueError) as e:
            out.append(FactResult(f, None, False, f"{type(e).__name__}: {e}"))
            continue
        out.append(FactResult(f, got, fact_ok(f, got)))
    return out


# --- one label, judged ----------------------------------------------------------------------------------


@dataclass
class LabelResult:
    label: Label
    observed: str  # e.g. "launch/medium", "mixed(io+launch)/low", "exit 2"
    top: str
    class_hit: bool
    fix_problem: str
    facts: list[FactResult] = field(default_factory=list)

    @property
    def fix_ok(self) -> bool:
        return not self.fix_problem

    @property
    def facts_ok(self) -> bool:
        return all(f.ok for f in self.facts)

    @property
    def agrees(self) -> bool:
        """Class and first fix both right (the LABELS.md summary's 'agree')."""
        return self.class_hit and self.fix_ok

    def hits(self) -> dict[str, bool]:
        return {"class": self.class_hit, "fix": self.fix_ok, "facts": self.facts_ok}

    def failed_facts(self) -> list[str]:
        return [f.fact.name for f in self.facts if not f.ok]


def observed_text(a: Analyzed) -> str:
    if a.rc != 0:
        return f"exit {a.rc}"
    cls, classes = observed(a)
    v = verdict(a)
    shown = f"mixed({'+'.join(classes)})" if cls == "mixed" else str(v.get("class") or "no verdict")
    return f"{shown}/{v.get('confidence', '-')}" if v else shown


def evaluate(label: Label, a: Analyzed) -> LabelResult:
    return LabelResult(label, observed_text(a), describe(top_finding(a)), class_hit(label, a),
                       fix_problem(label, a), check_facts(label, a))


def input_path(label: Label) -> Path:
    return REAL / label.path


# --- LABELS.md, the human source ------------------------------------------------------------------------

_CLASS_WORD = re.compile(r"\b(not analysable|not applicable|latency-bound|compute|memory|io|launch|communication|"
                         r"mixed|none)\b", re.I)
_WORD = {"not analysable": "not_analysable", "not applicable": "not_applicable", "latency-bound": "latency"}


def class_word(text: str) -> str:
    """The first class word of an 'Expected class' text ('' when there is none)."""
    m = _CLASS_WORD.search(text)
    return _WORD.get(m.group(1).lower(), m.group(1).lower()) if m else ""


def md_sections(text: str) -> dict[str, tuple[str, str]]:
    """path -> (expected class word, confidence) from every `### path` section of LABELS.md."""
    out = {}
    for block in re.split(r"^### ", text, flags=re.M)[1:]:
        path = block.split()[0]
        body = block.split("\n## ")[0]
        exp = re.search(r"^\* \*\*Expected(?: class)?\*\*: (.*)$", body, re.M)
        conf = set(re.findall(r"Confidence: (high|medium|low)", body))
        out[path] = (class_word(exp.group(1)) if exp else "", "/".join(sorted(conf)))
    return out


def md_summary(text: str) -> dict[str, tuple[str, str]]:
    """path -> (expected class word, confidence) from the first table under '## Summary'."""
    summary = text.split("\n## Summary", 1)[1].split("\n## ", 1)[0]
    table = summary.split("| trace | expected class |", 1)[1].split("\n\n", 1)[0]
    out = {}
    for row in table.splitlines():
        cells = [c.strip() for c in row.strip().strip("|").split("|")]
        if len(cells) >= 3 and "/" in cells[0]:
            out[cells[0].split()[0]] = (class_word(cells[1]), cells[2])
    return out


# --- docs/accuracy.md -----------------------------------------------------------------------------------


def _mark(res: LabelResult, check: str, misses: dict[str, dict[str, Any]]) -> str:
    hit = res.hits()[check]
    if check == "class" and not res.label.class_checked:
        return f"({'hit' if hit else 'miss'}, not scored)"
    if hit:
        return "hit" if check == "class" else "yes"
    known = check in misses.get(res.label.path, {}).get("checks", [])
    return ("miss" if check == "class" else "no") + (" (known)" if known else " (NEW)")


def summary_lines(results: list[LabelResult]) -> list[str]:
    scored = [r for r in results if r.label.scored]
    facts = [f for r in results for f in r.facts]
    dirs = sum(input_path(r.label).is_dir() for r in results)
    return [
        f"- labels: {len(results)} ({len(results) - dirs} trace files, {dirs} directory of rank traces); scored for "
        f"the class (confidence high or medium, a class derivable): {len(scored)}",
        f"- class hits of the scored labels: {sum(r.class_hit for r in scored)}/{len(scored)} (goal: 36)",
        f"- agree on class and first fix (class hit and no false fix, all labels): "
        f"{sum(r.agrees for r in results)}/{len(results)}",
        f"- no known false fix first: {sum(r.fix_ok for r in results)}/{len(results)}",
        f"- label facts read from the JSON and exact: {sum(f.ok for f in facts)}/{len(facts)} "
        f"(facts the JSON cannot express yet are listed as `unchecked` in tests/real/labels.toml: "
        f"{sum(len(r.label.unchecked) for r in results)})",
    ]


HEAD = [
    SECTION,
    "",
    "<!-- Generated by scripts/gen_accuracy.py from tests/real/labels.toml (LABELS.md of the shared real traces, as",
    "     data), tests/real/label_misses.toml and the advisor's own output; do not edit. tests/real/test_labels.py",
    "     fails when this section is stale. -->",
    "",
    "After changing the diagnosis, rerun `python scripts/gen_accuracy.py --only real` (this section; without",
    "`--only` the whole file) and update `tests/real/label_misses.toml`; `python scripts/label_table.py` prints the",
    "same judgement as a quick table.",
    "",
    "Expert labels for traces other people captured (`../shared/fixtures/real/LABELS.md`: expected class, the",
    "deciding numbers, known false fixes), judged against `advisor analyze --format json` (definitions in",
    "`tests/real/labelkit.py`):",
    "",
    "- **class**: the verdict class (exit 2 = `not_analysable`, no verdict or `unknown` = `not_applicable`) equals the",
    "  expected class (for `mixed`, with the same classes) or is one of the label's acceptable verdicts, whose",
    "  conditions (what the cause must name, a minimum share) are data. Scored where the expert's confidence is",
    "  high or medium and a class can be derived (40 labels); low-confidence labels are shown, not scored.",
    "- **no false fix**: the top finding is none of the label's known false fixes (rule codes, `ID001:<idle cause>`),",
    "  the verdict is none of its false classes, and where the label demands a first fix, the top finding is it.",
    "- **facts**: the label's independently measured numbers that the JSON expresses, each exact within the",
    "  label's rounding.",
    "- A miss listed in `tests/real/label_misses.toml` shows as `(known)`; the reasons are below.",
    "",
]


def render(results: list[LabelResult], misses: dict[str, dict[str, Any]]) -> str:
    """The 'Real-world traces' section of docs/accuracy.md."""
    lines = [*HEAD, "### Summary", "", *summary_lines(results), "", "### Labels", "",
             "| trace | expected class | confidence | advisor verdict | top finding | class | no false fix | facts |",
             "|---|---|---|---|---|---|---|---|"]
    for r in results:
        lab = r.label
        lines.append(
            f"| {lab.path} | {lab.expected_text} | {lab.confidence} | {r.observed} | {r.top} "
            f"| {_mark(r, 'class', misses)} | {_mark(r, 'fix', misses)} "
            f"| {sum(f.ok for f in r.facts)}/{len(r.facts)} |"
        )
    lines += ["", "### Remaining disagreements", ""]
    for r in results:
        miss = misses.get(r.label.path)
        if miss:
            why = f" ({r.fix_problem})" if "fix" in miss["checks"] and r.fix_problem else ""
            lines.append(f"- **{r.label.path}** ({', '.join(miss['checks'])}){why}: {' '.join(miss['reason'].split())}")
    return "\n".join(lines) + "\n"
