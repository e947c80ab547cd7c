#!/usr/bin/env bash
# Install everything the test suite needs on a fresh Debian/Ubuntu machine (root or sudo), idempotently:
# Debian's Nsight Systems (for .nsys-rep/.qdrep export tests) and the Python test extras.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v nsys >/dev/null 2>&1; then
  bash scripts/install-nsight-systems.sh
fi
# Debian's Chromium: the HTML report tests open reports in it headless (tests/e2e/test_report_html.py)
if ! command -v chromium >/dev/null 2>&1; then
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium
fi
# tmux: the TUI's end-to-end test runs `advisor tui` in a real terminal (tests/tui/test_tmux.py)
if ! command -v tmux >/dev/null 2>&1; then
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq tmux
fi
# advisor installs as `gpu-advisor` (PyPI's `advisor` is another project). A machine that installed this
# project under its old distribution name `advisor` keeps an editable finder pointing at that old checkout,
# which would shadow advisor.parsers/rules/reports of this one: remove it (only when it is this project).
if python3 -m pip show advisor 2>/dev/null | grep -q "^Summary: Tells GPU/AI engineers why their run is slow"; then
  python3 -m pip uninstall --quiet --yes advisor
fi
python3 -m pip install --quiet --disable-pip-version-check -e ".[test]"
