"""The Kineto reader decodes `traceEvents` in slices cut at event boundaries (parsers/kineto/decode.py).

Cutting must never change the result: the same trace read in tiny slices, in one slice, from a
.gz stream, or through the whole-file fallback gives identical tables. Boundary look-alikes inside
strings (`}, {` in a name, `]` in the last event) must not fool the cutter.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import advisor.parsers.kineto.decode as decode
from advisor.errors import InputError
from advisor.parsers.base import ParseOptions
from advisor.parsers.kineto import parse


def _events(n: int) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = [{"ph": "M", "name": "process_name", "pid": 1, "args": {"name": "python"}}]
    for i in range(n):
        ts = 1000.5 + 10 * i
        out.append(
            {
                "ph": "X",
                "cat": "cpu_op",
                "name": f"aten::op}}, {{{i % 3}]",
                "pid": 1,
                "tid": 2,
                "ts": ts,
                "dur": 8,
                "args": {"External id": i, "Input Dims": [[2, 3], []], "Input type": ["float", ""]},
            }
        )
        out.append(
            {
                "ph": "X",
                "cat": "cuda_runtime",
                "name": "cudaLaunchKernel",
                "pid": 1,
                "tid": 2,
                "ts": ts + 1,
                "dur": 2,
                "args": {"correlation": i, "External id": i},
            }
        )
        kernel: dict[str, Any] = {
            "ph": "X",
            "cat": "kernel",
            "name": "ncclKernel_AllReduce" if i % 7 == 0 else "gemm",
            "pid": 0,
            "tid": 7,
            "ts": ts + 3,
            "dur": 4,
            "args": {"device": 0, "stream": 7, "grid": [1, 2, 3], "block": [4, 1, 1]},
        }
        if i % 5:
            kernel["args"]["correlation"] = i
        else:  # no correlation in args: taken from the flow end at the same position
            out.append({"ph": "f", "id": i, "pid": 0, "tid": 7, "ts": ts + 3, "cat": "ac2g", "name": "ac2g"})
        out.append(kernel)
        if i % 4 == 0:
            out.append(
                {
                    "ph": "X",
                    "cat": "cpu_op",
                    "name": f"ProfilerStep#{i}",
                    "pid": 1,
                    "tid": 2,
                    "ts": ts - 0.5,
                    "dur": 9.5,
                }
            )
            out.append(
                {
                    "ph": "X",
                    "cat": "cpu_op",
                    "name": "record_param_comms",
                    "pid": 1,
                    "tid": 2,
                    "ts": ts + 0.25,
                    "dur": -1,
                    "args": {"External id": i, "Collective name": "allreduce", "dtype": "Float", "In msg nelems": 10},
                }
            )
    # type surprises mid-file: args that do not fit (kept without args), a pid that does not (dropped)
    out.insert(
        len(out) // 2,
        {
            "ph": "X",
            "cat": "gpu_memcpy",
            "name": "Memcpy HtoD (Pageable -> Device)",
            "pid": 0,
            "tid": 7,
            "ts": 1.0,
            "dur": 1,
            "args": {"bytes": "lots"},
        },
    )
    out.insert(len(out) // 3, {"ph": "X", "cat": "cpu_op", "name": "odd", "pid": 1.5, "tid": 2, "ts": 1.0})
    out.append({"ph": "X", "cat": "cpu_op", "name": "last ] one", "pid": 1, "tid": 2, "ts": 5.0})
    return out


def _doc(events: list[dict[str, Any]]) -> bytes:
    head = {"schemaVersion": 1, "deviceProperties": [{"id": 0, "name": "NVIDIA X", "numSms": 4}]}
    tail = {"traceName": "x", "displayTimeUnit": "ms", "baseTimeNanoseconds": 1_700_000_000_000_000_000}
    return json.dumps({**head, "traceEvents": events, **tail}, indent=1).encode()


def _rows(path: Path) -> dict[str, Any]:
    run = parse(path, ParseOptions())
    return {
        "tables": {k: t.to_pylist() for k, t in run.tables.items()},
        "notes": [(k, v) for k, v in run.notes.items() if k != "files"],
        "captured": run.captured,
        "run": run.run,
    }


@pytest.fixture
def trace(tmp_path: Path) -> tuple[Path, Path]:
    text = _doc(_events(300))
    plain = tmp_path / "t.json"
    plain.write_bytes(text)
    gz = tmp_path / "t.json.gz"
    gz.write_bytes(gzip.compress(text, mtime=0))
    return plain, gz


def test_slices_do_not_change_tables(trace: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    plain, gz = trace
    whole = _rows(plain)
    assert len(whole["tables"]["kernels"]) == 300
    assert all(k["correlation_id"] is not None for k in whole["tables"]["kernels"])
    assert whole["tables"]["collectives"]
    notes = dict(whole["notes"])
    assert notes["cleaned_events_args_dropped"] == 1
    assert notes["cleaned_events_dropped_bad_fields"] == 1
    for size in (1 << 10, 5000, 1 << 16):
        monkeypatch.setattr(decode, "CHUNK_BYTES", size)
        assert _rows(plain) == whole, size
        assert _rows(gz) == whole, size


def test_fallback_gives_the_same_tables(trace: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    plain, _ = trace
    streamed = _rows(plain)

    def refuse(self: Any, text: bytes) -> Any:
        raise decode.Fallback

    monkeypatch.setattr(decode.EventStream, "_header", refuse)
    assert _rows(plain) == streamed


def test_empty_and_trailing_comma(tmp_path: Path) -> None:
    empty = tmp_path / "empty.json"
    empty.write_bytes(b'{"traceEvents": [ ], "baseTimeNanoseconds": 5}')
    assert parse(empty, ParseOptions()).tables["kernels"].num_rows == 0
    comma = tmp_path / "comma.json"
    comma.write_bytes(b'{"traceEvents": [{"ph": "X", "cat": "kernel", "ts": 1, "dur": 1}, ]}')
    with pytest.raises(InputError, match="invalid or truncated JSON"):
        parse(comma, ParseOptions())


def test_strings_table_is_first_seen_order(trace: tuple[Path, Path]) -> None:
    plain, _ = trace
    strings = parse(plain, ParseOptions()).tables["strings"]
    assert strings["string_id"].to_pylist() == list(range(strings.num_rows))
    assert strings["value"][0] == pa.scalar("cudaLaunchKernel")
