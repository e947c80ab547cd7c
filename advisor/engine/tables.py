"""A model table or named metric of an analysed run, for notebooks: Arrow, pandas or polars.

The rows are read from the run's cache entry (the run is opened, read and closed again), so an
`Analysis` holds no open connection between cells.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from advisor import metrics
from advisor.errors import InputError
from advisor.model.schema import TABLES
from advisor.model.store import Run
from advisor.parsers.base import ParseOptions

if TYPE_CHECKING:
    from advisor.engine.result import Analysis


@dataclass(frozen=True)
class Table:
    """Rows of one model table or metric; `to_pandas()`/`to_polars()` need those optional libraries."""

    name: str
    arrow: pa.Table

    def __len__(self) -> int:
        return int(self.arrow.num_rows)

    def to_arrow(self) -> pa.Table:
        return self.arrow

    def to_pandas(self) -> Any:
        _need("pandas")
        return self.arrow.to_pandas()

    def to_polars(self) -> Any:
        pl = _need("polars")
        return pl.from_arrow(self.arrow)


def _need(module: str) -> Any:
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError:
        raise InputError(f"{module} is not installed", f"pip install {module} (or use .to_arrow())") from None


def table_names() -> tuple[str, ...]:
    """Every name `table()` accepts: the model's tables, then the named metrics."""
    return tuple(TABLES) + metrics.names()


def rows(run: Run, name: str, **params: Any) -> pa.Table:
    """A model table as stored, or a metric's rows (`params`: the metric's named parameters)."""
    if name in TABLES:
        return run.table_arrow(name)
    if name not in metrics.names():
        raise InputError(f"no table or metric named {name!r}", f"one of: {', '.join(table_names())}")
    return pa.Table.from_pylist(metrics.query(run, name, **params))


def read_table(a: Analysis, name: str, **params: Any) -> Table:
    from advisor.engine.runs import with_run

    if a.opened_as is None:
        raise InputError("this analysis was not opened from a path", "use advisor.analyze(PATH)")
    return Table(name, with_run(a.opened_as, lambda run: rows(run, name, **params), ParseOptions(nsys=a.nsys)))
