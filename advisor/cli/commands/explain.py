"""`advisor explain CODE`: a rule's documentation (what, why, signature, fix, risk, false positives, options)."""

from __future__ import annotations

import argparse

from advisor.cli.output import emit

NAME = "explain"
HELP = "explain a rule: what it detects, why it costs time and how to fix it"
EXAMPLES = ["advisor explain IO001", "advisor explain pageable-memcpy"]


def register(p: argparse.ArgumentParser) -> None:
    p.add_argument("code", help="rule code (e.g. IO001) or name (e.g. pageable-memcpy)")


def run(args: argparse.Namespace) -> int:
    from advisor.api import explain, list_rules

    by_name = {i.name: i.code for i in list_rules()}
    code = by_name.get(args.code.strip().lower(), args.code)  # a rule name (pageable-memcpy) names its code
    emit(explain(code).rstrip() + "\n", None)
    return 0
