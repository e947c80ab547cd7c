"""advisor: why a GPU/AI run is slow and what to change first.

Public API (the surfaces use only this): `open_run` ingests a trace into the normalized model and
returns a `Run`; `advisor.engine.summary.summarize` and the rule engine read it.
Importing this package loads no UI library (tested).
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
    from advisor.ingest import open_run

__all__ = ["DISTRIBUTION", "INSTALL_HINT", "AdvisorError", "InputError", "open_run", "__version__"]


def __getattr__(name: str) -> Any:
    """`advisor.open_run` on first use: importing the package (the CLI does) stays cheap."""
    if name == "open_run":
        from advisor.ingest import open_run

        return open_run
    raise AttributeError(f"module 'advisor' has no attribute {name!r}")
