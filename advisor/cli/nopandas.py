"""Keep pandas out of a CLI command that never uses it: pyarrow and DuckDB only probe for it.

Why: pyarrow (26) imports pandas on the first `pa.array(...)` of a process, only to ask whether the
values are pandas objects, and DuckDB's client does the same when it binds parameters. Loading
pandas costs ~0.2-0.7 s of a 3 MB trace's cold `advisor analyze` (about a fifth of it), for objects
the command never has. While a command that declares `NO_PANDAS = True` runs, `import pandas`
raises ModuleNotFoundError; both libraries treat that as "no pandas objects here" and go on.

Afterwards the finder is gone and pandas imports as usual: pyarrow retries the import when a
conversion needs it (`to_pandas`), so a library caller is never affected. Where pandas is already
loaded (a notebook) nothing is blocked.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from importlib.machinery import ModuleSpec
from types import ModuleType


class _RefusePandas:
    """A meta-path finder that refuses `pandas` and its submodules."""

    def find_spec(
        self, name: str, path: Sequence[str] | None = None, target: ModuleType | None = None
    ) -> ModuleSpec | None:
        if name == "pandas" or name.startswith("pandas."):
            raise ModuleNotFoundError("pandas is not loaded while this advisor command runs", name=name)
        return None


@contextmanager
def without_pandas(active: bool = True) -> Iterator[None]:
    """Refuse `import pandas` inside the block (when `active` and pandas is not loaded yet)."""
    if not active or "pandas" in sys.modules:
        yield
        return
    finder = _RefusePandas()
    sys.meta_path.insert(0, finder)
    try:
        yield
    finally:
        sys.meta_path.remove(finder)
