"""The example notebook (docs/examples/analyze.ipynb) runs top to bottom on a real capture pair."""

from __future__ import annotations

import json
import sqlite3
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT, real_path

nbclient = pytest.importorskip("nbclient")
nbformat = pytest.importorskip("nbformat")

NOTEBOOK = ROOT / "docs" / "examples" / "analyze.ipynb"


def _kernel_here(tmp: Path) -> str:
    """A kernelspec running this interpreter (the one with this checkout installed), found first on JUPYTER_PATH."""
    spec = tmp / "kernels" / "advisor-test"
    spec.mkdir(parents=True)
    argv = [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"]
    (spec / "kernel.json").write_text(json.dumps({"argv": argv, "display_name": "advisor test", "language": "python"}))
    return "advisor-test"


def test_example_notebook_runs_on_a_real_pair(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    before, after = real_path("nsys-ai/mfu_2gpu_before.sqlite"), real_path("nsys-ai/mfu_2gpu_after.sqlite")
    monkeypatch.setenv("JUPYTER_PATH", str(tmp_path))
    monkeypatch.setenv("ADVISOR_EXAMPLE_TRACE", str(before))
    monkeypatch.setenv("ADVISOR_EXAMPLE_AFTER", str(after))
    nb = nbformat.read(NOTEBOOK, as_version=4)
    client = nbclient.NotebookClient(nb, kernel_name=_kernel_here(tmp_path), timeout=600,
                                     resources={"metadata": {"path": str(tmp_path)}})
    client.execute()
    outputs = {i: "".join(o.get("text", "") or json.dumps(o.get("data", {})) for o in c.get("outputs", []))
               for i, c in enumerate(nb.cells) if c.cell_type == "code"}
    text = "\n".join(outputs.values())
    con = sqlite3.connect(f"file:{before}?mode=ro", uri=True)
    (launches,) = con.execute("SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL").fetchone()
    assert f"{launches} kernel launches" in text  # to_pandas() rows == the capture's kernel records
    assert "advisor-analysis" in outputs[1] and "verdict: " in outputs[1]  # the rich _repr_html_
    assert "do this first" in text or "nothing to do first" in text or "no fix to do first" in text
