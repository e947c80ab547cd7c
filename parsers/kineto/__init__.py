"""PyTorch profiler (Kineto) Chrome-trace JSON -> model tables.

Reads one `.json` / `.json.gz` file, or a directory of rank files read as one run. Why it is built
the way it is:

* Speed and bounded memory: users bring 1-10 GB traces. `decode` reads `traceEvents` in ~16 MB
  slices cut at event boundaries (a .gz is inflated as a stream) and msgspec decodes each slice
  into small typed Structs that keep only the fields the model needs; `columns` turns each slice
  into per-category Arrow columns and drops the structs, so memory is O(columns), not O(events as
  Python objects). `tables` then does the cross-category joins (kernel -> launch, flows,
  collectives) over the finished columns, `nesting` the parent/depth of cpu ops and ranges (numpy);
  `merge` assembles a run from rank files, with Python's cyclic collector paused meanwhile.
* Exact times: Kineto writes `ts`/`dur` in microseconds (`displayTimeUnit` is only a display
  hint for chrome://tracing). Floats are split into whole + fraction before scaling so ns
  digits survive; epoch-based traces with ns fractions (which a float64 cannot hold) are decoded
  with Decimal timestamps instead, chosen by sniffing the first megabyte.
* Category names changed over the years (`Kernel` -> `kernel`, `Runtime` -> `cuda_runtime`,
  `Operator` -> `cpu_op`); those mappings live in `mappings/kineto.toml`, not in code.
* Bad input is an InputError / LimitExceeded with one line naming the file and the problem; odd
  values (missing or negative durations, events without a timestamp) are cleaned on purpose and
  counted in `ParsedRun.notes`.
"""

from __future__ import annotations

from advisor.parsers.kineto.mapping import Mappings, mappings
from advisor.parsers.kineto.merge import FORMAT, SUFFIXES, TOOL, convert_file, parse, rank_files

__all__ = ["FORMAT", "SUFFIXES", "TOOL", "Mappings", "convert_file", "mappings", "parse", "rank_files"]
