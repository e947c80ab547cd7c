"""Markdown escapes only what Markdown needs (issue 21), checked with a CommonMark renderer (markdown-it-py).

Why: entities everywhere (`train&#95;step&#95;baseline&#46;pt&#46;trace`, `536&#46;9 MB`) made file names
in code spans unreadable and garbled Slack/Jira pastes. What a renderer shows must be the trace's text,
verbatim, and nothing in it may become markup (emphasis, links, HTML, code, table cells)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from markdown_it import MarkdownIt
from markdown_it.token import Token

from advisor.cli.main import main
from advisor.cli.render_escape import clean, md_cell, md_code

ROOT = Path(__file__).resolve().parents[2]
TRACE = ROOT / "fixtures/kineto/IO001_pageable_memcpy_torch_baseline"
MD = MarkdownIt("commonmark").enable("table")
MARKUP = {"em_open", "strong_open", "link_open", "image", "html_inline", "html_block", "code_inline", "s_open"}

HOSTILE = [
    "train_step_baseline.pt.trace.json.gz", "536.9 MB", "<script>alert(1)</script>", "*bold* and _it_ and __b__",
    "[x](javascript:alert(1))", "![img](http://x/y.png)", "a | b | c", "`code` and ``more``", "~~gone~~",
    "# not a heading", "1. not a list", "- not a list", "> not a quote", "&amp; &#46; &copy;", "back\\slash\\*",
    "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>>(int, float*)",
    "snake_case_name_", "_leading", "<https://autolink.example>", "x<y && y>z", "a\\|b",
]


def _inline(markdown: str) -> list[Token]:
    return [c for t in MD.parse(markdown) if t.type == "inline" for c in (t.children or [])]


def _text(tokens: list[Token]) -> str:
    return "".join(t.content for t in tokens if t.type in ("text", "code_inline"))


@pytest.mark.parametrize("raw", HOSTILE)
@pytest.mark.parametrize("where", ["cell", "paragraph", "list", "heading"])
def test_md_cell_shows_the_text_verbatim_and_inert(raw: str, where: str) -> None:
    cell = md_cell(raw, 200)
    doc = {"cell": f"| h |\n|---|\n| {cell} |\n", "paragraph": f"{cell}\n", "list": f"- base: {cell}\n",
           "heading": f"## {cell}\n"}[where]
    inlines = [t for t in MD.parse(doc) if t.type == "inline"]
    tokens = list(inlines[-1].children or [])  # a cell: the body row's cell, not the header
    assert not [t.type for t in _inline(doc) if t.type in MARKUP], (raw, cell)
    shown = _text(tokens)
    expected = clean(raw, 200) if where != "list" else "base: " + clean(raw, 200)
    assert shown == expected, (raw, cell)
    if where == "cell":
        rows = [t for t in MD.parse(doc) if t.type == "td_open"]
        assert len(rows) == 1, "the text broke the table's cells"


def test_only_what_markdown_needs_is_escaped() -> None:
    assert md_cell("train_step_baseline.pt.trace") == "train_step_baseline.pt.trace"
    assert md_cell("536.9 MB") == "536.9 MB"
    assert "&#" not in "".join(md_cell(h, 200) for h in HOSTILE)


@pytest.mark.parametrize("raw", HOSTILE)
def test_md_code_is_a_verbatim_code_span(raw: str) -> None:
    tokens = _inline(f"file: {md_code(raw, 200)} end\n")
    codes = [t.content for t in tokens if t.type == "code_inline"]
    assert codes == [clean(raw, 200)], (raw, md_code(raw, 200))


def test_real_markdown_renders_names_verbatim(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["analyze", str(TRACE), "--format", "json"]) in (0, 1)
    names = [k["name"] for k in json.loads(capsys.readouterr().out)["runs"][0]["top_kernels"]["items"]]
    assert main(["analyze", str(TRACE), "--format", "md"]) in (0, 1)
    md = capsys.readouterr().out
    assert "&#" not in md
    tokens = MD.parse(md)
    cells = [_text(list(t.children or [])) for i, t in enumerate(tokens) if t.type == "inline"
             and i and tokens[i - 1].type == "td_open"]
    for name in names:
        if len(name) <= 100:
            assert clean(name, 100) in cells, name


def test_diff_markdown_shows_file_names_in_code_spans(capsys: pytest.CaptureFixture[str]) -> None:
    base = ROOT / "fixtures/nsys/IO001_pageable_memcpy_baseline/IO001_pageable_memcpy_baseline.sqlite.gz"
    new = ROOT / "fixtures/nsys/IO001_pageable_memcpy_optimized/IO001_pageable_memcpy_optimized.sqlite.gz"
    main(["diff", str(base), str(new), "--format", "md"])
    md = capsys.readouterr().out
    codes = [t.content for t in _inline(md) if t.type == "code_inline"]
    doc = json.loads(_diff_json(base, new, capsys))
    assert clean(doc["base"]["label"], 150) in codes and clean(doc["new"]["label"], 150) in codes
    assert "&#95;" not in md and "&#46;" not in md


def _diff_json(base: Path, new: Path, capsys: pytest.CaptureFixture[str]) -> str:
    main(["diff", str(base), str(new), "--format", "json"])
    return str(capsys.readouterr().out)
