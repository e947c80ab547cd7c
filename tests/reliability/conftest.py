"""Shared plumbing for the reliability tests: the corpus script as a module, and hashing helpers."""

from __future__ import annotations

import importlib.util
import shutil
import sys
from pathlib import Path
from types import ModuleType

import pytest

from tests.conftest import REAL, ROOT, real_path


def load_corpus() -> ModuleType:
    """scripts/mutate_corpus.py, imported by path (scripts/ is not a package)."""
    name = "advisor_mutate_corpus"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, ROOT / "scripts" / "mutate_corpus.py")
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    mod.REAL = REAL  # type: ignore[attr-defined]  # the same folder tests.conftest resolved (ADVISOR_REAL_FIXTURES honoured)
    return mod


corpus = load_corpus()


def copy_real(rel: str, dest_dir: Path, name: str | None = None) -> Path:
    """A writable copy of a real fixture (file or directory) under `dest_dir`; the original is never touched."""
    src = real_path(rel)
    dest_dir.mkdir(parents=True, exist_ok=True)
    dest = dest_dir / (name or src.name)
    if src.is_dir():
        shutil.copytree(src, dest)
    else:
        shutil.copyfile(src, dest)
    return dest


def snapshot(paths: list[Path]) -> dict[str, str]:
    """sha256 of every input plus the listing of each input's folder (nothing may appear beside an input)."""
    out: dict[str, str] = {}
    for p in paths:
        out[f"sha:{p}"] = corpus.tree_sha256(p)
        folder = p.parent
        out[f"ls:{folder}"] = "\n".join(sorted(f.name for f in folder.iterdir()))
    return out


@pytest.fixture
def isolated_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    d = tmp_path / "cache"
    d.mkdir()
    monkeypatch.setenv("ADVISOR_CACHE_DIR", str(d))
    return d
