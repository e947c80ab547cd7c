"""What the surfaces show about rules: `list_rules()` for `advisor rules`, `explain(code)` for
`advisor explain CODE`, and `markdown(rule)` for docs/rules/<CODE>.md (scripts/gen_rule_docs.py).

All three are built from the rule class itself (metadata + docstring), so they cannot drift.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from advisor.rules.base import HEADINGS, Option, Rule
from advisor.rules.registry import all_rules, get_rule
from advisor.vocab import json_row

REPO_ROOT = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class RuleInfo:
    """A rule's metadata, as plain data for listings and JSON."""

    code: str
    name: str
    category: str
    chapter: tuple[int, ...]
    status: str
    summary: str
    requires: tuple[str, ...]
    options: dict[str, Option]
    reference_workload: str | None

    def to_dict(self) -> dict[str, Any]:
        d = json_row(self)  # the fields in order; each option as its declaration
        d["options"] = {k: {"default": o.default, "type": o.type.__name__, "help": o.help, "source": o.source}
                        for k, o in self.options.items()}
        return d


def reference_dir(rule: type[Rule]) -> str | None:
    """The rule's reference pair relative to the repo, when there is one: reference_workloads/<CODE>_<name>/
    (the rule's name with underscores) if it exists, else the first folder named <CODE>_* (a pair's
    folder may name the anti-pattern in other words than the rule, e.g. CO002_straggler_rank)."""
    rel = f"reference_workloads/{rule.code}_{rule.name.replace('-', '_')}"
    if (REPO_ROOT / rel).is_dir():
        return rel
    root = REPO_ROOT / "reference_workloads"
    found = sorted(d.name for d in root.glob(f"{rule.code}_*") if d.is_dir()) if root.is_dir() else []
    return f"reference_workloads/{found[0]}" if found else None


def info(rule: type[Rule]) -> RuleInfo:
    return RuleInfo(
        code=rule.code,
        name=rule.name,
        category=rule.category,
        chapter=rule.chapter,
        status=rule.status,
        summary=rule.summary(),
        requires=tuple(sorted(rule.requires)),
        options=dict(rule.options),
        reference_workload=reference_dir(rule),
    )


def list_rules() -> list[RuleInfo]:
    """Every rule, sorted by code."""
    return [info(r) for r in all_rules()]


def sections(rule: type[Rule]) -> dict[str, str]:
    """The docstring's `## Heading` sections (heading -> body text)."""
    doc = inspect.cleandoc(rule.__doc__ or "")
    out: dict[str, str] = {}
    current: str | None = None
    lines: list[str] = []
    for line in doc.splitlines()[1:]:
        if line.startswith("## "):
            if current:
                out[current] = "\n".join(lines).strip()
            current, lines = line[3:].strip(), []
        elif current:
            lines.append(line)
    if current:
        out[current] = "\n".join(lines).strip()
    return out


def _options_table(rule: type[Rule]) -> str:
    if not rule.options:
        return "This rule has no options."
    rows = ["| option | default | meaning | default from |", "|---|---|---|---|"]
    for name, o in rule.options.items():
        rows.append(f"| `{name}` | `{o.default}` | {o.help} | {o.source or '-'} |")
    return "\n".join(rows)


def markdown(rule: type[Rule]) -> str:
    """The rule's page: heading, metadata, the docstring sections in order, the options table."""
    meta = info(rule)
    chapters = ", ".join(str(c) for c in rule.chapter)
    parts = [
        f"# {rule.code} {rule.name}",
        "",
        f"{meta.summary}",
        "",
        f"- category: `{rule.category}`; status: `{rule.status}`; book chapter(s): {chapters}",
        f"- requires: {', '.join(f'`{t}`' for t in meta.requires) or 'nothing'}",
    ]
    if meta.reference_workload:
        parts.append(f"- reference workload: `{meta.reference_workload}/`")
    body = sections(rule)
    for heading in HEADINGS:
        parts += ["", f"## {heading}", "", body.get(heading, "(missing)")]
    parts += ["", "### Option defaults", "", _options_table(rule), ""]
    return "\n".join(parts)


def explain(code: str) -> str:
    """Text for `advisor explain CODE` (InputError for an unknown code)."""
    return markdown(get_rule(code))
