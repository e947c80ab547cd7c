"""`advisor rules`: every rule with its code, name, category, book chapter and status."""

from __future__ import annotations

import argparse
import json

from advisor.cli.output import emit

NAME = "rules"
HELP = "list the rules advisor checks"
EXAMPLES = ["advisor rules", "advisor rules --format json"]


def register(p: argparse.ArgumentParser) -> None:
    p.add_argument("--format", choices=("text", "json"), default="text")


def run(args: argparse.Namespace) -> int:
    from advisor.api import list_rules

    infos = list_rules()
    if args.format == "json":
        emit(json.dumps([i.to_dict() for i in infos], indent=2, default=str) + "\n", None)
        return 0
    lines = [f"{'code':<7}{'name':<34}{'category':<15}{'chapter':<12}status  summary"]
    for i in infos:
        chapter = ",".join(str(c) for c in i.chapter)
        lines.append(f"{i.code:<7}{i.name:<34}{i.category:<15}{chapter:<12}{i.status:<8}{i.summary}")
    lines.append("")
    lines.append("`advisor explain CODE` shows what a rule detects, why it costs time, how to fix it and its options.")
    emit("\n".join(lines) + "\n", None)
    return 0
