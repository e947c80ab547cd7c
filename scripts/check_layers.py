#!/usr/bin/env python3
"""Check the layer contracts in pyproject.toml ([tool.advisor.layers]) over every module's imports.

Data flows one way (../shared/STYLE.md): a module may import only layers listed below its own,
the core never imports a UI library, and the surfaces (CLI, TUI, reports) import of the core only
its one door, `advisor.api`. Prints each violation as `module -> imported (why)`;
exits 1 when there is any. Works on source files, so it sees parsers/, rules/ and reports/ under
the names they install as (advisor.parsers, ...).
"""

from __future__ import annotations

import ast
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SOURCES = {"advisor": ROOT / "advisor", "advisor.parsers": ROOT / "parsers",
           "advisor.rules": ROOT / "rules", "advisor.reports": ROOT / "reports"}


def modules() -> dict[str, Path]:
    out: dict[str, Path] = {}
    for prefix, folder in SOURCES.items():
        for f in folder.rglob("*.py"):
            rel = f.relative_to(folder).with_suffix("")
            parts = [p for p in rel.parts if p != "__init__"]
            out[".".join([prefix, *parts])] = f
    return out


def imports(name: str, path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    found: set[str] = set()
    pkg = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = pkg.split(".")
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join(anchor + ([base] if base else []))
            found.add(base)
            found.update(f"{base}.{a.name}" for a in node.names)
    return found


def layer_of(module: str, order: list[str]) -> int | None:
    for i, layer in enumerate(order):
        if module == layer or module.startswith(layer + "."):
            return i
    return None


def within(module: str, layers: list[str]) -> bool:
    return any(module == c or module.startswith(c + ".") for c in layers)


def check() -> list[str]:
    cfg = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["advisor"]["layers"]
    order: list[str] = cfg["order"]
    problems = []
    for name, path in sorted(modules().items()):
        mine = layer_of(name, order)
        in_core, surface = within(name, cfg["core"]), within(name, cfg["surfaces"])
        for imp in sorted(imports(name, path)):
            top = imp.split(".")[0]
            if in_core and top in cfg["core_forbidden"]:
                problems.append(f"{name} -> {imp} (the core must not import UI library {top})")
            if surface and within(imp, cfg["core"]) and not within(imp, [cfg["door"]]):
                problems.append(f"{name} -> {imp} (a surface imports the core only through {cfg['door']})")
            theirs = layer_of(imp, order)
            if mine is not None and theirs is not None and theirs < mine:
                problems.append(f"{name} -> {imp} ({order[mine]} may not import the higher layer {order[theirs]})")
    return problems


if __name__ == "__main__":
    found = check()
    for p in found:
        print(p)
    print(f"layer contracts: {len(modules())} modules checked, {len(found)} violations")
    sys.exit(1 if found else 0)
