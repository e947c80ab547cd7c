"""Nothing leaked or injected: planted secrets never shown, hostile trace text inert, on every surface.

The traces are copies of real fixtures with a secret planted where real captures keep environment
dumps: an nsys export's TARGET_INFO_SYSTEM_ENV, and a Kineto trace's top-level metadata,
distributedInfo and one event's args. Every command (analyze text/json/md, report, diff in all
formats, the TUI's screens) must run and never print the planted value.
"""

from __future__ import annotations

import gzip
import json
import shutil
import sqlite3
from pathlib import Path
from typing import Any

from tests.conftest import real_path
from tests.reliability.conftest import copy_real
from tests.reliability.surfaces import COVERED, all_outputs, trace_commands

SECRET = "hf_plantedSECRET123"
NSYS = "nsys-ai/mock_rtx3080_wsl2.sqlite"
KINETO = "hta/with_gpu_user_annotation__step_based_trace_2543932.json.gz"
OTHER = "hta/critical_path__cuda_event_sync__event_sync_trace.json.gz"

# Markup and template syntax of every renderer advisor has: Rich/Textual, Jinja, HTML, Markdown, ANSI.
HOSTILE = [
    "[bold red]RICHMARK[/bold red]",
    "[link=https://evil.invalid]RICHLINK[/link]",
    '{{ "TEMPLATE" ~ "EVALUATED" }}',
    "{% for x in range(3) %}JINJALOOP{% endfor %}",
    "<script>alert('XSS')</script>",
    "<img src=x onerror=alert(1)>",
    "](javascript:alert(1)) [mdlink](https://evil.invalid)",
    "\x1b[31mANSIRED\x1b[0m",
    "</script><script>alert(2)</script>",
]


def test_every_command_is_covered() -> None:
    assert trace_commands() <= COVERED, (
        f"new command(s) {sorted(trace_commands() - COVERED)} read traces: add them to tests/reliability/surfaces.py"
    )


def planted_nsys(dest: Path) -> Path:
    p = copy_real(NSYS, dest, "planted.sqlite")
    con = sqlite3.connect(p)
    try:
        (vid, state) = con.execute("SELECT globalVid, devStateName FROM TARGET_INFO_SYSTEM_ENV LIMIT 1").fetchone()
        for name, value in (("HF_TOKEN", SECRET), ("ENV", f"HF_TOKEN={SECRET}"), ("AWS_SECRET_ACCESS_KEY", SECRET)):
            con.execute("INSERT INTO TARGET_INFO_SYSTEM_ENV (globalVid, devStateName, name, nameEnum, value) "
                        "VALUES (?, ?, ?, 9999, ?)", (vid, state, name, value))
        con.commit()
    finally:
        con.close()
    return p


def _kineto_doc() -> dict[str, Any]:
    doc: dict[str, Any] = json.loads(gzip.decompress(real_path(KINETO).read_bytes()))
    return doc


def planted_kineto(dest: Path) -> Path:
    doc = _kineto_doc()
    doc["HF_TOKEN"] = SECRET
    doc["metadata"] = {"env": {"HF_TOKEN": SECRET}, "cmdline": f"HF_TOKEN={SECRET} python train.py"}
    doc["distributedInfo"] = dict(doc.get("distributedInfo") or {}, HF_TOKEN=SECRET)
    for ev in doc["traceEvents"]:
        if ev.get("cat") in ("cpu_op", "kernel"):
            ev.setdefault("args", {})["HF_TOKEN"] = SECRET
            ev["args"]["env"] = f"HF_TOKEN={SECRET}"
    dest.mkdir(parents=True, exist_ok=True)
    p = dest / "planted.json.gz"
    p.write_bytes(gzip.compress(json.dumps(doc).encode()))
    return p


def hostile_kineto(dest: Path) -> Path:
    """Kernel, op, annotation and thread names replaced by markup/template/script text."""
    doc = _kineto_doc()
    i = 0
    for ev in doc["traceEvents"]:
        if ev.get("cat") in ("kernel", "cpu_op", "user_annotation", "gpu_user_annotation", "cuda_runtime") or (
            ev.get("ph") == "M" and ev.get("name") == "thread_name"
        ):
            text = HOSTILE[i % len(HOSTILE)] + f" #{i % 5}"
            if ev.get("ph") == "M":
                ev.setdefault("args", {})["name"] = text
            else:
                ev["name"] = text
            i += 1
    doc["traceName"] = HOSTILE[4]
    dest.mkdir(parents=True, exist_ok=True)
    p = dest / "hostile.json.gz"
    p.write_bytes(gzip.compress(json.dumps(doc).encode()))
    return p


def test_planted_secret_never_shown(tmp_path: Path, isolated_cache: Path) -> None:
    outputs = all_outputs(planted_kineto(tmp_path / "in"), planted_nsys(tmp_path / "in"), tmp_path / "out")
    leaked = [name for name, text in outputs.items() if SECRET in text]
    assert not leaked, f"planted secret shown by: {leaked}"
    assert all(outputs.values())




def test_hostile_text_is_inert(tmp_path: Path, isolated_cache: Path) -> None:
    trace = hostile_kineto(tmp_path / "in")
    other = copy_real(OTHER, tmp_path / "other")
    outputs = all_outputs(trace, other, tmp_path / "out")
    for name, text in outputs.items():
        assert "TEMPLATEEVALUATED" not in text, f"{name}: a Jinja expression from the trace was evaluated"
        assert "JINJALOOPJINJALOOP" not in text, f"{name}: a Jinja loop from the trace was evaluated"
        if "html" not in name:  # a browser shows ESC as nothing; a terminal would obey it
            assert "\x1b[31m" not in text, f"{name}: a terminal escape from the trace reached the output"
        if name.startswith(("analyze-md", "diff-md")):
            assert "<script>" not in text and "<img" not in text, f"{name}: raw HTML from the trace in Markdown"
            assert "[mdlink](" not in text, f"{name}: a Markdown link from the trace is live"
        if "html" in name:
            assert "<script>alert" not in text and "<img src=x" not in text, f"{name}: trace HTML not escaped"
            assert "</script><script>" not in text, f"{name}: trace text broke out of a <script> block"
        if name.endswith("json"):
            json.loads(text)  # JSON is inert by construction: it must still parse
    shown = outputs["analyze-text"] + outputs["tui"]
    assert "RICHMARK" in shown, "the hostile names did not reach the output at all"
    # Rich/Textual markup from the trace is shown as text, not obeyed (an obeyed tag would vanish from the screen)
    for tag in ("[bold red]RICHMARK", "[link=https://evil.invalid]RICHLINK"):
        assert tag in outputs["tui"], f"tui: trace markup {tag!r} was interpreted, not shown"


def test_trace_with_secret_copy_is_not_the_fixture(tmp_path: Path) -> None:
    """The planted copies are made in tmp; the shared fixture stays as it was."""
    src = real_path(NSYS)
    before = src.stat().st_mtime_ns, src.stat().st_size
    planted_nsys(tmp_path)
    assert (src.stat().st_mtime_ns, src.stat().st_size) == before
    shutil.rmtree(tmp_path)
