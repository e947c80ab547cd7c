"""advisor: why a GPU/AI run is slow and what to change first.

Public API (the surfaces use only this): `open_run` ingests a trace into the normalized model and
returns a `Run`; `advisor.engine.summary.summarize` and the rule engine read it.
Importing this package loads no UI library (tested).
"""

from __future__ import annotations

__version__ = "0.1.0"

from advisor.errors import AdvisorError, InputError  # noqa: E402
from advisor.ingest import open_run  # noqa: E402

__all__ = ["AdvisorError", "InputError", "open_run", "__version__"]
