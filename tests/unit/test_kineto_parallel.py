"""A large plain-JSON Kineto file is decoded on several cores (parsers/kineto/parallel.py).

Splitting must never change the result: every table, note and header fact equals the sequential
reader's, whatever the number of spans, on real traces of every flavour (CUDA and ROCm, epoch
timestamps with ns fractions, multi-GPU collectives, flows) and on a synthetic trace full of boundary
look-alikes. Where a cut cannot be trusted, or a worker fails, the file is read sequentially.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest

from advisor.errors import InputError
from advisor.parsers.kineto import parallel
from tests.conftest import real_path
from tests.unit.test_kineto_stream import _doc, _events, _rows

# one of each flavour among the shared real traces
REAL_KINETO = [
    "param/resnet_kineto.json.gz",  # CUDA, python functions, ProfilerStep ranges
    "hta/ns_resolution_trace__rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz",  # epoch ts with ns fractions
    "tracelens/mi300x_qwen1.5-0.5b_inference.json.gz",  # ROCm
    "hta/nccl_parser_config__nccl_data.json.gz",  # NCCL collectives
    "kineto/resnet50_num_workers_0__worker0.1623143566756.pt.trace.json.gz",  # 2021 schema
    "param/dlrm_8rank/worker3_step_12.1694128201557.pt.trace.json.gz",  # one rank of eight
]


def _split(path: Path, n: int, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    monkeypatch.setenv(parallel.PROCESSES_ENV, str(n))
    cuts = parallel.cut_points(path, n)
    assert len(cuts) == n - 1, "the file was not split"
    return _rows(path)


def _sequential(path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    monkeypatch.setenv(parallel.PROCESSES_ENV, "1")
    return _rows(path)


@pytest.mark.parametrize("rel", REAL_KINETO)
def test_real_traces_split_in_three_match(rel: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    plain = tmp_path / "trace.json"
    plain.write_bytes(gzip.decompress(real_path(rel).read_bytes()))
    seq = _sequential(plain, monkeypatch)
    assert sum(len(t) for t in seq["tables"].values()) > 1000
    assert _split(plain, 3, monkeypatch) == seq


def test_synthetic_trace_any_span_count(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Names holding `}, {` and `]`, events whose args or fields do not fit, flows, comms, steps."""
    plain = tmp_path / "t.json"
    plain.write_bytes(_doc(_events(2000)))
    seq = _sequential(plain, monkeypatch)
    assert len(seq["tables"]["kernels"]) == 2000
    assert seq["tables"]["collectives"]
    for n in (2, 5, 8):
        assert _split(plain, n, monkeypatch) == seq, n


def test_cut_inside_args_objects_is_caught(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Arrays of event-like objects inside args: a cut there passes the first check (an object with
    `ph` follows) but not the second (the span before it cannot end there); the result stays right."""
    fake = [{"ph": "X", "cat": "kernel", "ts": k, "dur": 1, "name": "x" * 40} for k in range(400)]
    events = [
        {"ph": "X", "cat": "cpu_op", "name": f"op{i}", "pid": 1, "tid": 1, "ts": 10 * i, "dur": 5, "args": {"l": fake}}
        for i in range(40)
    ]
    plain = tmp_path / "nested.json"
    plain.write_bytes(json.dumps({"traceEvents": events}).encode())
    seq = _sequential(plain, monkeypatch)
    assert len(seq["tables"]["cpu_ops"]) == 40
    monkeypatch.setenv(parallel.PROCESSES_ENV, "4")
    assert parallel.cut_points(plain, 4), "the cuts land inside args, where the first check is fooled"
    assert _rows(plain) == seq


def test_failed_worker_falls_back(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    plain = tmp_path / "t.json"
    plain.write_bytes(_doc(_events(500)))
    seq = _sequential(plain, monkeypatch)
    monkeypatch.setattr(parallel, "WORKER_MODULE", "advisor.parsers.kineto.no_such_module")
    assert _split(plain, 3, monkeypatch) == seq


def test_gzip_is_not_split(tmp_path: Path) -> None:
    gz = tmp_path / "t.json.gz"
    gz.write_bytes(gzip.compress(_doc(_events(500))))
    assert parallel.cut_points(gz, 4) == []


def test_broken_file_gives_the_sequential_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    text = _doc(_events(500))
    cut = tmp_path / "cut.json"
    cut.write_bytes(text[: len(text) - 200])  # truncated inside the last events
    monkeypatch.setenv(parallel.PROCESSES_ENV, "1")
    with pytest.raises(InputError) as seq:
        _rows(cut)
    monkeypatch.setenv(parallel.PROCESSES_ENV, "3")
    assert parallel.cut_points(cut, 3)
    with pytest.raises(InputError) as split:
        _rows(cut)
    assert str(split.value) == str(seq.value)


def test_processes_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(parallel.PROCESSES_ENV, raising=False)
    assert parallel.processes(parallel.MIN_SPAN_BYTES - 1) == 1  # small files: never split
    assert 1 <= parallel.processes(100 * parallel.MIN_SPAN_BYTES) <= parallel.MAX_PROCESSES
    monkeypatch.setenv(parallel.PROCESSES_ENV, "lots")
    with pytest.raises(InputError, match=parallel.PROCESSES_ENV):
        parallel.processes(1 << 30)
