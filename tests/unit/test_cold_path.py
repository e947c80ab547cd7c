"""The cold `advisor analyze` (nothing cached: parse + analysis) never loads pandas (advisor/cli/nopandas.py).

pyarrow imports pandas on a process's first `pa.array`, DuckDB when it binds parameters, both only to
probe for pandas objects; the CLI has none. The check reads `sys.modules` after a real cold run, and
that pandas still imports (and pyarrow converts to it) once the command is over.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.conftest import real_path

CODE = (
    "import sys, io, contextlib; from advisor.cli.main import main\n"
    "with contextlib.redirect_stdout(io.StringIO()) as out: rc = main(['analyze', sys.argv[1], '--format', 'json'])\n"
    "loaded = sorted(m for m in sys.modules if m.split('.')[0] == 'pandas')[:3]\n"
    "import pyarrow as pa\n"
    "print(rc, loaded, len(out.getvalue()) > 100, pa.array([1, 2]).to_pandas().sum())"
)


def _run(trace: Path, cache: Path) -> str:
    env = dict(os.environ, ADVISOR_CACHE_DIR=str(cache))
    done = subprocess.run([sys.executable, "-c", CODE, str(trace)], env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout.strip()


def test_cold_kineto_analyze_loads_no_pandas(tmp_path: Path) -> None:
    trace = real_path("param/resnet_kineto.json.gz")
    assert _run(trace, tmp_path / "cache") == "0 [] True 3"


def test_cold_nsys_analyze_loads_no_pandas(tmp_path: Path) -> None:
    trace = next(iter(sorted(real_path("nsys-ai").rglob("*.sqlite"))), None)
    assert trace is not None
    assert _run(trace, tmp_path / "cache") == "0 [] True 3"


def test_pandas_is_refused_only_inside_the_block() -> None:
    from advisor.cli.nopandas import without_pandas

    code = (
        "from advisor.cli.nopandas import without_pandas\n"
        "try:\n"
        "    with without_pandas():\n"
        "        import pandas\n"
        "except ModuleNotFoundError as e: print('refused', e.name)\n"
        "import pandas; print('loaded', pandas.__name__)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split("\n")
    assert out[:2] == ["refused pandas", "loaded pandas"]
    with without_pandas(active=False):
        pass
