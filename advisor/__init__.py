"""advisor: why a GPU/AI run is slow and what to change first.

Public API (`advisor.api`, re-exported here): `analyze(path)` returns the typed `Analysis` (verdict,
ranked findings, `to_json()`, `table(name)`), `diff(a, b)` compares two analyses by finding
fingerprint, `open_run` ingests a trace into the normalized model. The CLI, TUI and reports use
only `advisor.api`. Importing this package loads neither the engine nor any UI library (tested).
"""

from __future__ import annotations

__version__ = "0.1.0"
# The distribution's name on PyPI (the command and the import stay `advisor`: PyPI's `advisor` is an
# unrelated hyper-parameter tuner). Every install hint names it.
DISTRIBUTION = "gpu-advisor"
INSTALL_HINT = f"pip install {DISTRIBUTION}"

from typing import TYPE_CHECKING, Any  # noqa: E402

from advisor.errors import AdvisorError, InputError  # noqa: E402

if TYPE_CHECKING:
    from advisor.api import (
        Analysis,
        Cost,
        OpCall,
        Table,
        analyze,
        attention_cost,
        conv_cost,
        diff,
        gemm_cost,
        op_cost,
        open_run,
    )

__all__ = ["DISTRIBUTION", "INSTALL_HINT", "AdvisorError", "Analysis", "Cost", "InputError", "OpCall", "Table",
           "__version__", "analyze", "attention_cost", "conv_cost", "diff", "gemm_cost", "op_cost", "open_run"]

# op_cost and the *_cost models price a shape without a trace (docs/op-models.md)
_FROM_API = ("Analysis", "Cost", "OpCall", "Table", "analyze", "attention_cost", "conv_cost", "diff", "gemm_cost",
             "op_cost", "open_run")


def __getattr__(name: str) -> Any:
    """`advisor.analyze` etc. on first use: importing the package (the CLI does) stays cheap."""
    if name in _FROM_API:
        from advisor import api

        return getattr(api, name)
    raise AttributeError(f"module 'advisor' has no attribute {name!r}")
