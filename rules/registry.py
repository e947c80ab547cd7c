"""Find every rule by walking rules/<category>/ (one rule per file named <CODE>_<name>.py).

Discovery is a package walk, not a hand-kept list, so adding a rule is adding a file; the tests
check that the file name, code, category folder and docstring agree.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
from functools import cache
from types import ModuleType

from advisor.errors import InputError
from advisor.rules.base import CATEGORIES, Rule

_ROOT = "advisor.rules"


def _category_packages() -> list[ModuleType]:
    root = importlib.import_module(_ROOT)
    found = []
    for info in pkgutil.iter_modules(root.__path__):
        if info.ispkg and info.name in CATEGORIES:
            found.append(importlib.import_module(f"{_ROOT}.{info.name}"))
    return found


def _rules_in(module: ModuleType) -> list[type[Rule]]:
    return [
        obj
        for _, obj in inspect.getmembers(module, inspect.isclass)
        if issubclass(obj, Rule) and obj is not Rule and obj.__module__ == module.__name__
    ]


@cache
def all_rules() -> tuple[type[Rule], ...]:
    """Every rule class, sorted by code. A module must hold exactly one rule."""
    rules: list[type[Rule]] = []
    for pkg in _category_packages():
        for info in pkgutil.iter_modules(pkg.__path__):
            module = importlib.import_module(f"{pkg.__name__}.{info.name}")
            found = _rules_in(module)
            if len(found) != 1:
                raise RuntimeError(f"{module.__name__} must define exactly one Rule, found {len(found)}")
            rules.append(found[0])
    codes = [r.code for r in rules]
    dupes = {c for c in codes if codes.count(c) > 1}
    if dupes:
        raise RuntimeError(f"duplicate rule codes {sorted(dupes)}")
    return tuple(sorted(rules, key=lambda r: r.code))


def get_rule(code: str) -> type[Rule]:
    """The rule with `code` (case-insensitive), or InputError listing what exists."""
    for rule in all_rules():
        if rule.code == code.upper():
            return rule
    known = ", ".join(r.code for r in all_rules())
    raise InputError(f"unknown rule code {code!r}", f"known rules: {known}")


def select_rules(select: set[str] | None) -> list[type[Rule]]:
    """Rules matching `select`: codes (IO001), code prefixes (IO), categories (io) or names; all when None."""
    rules = list(all_rules())
    if not select:
        return rules
    chosen: list[type[Rule]] = []
    for token in select:
        t = token.strip()
        hit = [r for r in rules if r.code.startswith(t.upper()) or r.category == t.lower() or r.name == t.lower()]
        if not hit:
            raise InputError(
                f"--select {t!r} matches no rule",
                "give a rule code (IO001), a code prefix (IO), a category (io) or a rule name",
            )
        chosen.extend(h for h in hit if h not in chosen)
    return sorted(chosen, key=lambda r: r.code)
